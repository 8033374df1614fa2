package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// CollectOptions select the results to read.
type CollectOptions struct {
	Batch string
	// Attempt to read. Defaults to the latest attempt in the batch's
	// manifest; without a manifest, to the attempt of the batch's last
	// stored result (or task).
	Attempt int
	// NoWait returns once the results stored now are read, instead of
	// waiting until every task of the attempt has one.
	NoWait bool
	// OnResult is called once per task id, in the order results were
	// stored. An error from it stops the collection and is returned.
	OnResult func(*messages.Result) error
	// Progress, when set, is told about every result.
	Progress *Progress
}

// CollectReport summarises a collection.
type CollectReport struct {
	Batch   string
	Attempt int
	Total   int // tasks in the attempt; -1 when unknown (no manifest)
	// NoManifest: the batch has no manifest (it was published with the raw
	// protocol, or its manifest expired): the results stored now were
	// read and the total is unknown.
	NoManifest bool
	Received   int // distinct task ids with a result
	Counts     map[messages.Status]int
	// Foreign lists stored results that were not counted: for an id that is
	// not in the attempt's manifest, or stored under another task's
	// subject. Something other than this batch's workers wrote them (a
	// misdirected or hostile publisher). At most maxForeign are listed;
	// ForeignMore counts the rest.
	Foreign     []ForeignResult
	ForeignMore int
}

// ForeignResult is a stored result a collection refused to count.
type ForeignResult struct {
	Subject string
	TaskID  string // as the result names it
	Reason  string
}

// maxForeign caps CollectReport.Foreign.
const maxForeign = 100

// Complete reports whether every task of the attempt has a result.
func (r *CollectReport) Complete() bool { return r.Total >= 0 && r.Received >= r.Total }

// Collect reads the results of one batch attempt from WARREN_RESULTS
// through an ordered consumer, from the first one stored, so a collector
// that crashed and starts again gets every result. Results are deduplicated
// by task id, and only a result for an id in the attempt's manifest counts:
// anything else is listed in CollectReport.Foreign and logged. Without
// NoWait it returns when the manifest's total is reached (or with ctx's
// error, or ErrBrokerUnavailable once the connection has been down for
// Config.RetryFor, along with the report so far). A batch without a
// manifest but with tasks or results in the streams (published with the
// raw protocol) is read as with NoWait, with NoManifest set and Total -1;
// one with neither is an error matching ErrUnknownBatch.
func (c *Client) Collect(ctx context.Context, o CollectOptions) (*CollectReport, error) {
	if err := checkBatchID(o.Batch); err != nil {
		return nil, fmt.Errorf("scheduler: batch: %w", err)
	}
	rep := &CollectReport{Batch: o.Batch, Attempt: o.Attempt, Total: -1, Counts: map[messages.Status]int{}}
	ctx, stop := c.awaitBroker(ctx, "results of "+o.Batch)
	defer stop()
	m, err := c.Manifest(ctx, o.Batch)
	var want map[string]bool // nil: no id list to check against
	switch {
	case errors.Is(err, ErrUnknownBatch):
		latest, lerr := c.latestStoredAttempt(ctx, o.Batch)
		if lerr != nil {
			return rep, lerr
		}
		if latest == 0 {
			return rep, fmt.Errorf("%w %q: no manifest, and no task or result of it in %s or %s", ErrUnknownBatch, o.Batch, messages.NamespaceOf(o.Batch).Tasks(), messages.NamespaceOf(o.Batch).Results())
		}
		if rep.Attempt == 0 {
			rep.Attempt = latest
		}
		rep.NoManifest, o.NoWait = true, true
	case err != nil:
		return rep, err
	default:
		if rep.Attempt == 0 {
			rep.Attempt = m.LatestAttempt()
		}
		a, ok := m.Attempt(rep.Attempt)
		if !ok && !o.NoWait {
			return rep, fmt.Errorf("%w: batch %q has no attempt %d (latest is %d)", ErrUnknownBatch, o.Batch, rep.Attempt, m.LatestAttempt())
		}
		if ok {
			rep.Total = a.Total
			if want, err = c.wantIDs(ctx, o.Batch, rep.Attempt, a); err != nil {
				return rep, err
			}
		}
	}
	if o.Progress != nil {
		o.Progress.SetTotal(rep.Total)
	}
	filter := messages.BatchResultFilter(o.Batch, rep.Attempt)
	var last uint64
	if o.NoWait {
		if last, err = c.lastSeq(ctx, messages.NamespaceOf(o.Batch).Results(), filter); err != nil || last == 0 {
			return rep, err
		}
	}
	rr := &resultReader{c: c, stream: messages.NamespaceOf(o.Batch).Results(), filter: filter}
	defer rr.stop()
	seen := map[string]bool{}
	for o.NoWait || !rep.Complete() {
		msg, err := rr.next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return rep, context.Cause(ctx) // the broker away past RetryFor, or ctx's end
			}
			return rep, fmt.Errorf("scheduler: read results of %s: %w", o.Batch, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return rep, err
		}
		if err := c.takeResult(ctx, msg, want, seen, rep, o); err != nil {
			return rep, err
		}
		if o.NoWait && (md.Sequence.Stream >= last || md.NumPending == 0) {
			break
		}
	}
	return rep, nil
}

