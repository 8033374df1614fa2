package sandbox

import (
	"context"
	"errors"
	"fmt"
)

// runAuto runs spec in the strongest mode the host supports: namespaces
// with the Landlock layer on top (namespace only when Landlock is below
// the floor, as InForce then says), else Landlock alone, else refuses with
// both reasons. Only ErrUnavailable (the host refusing the namespace mode
// itself: namespaceMode.hostRefused) falls back; any other failure is the
// run's.
func (r *Runner) runAuto(ctx context.Context, spec Spec) (*Result, error) {
	res, nsErr := r.runIsolated(ctx, namespaceMode{}, spec)
	if nsErr == nil || !errors.Is(nsErr, ErrUnavailable) {
		return res, nsErr
	}
	r.log.Warn().Err(nsErr).Msg("namespaces unavailable, falling back to Landlock isolation")
	res, llErr := r.runIsolated(ctx, landlockMode{}, spec)
	if llErr != nil {
		return nil, fmt.Errorf("%w: no isolation available: namespaces: %w; landlock: %w", ErrUnavailable, nsErr, llErr)
	}
	return res, nil
}
