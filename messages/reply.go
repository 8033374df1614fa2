package messages

import "strings"

// DefaultInboxPrefixes are the inbox prefixes a task's reply may use when
// nothing else is configured: the NATS client default.
var DefaultInboxPrefixes = []string{"_INBOX."}

// warrenReserved are Warren's namespaces other than live events. With every
// subject starting "$" (NATS's own: $JS, $KV, $O, $SYS, ...) they are where
// no task event may ever be published.
var warrenReserved = []string{SubjectTasksPrefix, SubjectResultsPrefix, SubjectDLQPrefix}

// ReservedSubject reports whether s lies in a namespace that NATS or Warren
// owns for something other than live events: a worker never publishes a
// task's events there, whatever the task says.
func ReservedSubject(s string) bool {
	if strings.HasPrefix(s, "$") {
		return true
	}
	for _, p := range warrenReserved {
		if s == p || strings.HasPrefix(s, p+".") {
			return true
		}
	}
	return false
}

// CheckReply enforces the reply rule: a task's events go only to a subject
// under its own batch's events, warren.events.<batch>.<...>, or under one of
// inboxPrefixes (the submitter's inbox). Any other reply is refused with
// CodeReplyForbidden on field "reply". An empty reply (the default event
// subject) always passes. Call it on a task that passed Validate.
func CheckReply(t *Task, inboxPrefixes []string) error {
	r := t.Reply
	if r == "" {
		return nil
	}
	own := EventSubject(t.Batch, "")
	if strings.HasPrefix(r, own) && len(r) > len(own) && replyPattern.MatchString(r) {
		return nil
	}
	if ReservedSubject(r) || strings.HasPrefix(r, SubjectEventsPrefix+".") {
		return fieldErr(CodeReplyForbidden, "reply", "%q is not this task's to publish to: events go to %s<name> or an inbox (%s); leave reply empty for the default %s",
			r, own, strings.Join(inboxPrefixes, ", "), EventSubject(t.Batch, t.ID))
	}
	for _, p := range inboxPrefixes {
		if strings.HasPrefix(r, p) && len(r) > len(p) && replyPattern.MatchString(r) {
			return nil
		}
	}
	return fieldErr(CodeReplyForbidden, "reply", "%q is neither under this task's events (%s<name>) nor under an inbox prefix (%s); leave reply empty for the default %s",
		r, own, strings.Join(inboxPrefixes, ", "), EventSubject(t.Batch, t.ID))
}

// CheckInboxPrefix checks a configured inbox prefix: a subject prefix
// ending in ".", without wildcards, that neither lies in nor contains a
// reserved namespace or Warren's events (a prefix "warren." would let any
// task write to every batch's events and to results).
func CheckInboxPrefix(p string) error {
	if !strings.HasSuffix(p, ".") || len(p) > 128 || !replyPattern.MatchString(strings.TrimSuffix(p, ".")) {
		return fieldErr(CodeInvalidField, "inbox_prefix", "%q must be subject tokens without wildcards ending in \".\", e.g. _INBOX. or _INBOX_team.", p)
	}
	for _, r := range append([]string{"$", SubjectEventsPrefix}, warrenReserved...) {
		if strings.HasPrefix(p, r) || strings.HasPrefix(r+".", p) {
			return fieldErr(CodeReplyForbidden, "inbox_prefix", "%q overlaps %s, which tasks may not publish to; use _INBOX. or a prefix of your own", p, r)
		}
	}
	return nil
}