// wantIDs is the set of attempt a's task ids, which alone a collection
// counts; nil, with a warning, when the manifest has none to check
// against (written by an older scheduler, or its id chunks gone).
func (c *Client) wantIDs(ctx context.Context, batch string, attempt int, a messages.AttemptManifest) (map[string]bool, error) {
	ids, err := c.attemptIDs(ctx, batch, a)
	switch {
	case errors.Is(err, errIDsGone):
		c.log.Warn().Err(err).Str("batch", batch).Int("attempt", attempt).Msg("the manifest's task ids are gone (expired): results are counted without checking their ids")
		return nil, nil
	case err != nil:
		return nil, err
	case ids == nil:
		c.log.Warn().Str("batch", batch).Int("attempt", attempt).Msg("the manifest lists no task ids (written by an older scheduler): results are counted without checking their ids")
	}
	return idSet(ids), nil
}

func idSet(ids []string) map[string]bool {
	if len(ids) == 0 {
		return nil
	}
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// takeResult decodes one stored result and hands it on unless its task
// already had one, or it is not a result of one of the attempt's tasks
// (want; nil accepts any id).
func (c *Client) takeResult(ctx context.Context, msg jetstream.Msg, want, seen map[string]bool, rep *CollectReport, o CollectOptions) error {
	r, err := messages.DecodeResult(msg.Data())
	switch {
	case err != nil:
		// A foreign or newer document: say so, but do not stop the batch.
		c.foreign(rep, msg.Subject(), "", "does not decode: "+err.Error())
		return nil
	case msg.Subject() != messages.ResultSubject(r.Batch, r.Attempt, r.TaskID) || r.Batch != rep.Batch:
		// Not the result its subject names: a misbehaving writer. Counting
		// it could end the wait before the real result arrives.
		c.foreign(rep, msg.Subject(), r.TaskID, "stored under another task's subject")
		return nil
	case want != nil && !want[r.TaskID]:
		// Counting it would end the wait with a real task's result missing.
		c.foreign(rep, msg.Subject(), r.TaskID, "not a task of this attempt (not in its manifest)")
		return nil
	}
	if seen[r.TaskID] {
		return nil
	}
	seen[r.TaskID] = true
	rep.Received++
	rep.Counts[r.Status]++
	if o.Progress != nil {
		o.Progress.AddResult(r)
	}
	if err := c.loadOutputs(ctx, r); err != nil {
		return err
	}
	if o.OnResult != nil {
		return o.OnResult(r)
	}
	return nil
}

// loadOutputs puts back into r the stdout/stderr a worker stored in the
// outputs object store of its batch's namespace (too large for the result
// message), so a collected result holds the bytes its events carried. A
// tenant reads its own store (its account is granted that one alone).
func (c *Client) loadOutputs(ctx context.Context, r *messages.Result) error {
	if r.StdoutObject == "" && r.StderrObject == "" {
		return nil
	}
	_, err := retry(ctx, c, "read large output", func() (struct{}, error) { return struct{}{}, broker.LoadOutputs(ctx, c.js, r) })
	return err
}

// foreign reports a stored result that is not counted.
func (c *Client) foreign(rep *CollectReport, subject, id, reason string) {
	c.log.Warn().Str("subject", subject).Str("id", id).Str("reason", reason).Msg("skipping a stored result")
	if len(rep.Foreign) < maxForeign {
		rep.Foreign = append(rep.Foreign, ForeignResult{Subject: subject, TaskID: id, Reason: reason})
	} else {
		rep.ForeignMore++
	}
}

// latestStoredAttempt is the attempt of the batch's last stored result, or
// else of its last stored task; 0 when the streams hold neither.
func (c *Client) latestStoredAttempt(ctx context.Context, batch string) (int, error) {
	ns := messages.NamespaceOf(batch)
	for _, q := range []struct{ stream, filter string }{
		{ns.Results(), messages.BatchResultFilter(batch, 0)},
		{ns.Tasks(), messages.BatchTaskFilter(batch)},
	} {
		if q.stream == ns.Tasks() && c.cfg.Tenant != "" {
			break // a tenant's account cannot read the fleet's queue
		}
		m, err := c.lastMsg(ctx, q.stream, q.filter)
		if err != nil || m == nil {
			if err != nil {
				return 0, err
			}
			continue
		}
		if q.stream == ns.Tasks() {
			if a, err := strconv.Atoi(m.Header.Get(messages.HeaderAttempt)); err == nil && a > 0 {
				return a, nil
			}
			return 1, nil
		}
		// warren.results.<batch>.<attempt>.<id>, the batch one or two
		// tokens: the attempt is the last but one.
		parts := strings.Split(m.Subject, ".")
		if len(parts) >= 5 {
			if a, err := strconv.Atoi(parts[len(parts)-2]); err == nil && a > 0 {
				return a, nil
			}
		}
		return 1, nil
	}
	return 0, nil
}
