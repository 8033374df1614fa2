package coqpolicy

import "strings"

// Policy configures the plugin for one compile.
type Policy struct {
	// RejectHostIO refuses host I/O commands (the profile's host_io:
	// reject).
	RejectHostIO bool
	// Plugins are the native plugins Declare ML Module may name.
	Plugins []string
	// Out is the record file, as the compile sees it: created by the
	// plugin (O_EXCL), so it must not exist.
	Out string
}

// Env is the plugin's configuration as environment variables for the
// compile.
func (p Policy) Env() map[string]string {
	env := map[string]string{"WARREN_COQ_POLICY_OUT": p.Out}
	if p.RejectHostIO {
		env["WARREN_COQ_POLICY_HOST_IO"] = "reject"
	}
	if len(p.Plugins) > 0 {
		env["WARREN_COQ_POLICY_PLUGINS"] = strings.Join(p.Plugins, ",")
	}
	return env
}
