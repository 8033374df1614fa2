package verify

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// corpusCase is one line of testdata/verify/coq/manifest.jsonl.
type corpusCase struct {
	ID        string `json:"id"`
	Theorem   string `json:"theorem"`
	Statement string `json:"statement"`
	Header    string `json:"header"`
	ProofFile string `json:"proof_file"`
	Profile   string `json:"profile"`
	Expect    struct {
		Accepted bool            `json:"accepted"`
		Reason   messages.Reason `json:"reason"`
	} `json:"expect"`
	// NeedsIsolation: the case probes the host (reads or writes a file
	// outside scratch); its expectation holds only inside a sandbox.
	NeedsIsolation bool `json:"needs_isolation"`
	// HostFile must not exist on the host after the check.
	HostFile string `json:"host_file"`
	// MessageContains is text the verdict's messages must hold (the
	// command or axiom and its line).
	MessageContains string `json:"message_contains"`
}

const corpusDir = "../testdata/verify/coq"

// canaryDir holds the host file attack_load_host_file reads.
const canaryDir = "/tmp/warren-verify-canary"

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	f, err := os.Open(filepath.Join(corpusDir, "manifest.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var out []corpusCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c corpusCase
		dec := json.NewDecoder(bytesReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&c), "manifest line %d", len(out)+1)
		out = append(out, c)
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out)
	return out
}

func (c *corpusCase) spec(t testing.TB) *messages.VerifySpec {
	t.Helper()
	proof, err := os.ReadFile(filepath.Join(corpusDir, c.ProofFile))
	require.NoError(t, err)
	return &messages.VerifySpec{Theorem: c.Theorem, Statement: c.Statement, Header: c.Header, Proof: string(proof)}
}

// plantCanary puts a real proof where attack_load_host_file looks, so that
// the attack would be accepted if the file were reachable.
// plantCanary puts the files the host-probing attacks read into canaryDir
// and clears what they write, for the test's duration. The path is fixed
// (the corpus's proofs name it), so the test holds a host-wide lock on it
// meanwhile: another test process (a second suite run beside this one)
// waits instead of clearing this test's canary or writing into it.
func plantCanary(t *testing.T) {
	t.Helper()
	lock, err := os.OpenFile(canaryDir+".lock", os.O_RDWR|os.O_CREATE, 0o666)
	require.NoError(t, err)
	require.NoError(t, unix.Flock(int(lock.Fd()), unix.LOCK_EX))
	t.Cleanup(func() { _ = lock.Close() }) // closing releases the lock; runs last
	require.NoError(t, os.MkdirAll(canaryDir, 0o755))
	good, err := os.ReadFile(filepath.Join(corpusDir, "good_add_zero.v"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(canaryDir, "Secret.v"), good, 0o644))
	clearCanaryOutputs(t)
	t.Cleanup(func() { clearCanaryOutputs(t) })
}

func clearCanaryOutputs(t *testing.T) {
	for _, n := range []string{"redirected.out", "extracted.ml", "universes"} {
		require.NoError(t, removeIfExists(filepath.Join(canaryDir, n)))
	}
}

