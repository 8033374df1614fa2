package sandbox

import "github.com/warrenhq/warren/sandbox/initproc"

// The host paths a sandbox may see, per mode: one table each, a column
// per isolated mode. The namespace mode binds its entries into the view
// (missing ones are skipped); the Landlock mode grants read access to its
// entries on the host (missing ones are skipped). The namespace mode's
// Landlock layer lists the Landlock column, of which only the namespace
// column exists inside the view.

// hostPath is one row of an allow-list: a host path and the modes that
// allow it.
type hostPath struct {
	path                string
	namespace, landlock bool
}

// hostEtc is the /etc allow-list: what a dynamic program (both modes),
// the resolver and TLS (Landlock mode, which may have a network), and a
// Debian userland's everyday programs (service and protocol names, the
// system's name and version) need. The rest of /etc (shadow, ssh keys,
// sudoers, machine-id, worker config) stays out of reach whatever the
// uid. The namespace column is in the order the view binds.
var hostEtc = []hostPath{
	{"/etc/ld.so.cache", true, true},
	{"/etc/ld.so.conf", true, true},
	{"/etc/nsswitch.conf", true, true},
	{"/etc/passwd", true, true},
	{"/etc/group", true, true},
	{"/etc/localtime", true, true},
	{"/etc/hosts", true, true},
	{"/etc/ld.so.conf.d", false, true},
	{"/etc/host.conf", true, true},
	{"/etc/resolv.conf", false, true},
	{"/etc/gai.conf", true, true},
	{"/etc/timezone", false, true},
	{"/etc/protocols", true, true},
	{"/etc/services", true, true},
	{"/etc/mime.types", true, true},
	{"/etc/os-release", true, true},
	{"/etc/ssl", false, true},
	{"/etc/ca-certificates", false, true},
	{"/etc/debian_version", true, true},
	{"/etc/alternatives", true, true}, // Debian's links to the chosen implementation (liblapack.so.3, java, editors)
}

// hostSystemDirs may be read and executed. The namespace view binds /usr
// whatever it is and mirrors the others (a merged-/usr link as the same
// link); Landlock rules on links resolve to /usr.
var hostSystemDirs = []hostPath{
	{"/usr", true, true},
	{"/bin", true, true},
	{"/lib", true, true},
	{"/lib64", true, true},
	{"/sbin", true, true},
	{"/lib32", false, true},
	{"/libx32", false, true},
}

// etcAllowList is the /etc allow-list of mode iso.
func etcAllowList(iso Isolation) []string { return column(hostEtc, iso) }

// systemDirs are the system directories of mode iso.
func systemDirs(iso Isolation) []string { return column(hostSystemDirs, iso) }

func column(rows []hostPath, iso Isolation) []string {
	var out []string
	for _, r := range rows {
		if (iso == IsolationNamespace && r.namespace) || (iso == IsolationLandlock && r.landlock) {
			out = append(out, r.path)
		}
	}
	return out
}

// sandboxDevices are the only device nodes a sandbox gets, in every
// isolated mode: bound from the host /dev into the namespace view, and
// the only devices the Landlock policy allows. One list, the init's.
var sandboxDevices = initproc.ViewDevices
