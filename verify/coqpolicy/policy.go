package coqpolicy

import (
	"strconv"
	"strings"
)

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
	// HeaderLines is how many lines of the compiled file are the task's
	// header (0: none).
	HeaderLines int
}

// Env is the plugin's configuration as environment variables for the
// compile.
func (p Policy) Env() map[string]string {
	env := map[string]string{"WARREN_COQ_POLICY_OUT": p.Out}
	if p.RejectHostIO {
		env["WARREN_COQ_POLICY_HOST_IO"] = "reject"
	}
	if p.HeaderLines > 0 {
		env["WARREN_COQ_POLICY_HEADER_LINES"] = strconv.Itoa(p.HeaderLines)
	}
	if len(p.Plugins) > 0 {
		env["WARREN_COQ_POLICY_PLUGINS"] = strings.Join(p.Plugins, ",")
	}
	return env
}
