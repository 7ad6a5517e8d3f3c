package store

import (
	"context"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// RunAdmin is what bounds runs and storage (docs/runs.md "Runs: limits,
// cancellation and size" and "Retention"): heartbeats that write one
// column, cancellation seen by the replica running a run, and deletion of
// what outlived its retention in small batches.
type RunAdmin interface {
	// Heartbeat sets the heartbeat of a running run to at (and nothing
	// else) and reports whether its cancellation was requested. A run that
	// is unknown or no longer running is left alone (false, nil).
	Heartbeat(ctx context.Context, runID string, at time.Time) (cancelRequested bool, err error)
	// RequestCancel asks the replica running a run to cancel it (it sees
	// the request at its next Heartbeat) and returns the run as stored. A
	// finished run is returned unchanged; an unknown one is ENOTFOUND.
	RequestCancel(ctx context.Context, runID string) (*toolrouter.Run, error)
	// TransitionRun replaces a run whose stored status is from with run,
	// in one conditional update, and reports whether it did: of replicas
	// racing to resume a paused run (from awaiting_approval to running),
	// or to cancel it, exactly one wins.
	TransitionRun(ctx context.Context, run *toolrouter.Run, from toolrouter.RunStatus) (bool, error)
	// DeleteResultsBefore deletes at most limit route results stored
	// before before, and returns how many it deleted.
	DeleteResultsBefore(ctx context.Context, before time.Time, limit int) (int, error)
	// DeleteRunsBefore deletes at most limit finished runs last written
	// before before (running and paused runs are kept), and returns how many.
	DeleteRunsBefore(ctx context.Context, before time.Time, limit int) (int, error)
}