func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// TestCoqCorpus runs every good proof and attack of the corpus with real
// coqc/coqchk through the Service, as a worker does, in each isolation
// mode (namespace, then Landlock; auto is the first of them where the host
// has it): zero false accepts, every good proof accepted, each rejection
// for the expected reason. The whole corpus gets the same verdict
// (accepted, reason) and toolchain fingerprint in both modes, so a verdict
// (and a cached one) does not depend on which kind of host decided it.
// Each proof is compiled once per mode (TestCoqCorpus/<case>/<mode>).
// Outside CI, a host with neither mode runs the corpus without isolation,
// its host-probing cases skipped.
func TestCoqCorpus(t *testing.T) {
	requireCoq(t)
	ps := testProfiles(t)
	plantCanary(t)
	svc, skipped := NewService(newTestChecker(t), ps, nil)
	require.Empty(t, skipped)
	cases := loadCorpus(t)
	type got struct {
		accepted  bool
		reason    messages.Reason
		toolchain string
	}
	type mode struct {
		name     string
		run      RunFunc
		isolated bool
	}
	var modes []mode
	var unavailable []string
	for _, iso := range []sandbox.Isolation{sandbox.IsolationNamespace, sandbox.IsolationLandlock} {
		run, err := modeRunner(t, iso)
		if err != nil {
			unavailable = append(unavailable, err.Error())
			continue
		}
		modes = append(modes, mode{string(iso), run, true})
	}
	if len(modes) == 0 {
		testRunner(t) // initialises insecureRun
		t.Logf("no isolation here (%v): the corpus runs without", unavailable)
		modes = append(modes, mode{"insecure", insecureRun, false})
	}
	var mu sync.Mutex
	verdicts := map[string]map[string]got{} // by mode, then case
	for _, m := range modes {
		verdicts[m.name] = map[string]got{}
	}
	for _, tc := range cases {
		t.Run(tc.ID, func(t *testing.T) {
			t.Parallel()
			for _, m := range modes {
				t.Run(m.name, func(t *testing.T) {
					t.Parallel()
					if tc.NeedsIsolation && !m.isolated {
						t.Skip("probes host files, meaningful only inside a sandbox; TestCoqHostProbesControl shows the probe works outside")
					}
					task := &messages.Task{V: messages.Version, ID: tc.ID, Batch: "corpus", Attempt: 1, Kind: messages.KindVerify,
						Profile: tc.Profile, Verify: tc.spec(t)}
					out, err := svc.Verify(context.Background(), m.run, task)
					require.NoError(t, err)
					v := out.Verdict
					require.Equal(t, tc.Expect.Accepted, v.Accepted, "verdict %+v", v)
					require.Equal(t, tc.Expect.Reason, v.Reason, "messages:\n%s", v.Messages)
					require.Contains(t, v.Messages, tc.MessageContains)
					requireLinesNamed(t, v)
					require.NotContains(t, v.Messages, "deprecated-native-compiler-option", "a message starts with what the proof did")
					require.NotEmpty(t, out.InForce, "no sandboxed step ran")
					if tc.HostFile != "" {
						require.NoFileExists(t, tc.HostFile, "the proof wrote a host file")
					}
					mu.Lock()
					verdicts[m.name][tc.ID] = got{v.Accepted, v.Reason, v.Toolchain}
					mu.Unlock()
				})
			}
		})
	}
	// The parallel subtests run once this function has returned: compare
	// their verdicts when they have all ended.
	t.Cleanup(func() {
		if len(unavailable) > 0 {
			t.Logf("verdicts not compared across modes: %v", unavailable)
			return
		}
		ns, ll := verdicts[string(sandbox.IsolationNamespace)], verdicts[string(sandbox.IsolationLandlock)]
		if len(ns) == 0 || len(ll) == 0 {
			t.Logf("verdicts not compared across modes: -run selected one mode (%d and %d cases)", len(ns), len(ll))
			return
		}
		require.Equal(t, ns, ll, "namespace and Landlock verdicts differ")
	})
}

// TestCoqHostProbesControl runs the host-probing attacks without a sandbox:
// the read succeeds (the attack is accepted) and the writes land on the
// host, which is what the sandboxed run in TestCoqCorpus must prevent.
func TestCoqHostProbesControl(t *testing.T) {
	requireCoq(t)
	testRunner(t) // initialises insecureRun
	ps := testProfiles(t)
	c := newTestChecker(t)
	plantCanary(t)
	for _, tc := range loadCorpus(t) {
		if !tc.NeedsIsolation {
			continue
		}
		t.Run(tc.ID, func(t *testing.T) {
			v, _, err := c.Check(context.Background(), insecureRun, ps.Get("coq-host-io"), tc.spec(t))
			require.NoError(t, err)
			require.True(t, v.Accepted, "outside a sandbox the probe should work: %+v", v)
			if tc.HostFile != "" {
				require.FileExists(t, tc.HostFile)
			}
		})
	}
}

// modeRunner returns a RunFunc for one isolation mode, or why the host
// cannot run it; in CI an unavailable mode fails t.
func modeRunner(t *testing.T, iso sandbox.Isolation) (RunFunc, error) {
	t.Helper()
	root := filepath.Join(os.TempDir(), "warren-verify-test-sandboxes")
	r, err := sandbox.New(sandbox.Config{Isolation: iso, ScratchRoot: root, InitPath: testInitPath})
	if err == nil {
		t.Cleanup(func() { _ = r.Close() })
		err = r.Start(context.Background())
	}
	if err == nil {
		_, err = r.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/true"}})
	}
	if err != nil {
		if inCI {
			t.Fatalf("CI=true but isolation %s is unavailable: %v", iso, err)
		}
		return nil, fmt.Errorf("isolation %s unavailable here: %w", iso, err)
	}
	return r.Run, nil
}

// proofAxiom is a fully qualified axiom the proof itself declares.
var proofAxiom = regexp.MustCompile(`_[0-9a-f]{24}\.Proof\.[^\s,()]+`)

// requireLinesNamed holds a rejection for a command or an axiom to name
// where in the proof it is: a refused command its line, a file the
// compile wrote its path, every axiom the proof declares its line (an
// axiom of a library it requires is named by its full name).
func requireLinesNamed(t *testing.T, v *messages.Verdict) {
	t.Helper()
	switch v.Reason {
	case messages.ReasonDisallowedCommand:
		require.Regexp(t, `line [0-9]+: |wrote files besides its own outputs: `, v.Messages, "a refused command names its line")
	case messages.ReasonDisallowedAxiom:
		for _, item := range strings.FieldsFunc(v.Messages, func(r rune) bool { return r == '\n' || r == ',' }) {
			if proofAxiom.MatchString(item) {
				require.Regexp(t, `line [0-9]+: `, item, "an axiom the proof declares names its line, in:\n%s", v.Messages)
			}
		}
		if strings.HasPrefix(v.Messages, "the proof declares axioms") {
			require.Regexp(t, `line [0-9]+: `, v.Messages, "a rejected declaration names its line")
		}
	}
}
