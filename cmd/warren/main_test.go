package main

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// e2eMainEnv makes the test binary behave as the warren binary, so end-to-
// end tests run real `warren` processes (and can kill them).
const e2eMainEnv = "WARREN_E2E_MAIN"

func TestMain(m *testing.M) {
	sandbox.MaybeInit()
	if os.Getenv(e2eMainEnv) == "1" {
		main()
	}
	clearUserConfig()
	removeAgent := agentForWorkers()
	code := m.Run()
	removeAgent()
	os.Exit(code)
}

// agentForWorkers gives the `warren worker` processes of the tests the
// session agent (through WARREN_SESSION_AGENT, which they inherit), as
// `make build` puts it next to warren: sandboxtest.AgentEnv's, else built
// once. It returns what removes it.
func agentForWorkers() func() {
	if os.Getenv("WARREN_SESSION_AGENT") != "" {
		return func() {}
	}
	bin, remove, err := sandboxtest.AgentForMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cmd/warren tests: the session agent:", err)
		os.Exit(1)
	}
	_ = os.Setenv("WARREN_SESSION_AGENT", bin)
	return remove
}

// clearUserConfig unsets the environment variables the CLI reads as flag
// defaults ($WARREN_DATA_DIR, $WARREN_NATS_URL, ... : every env tag of the
// cli): the tests' warren processes inherit the test's environment, and a
// developer's own configuration must not point them at another broker or
// data directory (a shell with WARREN_DATA_DIR set made the doctor tests
// read that directory's broker.json). WARREN_SESSION_AGENT stays: it is
// how a run of the tests is given its agent (agentForWorkers).
func clearUserConfig() {
	for _, name := range cliEnvVars(reflect.TypeOf(cli{})) {
		if name != "WARREN_SESSION_AGENT" {
			_ = os.Unsetenv(name)
		}
	}
}

// cliEnvVars lists the env tags of t's fields, nested commands included.
func cliEnvVars(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if env, ok := f.Tag.Lookup("env"); ok {
			names = append(names, strings.Split(env, ",")...)
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.PkgPath() == t.PkgPath() {
			names = append(names, cliEnvVars(ft)...)
		}
	}
	return names
}
