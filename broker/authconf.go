package broker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/warrenhq/warren/messages"
)

// The tenant token: under auth every batch id is "<tenant>.<name>", so the
// tenant is a subject token of its own in every subject and key naming a
// batch, and the server can match it:
//
//	warren.tasks.<pool>.<profile>.<tenant>.<name>  token 5
//	warren.events.<tenant>.<name>.<id>             token 3
//	warren.sbx.<pool>.<host>.<tenant>.<op>         token 5
//
// The fleet account exports each of these with account_token_position at
// the tenant token: a tenant account can only import its own. A tenant's
// streams and buckets (messages.Namespace: WARREN_RESULTS_<tenant>,
// warren_batches_<tenant>, ...) carry the tenant in their names, so what
// reaches them is exported to that tenant's account alone (named).

// tenantExport is one subject the fleet account exports to tenants.
type tenantExport struct {
	subject string // in the fleet account; "%s" is the tenant (a token, or in a name when named)
	local   bool   // imported under the same name (else under TenantAPIPrefix)
	stream  bool   // a stream (fleet → tenant), else a service (tenant → fleet)
	multi   bool   // service answers with many messages (a pull)
	noToken bool   // the same for every tenant: no tenant token
	named   bool   // the tenant is part of a stream or bucket name: exported to its account alone
}

const jsAPI = "$JS.API"

// tenantNS is a namespace whose names carry "%s" for the tenant.
var tenantNS = messages.Namespace{Tenant: "%s"}

// tenantExports is everything a submitter may do, as exports of the fleet
// account. Nothing else of the fleet account is reachable from a tenant.
var tenantExports = []tenantExport{
	// Publish tasks as itself (its task stream takes them).
	{subject: messages.SubjectTasksPrefix + ".*.*.%s.>", local: true},
	// Its manifests: read (direct get by key) and write (KV put).
	{subject: "$KV." + tenantNS.Batches() + ".>", named: true},
	{subject: jsAPI + ".DIRECT.GET.KV_" + tenantNS.Batches() + ".>", named: true},
	// Its large task inputs: put (chunks and metadata, published without
	// the API prefix), the lookup a put does first, and the purge of a
	// replaced object's chunks. Workers read them.
	{subject: "$O." + tenantNS.Inputs() + ".>", local: true, named: true},
	{subject: jsAPI + ".STREAM.INFO.OBJ_" + tenantNS.Inputs(), named: true},
	{subject: jsAPI + ".DIRECT.GET.OBJ_" + tenantNS.Inputs() + ".>", named: true},
	{subject: jsAPI + ".STREAM.PURGE.OBJ_" + tenantNS.Inputs(), named: true},
	// Its large outputs (stdout/stderr too large for a result, the files
	// Task.Outputs keeps): read as the object store reads, an ordered
	// push consumer on one object's chunks delivering to its inbox
	// (answered with flow control), and direct gets of the metadata.
	{subject: jsAPI + ".STREAM.INFO.OBJ_" + tenantNS.Outputs(), named: true},
	{subject: jsAPI + ".CONSUMER.CREATE.OBJ_" + tenantNS.Outputs() + ".>", named: true},
	{subject: jsAPI + ".CONSUMER.DELETE.OBJ_" + tenantNS.Outputs() + ".*", named: true},
	{subject: jsAPI + ".DIRECT.GET.OBJ_" + tenantNS.Outputs() + ".>", named: true},
	{subject: "$JS.FC.OBJ_" + tenantNS.Outputs() + ".>", local: true, named: true},
	// Cancel its batches.
	{subject: "$KV." + tenantNS.Cancel() + ".>", named: true},
	// Its results: last by subject, and ordered consumers on them.
	{subject: jsAPI + ".DIRECT.GET." + tenantNS.Results() + ".>", named: true},
	{subject: jsAPI + ".CONSUMER.CREATE." + tenantNS.Results() + ".>", named: true},
	{subject: jsAPI + ".CONSUMER.MSG.NEXT." + tenantNS.Results() + ".*", multi: true, named: true},
	// Opening a stream or bucket reads its info.
	{subject: jsAPI + ".STREAM.INFO." + tenantNS.Results(), named: true},
	{subject: jsAPI + ".STREAM.INFO.KV_" + tenantNS.Batches(), named: true},
	{subject: jsAPI + ".STREAM.INFO.KV_" + tenantNS.Cancel(), named: true},
	// How much of its task stream its quota leaves (the scheduler's
	// all-or-nothing check before publishing).
	{subject: jsAPI + ".STREAM.INFO." + tenantNS.Tasks(), named: true},
	// Its live events.
	{subject: messages.SubjectEventsPrefix + ".%s.>", local: true, stream: true},
	// The host registry, read by every tenant: a watcher (an ordered push
	// consumer delivering to the tenant's inbox, answered with flow
	// control) and direct gets.
	{subject: jsAPI + ".STREAM.INFO.KV_" + messages.BucketHosts, noToken: true},
	{subject: jsAPI + ".CONSUMER.CREATE.KV_" + messages.BucketHosts + ".>", noToken: true},
	{subject: jsAPI + ".CONSUMER.DELETE.KV_" + messages.BucketHosts + ".*", noToken: true},
	{subject: jsAPI + ".DIRECT.GET.KV_" + messages.BucketHosts + ".>", noToken: true},
	// ... and every entry in one batch get (the request body names them).
	{subject: jsAPI + ".DIRECT.GET.KV_" + messages.BucketHosts, noToken: true, multi: true},
	{subject: "$JS.FC.KV_" + messages.BucketHosts + ".>", local: true, noToken: true},
	// Its own quota, as the workers read it (direct get of its key).
	{subject: jsAPI + ".DIRECT.GET.KV_" + messages.BucketTenants + ".$KV." + messages.BucketTenants + ".%s"},
	{subject: jsAPI + ".STREAM.INFO.KV_" + messages.BucketTenants, noToken: true},
	// Its inbox, for what the fleet delivers to it (the watcher above,
	// sandbox exec output).
	{subject: TenantInboxRoot + ".%s.>", local: true, stream: true},
	// Its sandbox sessions: requests to a host's session subjects under
	// its own tenant token (the host checks each session's token against
	// that tenant too).
	{subject: messages.SubjectSandboxPrefix + ".*.*.%s.*", local: true},
}

