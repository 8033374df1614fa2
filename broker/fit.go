package broker

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// DefaultReservation is what the fleet's streams and buckets reserve of a
// server's JetStream storage with DefaultMaxBytes, per replica.
func DefaultReservation() int64 {
	var n int64
	for _, b := range DefaultMaxBytes {
		n += b
	}
	return n
}

// fitShare is the part of a server's JetStream storage the fleet's own
// streams may reserve when they are sized to it: the rest is left for
// tenants' namespaces and headroom.
const fitShare = 2

// fitFloor is the smallest limit a scaled stream or bucket gets (a task
// stream must hold at least a few maximal tasks).
const fitFloor = 16 << 20

// Fit is the fleet's byte limits sized to a server with store bytes of
// JetStream storage (its max_file_store; nats-server defaults it to 75% of
// the free disk of its store directory).
type Fit struct {
	// MaxBytes are the limits to create the streams and buckets with: nil
	// when the defaults fit (Scaled false).
	MaxBytes map[string]int64
	// Scaled says the defaults did not fit in half of Store and were
	// scaled down to.
	Scaled bool
	// Store is the server's JetStream storage; Reserved what the fleet
	// reserves of it (with the defaults or scaled).
	Store, Reserved int64
}

// MinStorage is the smallest JetStream storage the fleet's streams and
// buckets fit in: each at its floor (16 MiB, or its default when smaller).
func MinStorage() int64 {
	var n int64
	for _, b := range DefaultMaxBytes {
		n += min(b, fitFloor)
	}
	return n
}

// TooSmall says why the fleet's streams and buckets cannot be created in
// the store at all (even at their floors), or "" when they can.
func (f Fit) TooSmall() string {
	if f.Store <= 0 || f.Reserved <= f.Store {
		return ""
	}
	return fmt.Sprintf("the broker's JetStream storage is %s, and Warren's streams and buckets need at least %s (each at its smallest); "+
		"nats-server takes 75%% of the store's free disk, so give the data dir at least %s of free disk (or another --data-dir on a larger filesystem)",
		approxSize(f.Store), approxSize(MinStorage()), approxSize(MinStorage()*4/3+1<<20))
}

// FitStorage sizes the fleet's streams and buckets to store: the defaults
// when they take at most half of it, else every default scaled by the
// same factor (at least 16 MiB each, or its default when smaller). A
// store of 0 or less (unknown, unlimited) keeps the defaults.
func FitStorage(store int64) Fit {
	total := DefaultReservation()
	f := Fit{Store: store, Reserved: total}
	if store <= 0 || total <= store/fitShare {
		return f
	}
	f.MaxBytes, f.Scaled, f.Reserved = map[string]int64{}, true, 0
	// Limits that the factor would take below their floor are fixed at
	// it; the others share what is left by one factor.
	budget, rest := store/fitShare, total
	for _, b := range DefaultMaxBytes {
		if floor := min(b, fitFloor); float64(b)*float64(budget)/float64(total) < float64(floor) {
			budget, rest = budget-floor, rest-b
		}
	}
	for name, b := range DefaultMaxBytes {
		n := min(b, fitFloor)
		if scaled := int64(float64(b)*float64(max(budget, 0))/float64(max(rest, 1))) &^ (1<<20 - 1); scaled > n {
			n = scaled
		}
		f.MaxBytes[name] = n
		f.Reserved += n
	}
	return f
}

// String says what was fitted, for a log line and `warren doctor`.
func (f Fit) String() string {
	if !f.Scaled {
		return fmt.Sprintf("streams reserve %s of %s JetStream storage", approxSize(f.Reserved), sizeOrUnknown(f.Store))
	}
	names := make([]string, 0, len(f.MaxBytes))
	for n := range f.MaxBytes {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " " + approxSize(f.MaxBytes[n])
	}
	return fmt.Sprintf("the defaults (%s) do not fit in half of %s JetStream storage: scaled to %s (%s); give the data dir more disk, or set limits with `warren setup --max-bytes`",
		approxSize(DefaultReservation()), approxSize(f.Store), approxSize(f.Reserved), strings.Join(parts, ", "))
}

func sizeOrUnknown(n int64) string {
	if n <= 0 {
		return "unlimited"
	}
	return approxSize(n)
}

// approxSize prints n bytes to one decimal of its unit ("14.4 GiB").
func approxSize(n int64) string {
	for i, unit := range []string{"TiB", "GiB", "MiB", "KiB"} {
		if m := int64(1) << (10 * (4 - i)); n >= m {
			return strconv.FormatFloat(float64(n)/float64(m), 'f', 1, 64) + " " + unit
		}
	}
	return strconv.FormatInt(n, 10) + " B"
}
