package messages

import "strings"

// A namespace is the set of streams and buckets holding a batch's
// tenant-written and task-derived data: the fleet's own (batches of one
// token, no tenant) or one tenant's ("<tenant>.<name>" batches). Each
// tenant's are separate streams and buckets with their own limits (its
// quota), so no tenant can fill what another uses: a full namespace
// refuses its own tenant alone. The host registry, the claims and the
// tenant registry stay shared (written by workers and the admin only).
//
//	what       fleet             tenant T                    subjects of T's
//	tasks      WARREN_TASKS      WARREN_TASKS_T              warren.tasks.*.*.T.*
//	results    WARREN_RESULTS    WARREN_RESULTS_T            warren.results.T.*.*.*
//	dead       WARREN_DLQ        WARREN_DLQ_T                warren.dlq.*.T.*.*.*
//	manifests  warren_batches    warren_batches_T            $KV.warren_batches_T.>
//	cancels    warren_cancel     warren_cancel_T             $KV.warren_cancel_T.>
//	outputs    warren_outputs    warren_outputs_T            $O.warren_outputs_T.>
//	inputs     warren_inputs     warren_inputs_T             $O.warren_inputs_T.>
//	verdicts   warren_verdicts   warren_verdicts_T           $KV.warren_verdicts_T.>
//
// The fleet's streams take only subjects whose batch is one token and a
// tenant's only those whose batch is two, so no subject is in two
// streams (a fleet batch may be named like a tenant).
type Namespace struct {
	// Tenant is "" for the fleet's namespace.
	Tenant string
}

// NamespaceOf is the namespace holding batch.
func NamespaceOf(batch string) Namespace { return Namespace{Tenant: BatchTenant(batch)} }

func (n Namespace) name(base string) string {
	if n.Tenant == "" {
		return base
	}
	return base + "_" + n.Tenant
}

// Tasks is the namespace's task stream.
func (n Namespace) Tasks() string { return n.name(StreamTasks) }

// Results is the namespace's result stream.
func (n Namespace) Results() string { return n.name(StreamResults) }

// DLQ is the namespace's dead-letter stream.
func (n Namespace) DLQ() string { return n.name(StreamDLQ) }

// Batches is the namespace's manifest bucket.
func (n Namespace) Batches() string { return n.name(BucketBatches) }

// Cancel is the namespace's cancel bucket.
func (n Namespace) Cancel() string { return n.name(BucketCancel) }

// Outputs is the namespace's object store of large outputs.
func (n Namespace) Outputs() string { return n.name(BucketOutputs) }

// Inputs is the namespace's object store of large task inputs.
func (n Namespace) Inputs() string { return n.name(BucketInputs) }

// Verdicts is the namespace's verdict cache bucket.
func (n Namespace) Verdicts() string { return n.name(BucketVerdicts) }

// TaskSubjects are the subjects of the namespace's task stream:
// warren.tasks.<pool>.<profile>.<batch>, the batch one token for the
// fleet, "<tenant>.<name>" for a tenant.
func (n Namespace) TaskSubjects() []string {
	if n.Tenant == "" {
		return []string{SubjectTasksPrefix + ".*.*.*"}
	}
	return []string{SubjectTasksPrefix + ".*.*." + n.Tenant + ".*"}
}

// ResultSubjects are the subjects of the namespace's result stream.
func (n Namespace) ResultSubjects() []string {
	if n.Tenant == "" {
		return []string{SubjectResultsPrefix + ".*.*.*"}
	}
	return []string{SubjectResultsPrefix + "." + n.Tenant + ".*.*.*"}
}

// DLQSubjects are the subjects of the namespace's dead-letter stream.
func (n Namespace) DLQSubjects() []string {
	if n.Tenant == "" {
		return []string{SubjectDLQPrefix + ".*.*.*.*"}
	}
	return []string{SubjectDLQPrefix + ".*." + n.Tenant + ".*.*.*"}
}

// ResultNamespace is the namespace whose result stream holds subject,
// warren.results.<batch>.<attempt>.<id> (the batch one token, or a
// tenant's two).
func ResultNamespace(subject string) Namespace {
	if toks := strings.Split(subject, "."); len(toks) == 6 {
		return Namespace{Tenant: toks[2]}
	}
	return Namespace{}
}
