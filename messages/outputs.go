package messages

import "fmt"

// BucketOutputs is the object store bucket holding a result's stdout or
// stderr when the result with that output inline would not fit the broker's
// max payload. The result then names the object in StdoutObject /
// StderrObject and leaves Stdout / Stderr empty.
const BucketOutputs = "warren_outputs"

// OutputObjectName names the object holding one output stream ("stdout" or
// "stderr") of one delivery of a task attempt. The TASKS sequence and the
// delivery make it unique to the run that produced it, so a run whose
// result was refused (another one was stored first) never overwrites the
// stored result's bytes.
func OutputObjectName(batch string, attempt int, id string, streamSeq uint64, delivery int, stream string) string {
	return fmt.Sprintf("%s.%d.%s.%d-%d.%s", batch, attempt, id, streamSeq, delivery, stream)
}
