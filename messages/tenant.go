package messages

import (
	"strings"
	"unicode/utf8"
)

// A batch id is a name ("b-1f3a...") or, for a tenant on an authenticated
// broker, "<tenant>.<name>". The tenant is then a subject token of its own
// in every subject and key naming the batch (warren.tasks.<pool>.<profile>.
// <tenant>.<name>, warren.results.<tenant>.<name>.<attempt>.<id>,
// warren.events.<tenant>.<name>.<id>, $KV.warren_cancel.<tenant>.<name>...),
// which is what lets the server refuse a tenant's act on another's batch.
// Both parts are IDs (A-Z a-z 0-9 _ -).

// ValidBatchID reports whether s may be a batch id.
func ValidBatchID(s string) bool {
	tenant, name, qualified := strings.Cut(s, ".")
	if !qualified {
		return ValidID(s)
	}
	return len(s) <= MaxIDBytes && ValidID(tenant) && ValidID(name)
}

// BatchTenant is the tenant a batch id names, "" for an unqualified one.
func BatchTenant(batch string) string {
	tenant, _, ok := strings.Cut(batch, ".")
	if !ok {
		return ""
	}
	return tenant
}

// QualifyBatch names batch as tenant's: "<tenant>.<batch>", unchanged when
// tenant is empty or the batch already belongs to it.
func QualifyBatch(tenant, batch string) string {
	if tenant == "" || BatchTenant(batch) == tenant {
		return batch
	}
	return tenant + "." + batch
}

func checkBatchID(field, v string) error {
	if v == "" {
		return fieldErr(CodeMissingField, field, "required")
	}
	if !ValidBatchID(v) {
		if !utf8.ValidString(v) {
			return fieldErr(CodeInvalidUTF8, field, "not UTF-8")
		}
		return fieldErr(CodeInvalidField, field, "%q must be a name of 1-%d characters of A-Z a-z 0-9 _ -, or <tenant>.<name>", v, MaxIDBytes)
	}
	return nil
}

// ValidName reports whether s may be a pool or profile name.
func ValidName(s string) bool { return namePattern.MatchString(s) }