// TenantInboxRoot is the root of a tenant's inbox prefix, TenantInboxRoot +
// "." + tenant: push deliveries made in the fleet account reach the tenant
// through a stream export of its own inbox subjects.
const TenantInboxRoot = messages.TenantInboxRoot

// TenantInbox is the inbox prefix of tenant's connections.
func TenantInbox(tenant string) string { return messages.TenantInbox(tenant) }

// tokenPosition is the 1-based position of the tenant token (0 for a
// named export: its tenant is inside a name).
func (e tenantExport) tokenPosition() int {
	if e.named {
		return 0
	}
	for i, tok := range strings.Split(e.subject, ".") {
		if tok == "%s" {
			return i + 1
		}
	}
	return 0
}

func (e tenantExport) fleetSubject(tenant string) string {
	if e.noToken {
		return e.subject
	}
	return fmt.Sprintf(e.subject, tenant)
}

// tenantSubject is the subject a tenant's client uses.
func (e tenantExport) tenantSubject(tenant string) string {
	s := e.fleetSubject(tenant)
	if e.local {
		return s
	}
	if rest, ok := strings.CutPrefix(s, jsAPI+"."); ok {
		return TenantAPIPrefix + "." + rest
	}
	// KV writes from a client with an API prefix go to <prefix>.$KV...
	return TenantAPIPrefix + "." + s
}

