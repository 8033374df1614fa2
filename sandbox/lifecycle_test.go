package sandbox

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stretchr/testify/require"
)

// startedNew is New then Start: a Runner as the worker runs it.
func startedNew(cfg Config) (*Runner, error) {
	r, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return r, r.Start(context.Background())
}

// TestNewStartsNothing: New leaves no goroutine and no warm pool behind,
// even with Prestart; a Run before Start runs cold and starts no pool
// either; Start starts it once, however often it is called; Close is
// idempotent and a Start after it is refused.
func TestNewStartsNothing(t *testing.T) {
	root := nsRunner(t).cfg.ScratchRoot
	opts := goleak.IgnoreCurrent()
	r, err := New(Config{Isolation: IsolationNamespace, ScratchRoot: root, Prestart: 1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	require.NoError(t, goleak.Find(opts), "New started a goroutine")

	k := namespaceMode{}.warmKey(Spec{Limits: r.cfg.Defaults})
	res, err := r.Run(context.Background(), Spec{Argv: []string{"/bin/true"}})
	require.NoError(t, err, "a Run before Start runs cold")
	require.Equal(t, 0, res.ExitCode)
	r.warm.mu.Lock()
	pools := r.warm.views
	r.warm.mu.Unlock()
	require.Nil(t, pools, "a Run before Start starts no warm pool")

	require.NoError(t, r.Start(context.Background()))
	require.Eventually(t, func() bool { return r.warm.ready(k) == 1 }, 20*time.Second, 5*time.Millisecond, "Start fills the pool")
	ready := r.warm.sandboxes()
	require.NoError(t, r.Start(context.Background()), "Start is idempotent")
	require.Equal(t, ready, r.warm.sandboxes(), "a second Start changes nothing: the same warm sandbox is ready")
	r.warm.mu.Lock()
	require.Len(t, r.warm.views, 1)
	require.Equal(t, 1, cap(r.warm.views[k].ready))
	r.warm.mu.Unlock()

	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "Close is idempotent")
	require.ErrorIs(t, r.Start(context.Background()), ErrClosed)
	require.NoError(t, goleak.Find(opts), "Close waits for every goroutine of the pool")
	res, err = r.Run(context.Background(), Spec{Argv: []string{"/bin/true"}})
	require.NoError(t, err, "a Run after Close runs cold")
	require.Equal(t, 0, res.ExitCode)
}
