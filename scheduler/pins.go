package scheduler

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/warrenhq/warren/messages"
)

// PinsFile is the name of the file in a client's data dir that holds the
// seal keys it pinned (PinFile).
const PinsFile = "pinned-pool-keys.json"

// KeyFingerprint is how a seal key is shown to a person: "SHA256:" and
// the unpadded base64 of the SHA-256 of the key's text, as ssh shows host
// keys. `warren keys show --fingerprint` prints the same for a key file.
func KeyFingerprint(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// PinSource says how a pin was made.
type PinSource string

const (
	// PinFirstUse: the key the pool's workers published the first time
	// this client sealed secrets for the pool.
	PinFirstUse PinSource = "first_use"
	// PinExplicit: given by the user (`warren keys pin`).
	PinExplicit PinSource = "explicit"
)

func (s PinSource) valid() bool { return s == PinFirstUse || s == PinExplicit }

// describe is the source in a sentence: "pinned on first use".
func (s PinSource) describe() string {
	if s == PinExplicit {
		return "pinned explicitly"
	}
	return "pinned on first use"
}

// Pin is one pool's pinned seal key on one broker.
type Pin struct {
	Key      string    `json:"key"`
	Source   PinSource `json:"source"`
	PinnedAt time.Time `json:"pinned_at"`
}

// PinStore keeps the seal keys a client trusts, per pool.
type PinStore interface {
	// Pinned returns pool's pin; ok is false when it has none.
	Pinned(pool string) (pin Pin, ok bool, err error)
	// PinFirst pins key for pool on first use unless the pool has a pin
	// already, and returns the pin in force; created says it is new.
	PinFirst(pool, key string) (pin Pin, created bool, err error)
}

// PinFile is a PinStore in a JSON file (a client's DATA_DIR/PinsFile),
// holding pins per broker: the same pool name on two brokers is two
// pools. Changes are made under an exclusive lock on Path+".lock" and
// written atomically, so concurrent clients never lose a pin.
type PinFile struct {
	Path string
	// Broker is whose pools this store pins: the URL the client dialed.
	Broker string
}

// pinsDoc is the file's content: broker URL -> pool -> pin.
type pinsDoc struct {
	V       int                       `json:"v"`
	Brokers map[string]map[string]Pin `json:"brokers"`
}

// Pinned returns pool's pin on f.Broker.
func (f PinFile) Pinned(pool string) (Pin, bool, error) {
	doc, err := f.read()
	if err != nil {
		return Pin{}, false, err
	}
	pin, ok := doc.Brokers[f.Broker][pool]
	return pin, ok, nil
}

// PinFirst pins key for pool on first use unless a pin exists.
func (f PinFile) PinFirst(pool, key string) (Pin, bool, error) {
	var out Pin
	created := false
	err := f.update(func(doc *pinsDoc) bool {
		if pin, ok := doc.Brokers[f.Broker][pool]; ok {
			out = pin
			return false
		}
		out, created = Pin{Key: key, Source: PinFirstUse, PinnedAt: time.Now().UTC()}, true
		doc.set(f.Broker, pool, out)
		return true
	})
	return out, created, err
}

// Set pins key for pool explicitly, replacing any pin; it returns the
// pin replaced, if any.
func (f PinFile) Set(pool, key string) (old Pin, had bool, err error) {
	if !messages.ValidName(pool) {
		return Pin{}, false, fmt.Errorf("pool %q: want 1-64 characters of a-z 0-9 -", pool)
	}
	if !nkeys.IsValidPublicCurveKey(key) {
		return Pin{}, false, fmt.Errorf("%q is not a public curve key (X...); warren keys show prints one", key)
	}
	err = f.update(func(doc *pinsDoc) bool {
		old, had = doc.Brokers[f.Broker][pool]
		doc.set(f.Broker, pool, Pin{Key: key, Source: PinExplicit, PinnedAt: time.Now().UTC()})
		return true
	})
	return old, had, err
}

func (d *pinsDoc) set(broker, pool string, pin Pin) {
	if d.Brokers == nil {
		d.Brokers = map[string]map[string]Pin{}
	}
	if d.Brokers[broker] == nil {
		d.Brokers[broker] = map[string]Pin{}
	}
	d.Brokers[broker][pool] = pin
}

// update runs change on the file's content under the lock and writes the
// result when change says it changed it.
func (f PinFile) update(change func(*pinsDoc) bool) error {
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return fmt.Errorf("pinned keys: %w", err)
	}
	lock, err := os.OpenFile(f.Path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("pinned keys: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("pinned keys: lock %s: %w", lock.Name(), err)
	}
	doc, err := f.read()
	if err != nil || !change(doc) {
		return err
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	tmp := f.Path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("pinned keys: %w", err)
	}
	if err := os.Rename(tmp, f.Path); err != nil {
		return errors.Join(fmt.Errorf("pinned keys: %w", err), os.Remove(tmp))
	}
	return nil
}

// read loads and checks the file; a missing file holds no pins.
func (f PinFile) read() (*pinsDoc, error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return &pinsDoc{V: 1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pinned keys: %w", err)
	}
	doc := &pinsDoc{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(doc); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	if err := doc.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w (fix or remove the entry; `warren keys pin` writes a good one)", f.Path, err)
	}
	return doc, nil
}

// validate names the first bad field by its full path.
func (d *pinsDoc) validate() error {
	if d.V != 1 {
		return fmt.Errorf("v: %d is not 1 (written by another version of warren?)", d.V)
	}
	for broker, pools := range d.Brokers {
		for pool, pin := range pools {
			path := fmt.Sprintf("brokers[%q][%q]", broker, pool)
			switch {
			case !messages.ValidName(pool):
				return fmt.Errorf("%s: pool name: want 1-64 characters of a-z 0-9 -", path)
			case !nkeys.IsValidPublicCurveKey(pin.Key):
				return fmt.Errorf("%s.key: %q is not a public curve key (X...)", path, pin.Key)
			case !pin.Source.valid():
				return fmt.Errorf("%s.source: %q is not %s or %s", path, pin.Source, PinFirstUse, PinExplicit)
			}
		}
	}
	return nil
}