// workerPermissions is what a worker of pool may publish and subscribe to
// in the fleet account, for the fleet's namespace and each tenant's.
func workerPermissions(pool string, tenants []string) (pub, sub []string) {
	pub = []string{
		jsAPI + ".INFO",
		jsAPI + ".STREAM.INFO.*",
		messages.SubjectResultsPrefix + ".>",
		messages.SubjectEventsPrefix + ".>",
		messages.SubjectDLQPrefix + ".>",
		"_INBOX.>",
		// Events to a tenant's inbox (a task's reply), which reach it
		// through the export of its inbox subjects.
		TenantInboxRoot + ".>",
		// Its pool's registry entries (keys "<pool>.<host>").
		"$KV." + messages.BucketHosts + "." + pool + ".>",
		// Claims: create, refresh (publish with an expected sequence and a
		// TTL), purge, and read a task attempt's claim.
		"$KV." + messages.BucketClaims + ".>",
		jsAPI + ".DIRECT.GET.KV_" + messages.BucketClaims + ".>",
		jsAPI + ".STREAM.MSG.GET.KV_" + messages.BucketClaims,
		// The tenant registry: watched for quotas and new tenants.
		jsAPI + ".CONSUMER.CREATE.KV_" + messages.BucketTenants + ".>",
		jsAPI + ".CONSUMER.DELETE.KV_" + messages.BucketTenants + ".*",
		jsAPI + ".CONSUMER.INFO.KV_" + messages.BucketTenants + ".*",
		"$JS.FC.KV_" + messages.BucketTenants + ".>",
	}
	sub = []string{
		"_INBOX.>",
		// Its pool's sandbox session requests (answered through
		// allow_responses).
		messages.SubjectSandboxPrefix + "." + pool + ".>",
		// Its pool's tasks as they are published: an idle worker's
		// doorbell (worker/doorbell.go) for a profile without a pull.
		messages.SubjectTasksPrefix + "." + pool + ".>",
	}
	for _, ns := range append([]messages.Namespace{{}}, namespaces(tenants)...) {
		p, s := namespaceWorkerPermissions(pool, ns)
		pub, sub = append(pub, p...), append(sub, s...)
	}
	return pub, sub
}

func namespaces(tenants []string) []messages.Namespace {
	out := make([]messages.Namespace, len(tenants))
	for i, t := range tenants {
		out[i] = messages.Namespace{Tenant: t}
	}
	return out
}

// namespaceWorkerPermissions is what a worker of pool may do in one
// namespace: consume its pool's tasks, read results and dead tasks, watch
// cancels, use the verdict cache and the outputs store, read large inputs.
func namespaceWorkerPermissions(pool string, ns messages.Namespace) (pub, sub []string) {
	pub = []string{
		// Its pool's consumers only: the filter is in the create subject.
		jsAPI + ".CONSUMER.CREATE." + ns.Tasks() + ".*." + messages.SubjectTasksPrefix + "." + pool + ".>",
		jsAPI + ".CONSUMER.INFO." + ns.Tasks() + ".*",
		jsAPI + ".CONSUMER.MSG.NEXT." + ns.Tasks() + ".*",
		"$JS.ACK." + ns.Tasks() + ".>",
		// Whether a result is stored; a dead task's payload by sequence.
		jsAPI + ".DIRECT.GET." + ns.Results() + ".>",
		jsAPI + ".DIRECT.GET." + ns.Tasks(),
		jsAPI + ".STREAM.MSG.GET." + ns.Tasks(),
		// The cancel watcher: an ordered push consumer on the bucket.
		jsAPI + ".CONSUMER.CREATE.KV_" + ns.Cancel() + ".>",
		jsAPI + ".CONSUMER.DELETE.KV_" + ns.Cancel() + ".*",
		jsAPI + ".CONSUMER.INFO.KV_" + ns.Cancel() + ".*",
		"$JS.FC.KV_" + ns.Cancel() + ".>",
		// The verdict cache: read and write decided verdicts.
		"$KV." + ns.Verdicts() + ".>",
		jsAPI + ".DIRECT.GET.KV_" + ns.Verdicts() + ".>",
		jsAPI + ".STREAM.MSG.GET.KV_" + ns.Verdicts(),
		// Outputs too large for a result: chunks, metadata, the lookup a
		// put does first, and the purge of a replaced object's chunks.
		"$O." + ns.Outputs() + ".>",
		jsAPI + ".DIRECT.GET.OBJ_" + ns.Outputs() + ".>",
		jsAPI + ".STREAM.MSG.GET.OBJ_" + ns.Outputs(),
		jsAPI + ".STREAM.PURGE.OBJ_" + ns.Outputs(),
		// Large task inputs, read: an object's metadata, then its chunks
		// through an ordered push consumer (created, flow-controlled,
		// deleted).
		jsAPI + ".DIRECT.GET.OBJ_" + ns.Inputs() + ".>",
		jsAPI + ".STREAM.MSG.GET.OBJ_" + ns.Inputs(),
		jsAPI + ".CONSUMER.CREATE.OBJ_" + ns.Inputs(),
		jsAPI + ".CONSUMER.CREATE.OBJ_" + ns.Inputs() + ".>",
		jsAPI + ".CONSUMER.DELETE.OBJ_" + ns.Inputs() + ".*",
		"$JS.FC.OBJ_" + ns.Inputs() + ".>",
	}
	sub = []string{"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + ns.Tasks() + ".*"}
	return pub, sub
}

// ServerConfig renders the nats-server configuration st describes: a
// file a stock nats-server accepts (`nats-server -c server.conf`), and
// that `warren broker --auth-dir` loads with the server's own parser.
// Listen address and store directory come from the command line.
func ServerConfig(st AuthState) string {
	var b strings.Builder
	b.WriteString("# Generated by `warren auth` from auth.json. Do not edit: change it with\n")
	b.WriteString("# `warren auth add-submitter|revoke`; a broker started with --auth-dir reloads it.\n")
	b.WriteString("jetstream: enabled\n")
	b.WriteString("max_payload: 8MB\n")
	if st.TLS != nil {
		fmt.Fprintf(&b, "tls {\n  cert_file: %s\n  key_file: %s\n  timeout: 5\n}\n", strconv.Quote(st.TLS.Cert), strconv.Quote(st.TLS.Key))
	}
	b.WriteString("accounts {\n")
	fmt.Fprintf(&b, "  %s {\n    jetstream: enabled\n    users: [\n", FleetAccount)
	for _, p := range st.Principals {
		if p.Revoked() {
			continue
		}
		switch p.Role {
		case RoleAdmin:
			fmt.Fprintf(&b, "      { nkey: %s } # admin %q\n", strconv.Quote(p.PublicKey), p.Name)
		case RoleWorker:
			pub, sub := workerPermissions(p.Pool, st.tenants())
			fmt.Fprintf(&b, "      { nkey: %s, permissions: { publish: { allow: %s }, subscribe: { allow: %s }, allow_responses: true } } # worker %q, pool %q\n",
				strconv.Quote(p.PublicKey), confList(pub), confList(sub), p.Name, p.Pool)
		}
	}
	b.WriteString("    ]\n    exports: [\n")
	for _, e := range tenantExports {
		if e.named {
			for _, t := range st.tenants() {
				writeExport(&b, e, e.fleetSubject(t), fmt.Sprintf(", accounts: [%s]", strconv.Quote(t)))
			}
			continue
		}
		extra := ""
		if pos := e.tokenPosition(); pos > 0 && !e.noToken {
			extra = fmt.Sprintf(", account_token_position: %d", pos)
		}
		writeExport(&b, e, e.fleetSubject("*"), extra)
	}
	b.WriteString("    ]\n  }\n")
	for _, p := range st.Principals {
		if p.Role != RoleSubmitter || p.Revoked() {
			continue
		}
		writeTenantAccount(&b, p)
	}
	b.WriteString("}\n")
	return b.String()
}

func writeExport(b *strings.Builder, e tenantExport, subject, extra string) {
	kind := "service"
	if e.stream {
		kind = "stream"
	}
	fmt.Fprintf(b, "      { %s: %s%s", kind, strconv.Quote(subject), extra)
	if e.multi {
		b.WriteString(", response_type: stream")
	}
	b.WriteString(" }\n")
}

// tenants are the tenants of the active submitters, in order.
func (st AuthState) tenants() []string {
	var out []string
	for _, p := range st.Principals {
		if p.Role == RoleSubmitter && !p.Revoked() {
			out = append(out, p.Tenant())
		}
	}
	return out
}

func writeTenantAccount(b *strings.Builder, p Principal) {
	t := p.Tenant()
	var pub []string
	for _, e := range tenantExports {
		if !e.stream {
			pub = append(pub, e.tenantSubject(t))
		}
	}
	sub := []string{TenantInbox(t) + ".>", messages.SubjectEventsPrefix + "." + t + ".>"}
	fmt.Fprintf(b, "  %s {\n    users: [\n", strconv.Quote(t))
	fmt.Fprintf(b, "      { nkey: %s, permissions: { publish: { allow: %s }, subscribe: { allow: %s } } } # submitter %q\n",
		strconv.Quote(p.PublicKey), confList(pub), confList(sub), p.Name)
	b.WriteString("    ]\n    imports: [\n")
	for _, e := range tenantExports {
		kind := "service"
		if e.stream {
			kind = "stream"
		}
		fmt.Fprintf(b, "      { %s: { account: %s, subject: %s }", kind, FleetAccount, strconv.Quote(e.fleetSubject(t)))
		if !e.local {
			fmt.Fprintf(b, ", to: %s", strconv.Quote(e.tenantSubject(t)))
		}
		b.WriteString(" }\n")
	}
	b.WriteString("    ]\n  }\n")
}

func confList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
