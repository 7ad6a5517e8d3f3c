// Package store keeps what must outlive a request and be shared by replicas:
// per-plan sequences, route results, idempotency keys and runs.
package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Store is what toolrouterd persists. Every replica sharing a store sees
// the same sequences, route results, idempotency keys and runs.
type Store interface {
	// NextSequence allocates the next sequence of a plan, from 0, never
	// handing out the same number twice (one atomic statement).
	NextSequence(ctx context.Context, planID string) (int64, error)
	// NextSequences allocates n consecutive sequences of a plan at once (a
	// batch) and returns the first, in one atomic statement.
	NextSequences(ctx context.Context, planID string, n int64) (first int64, err error)

	// SaveResult stores a route result under its tool_call_id.
	SaveResult(ctx context.Context, res *toolrouter.Result) error
	// GetResult returns a stored route result (ENOTFOUND when unknown).
	GetResult(ctx context.Context, toolCallID string) (*toolrouter.Result, error)

	// ClaimKey claims an Idempotency-Key for a request whose body has the
	// given fingerprint, for at most lease while it runs (so a replica that
	// dies mid-request does not hold the key for long). It returns a Claim saying whether the caller now
	// owns the key (and must Complete or Release it), whether the key was
	// already answered (Response holds the stored answer), or whether
	// another request holds it. A key used with another fingerprint is an
	// EUNPROCESSABLE error. Expired keys are treated as absent.
	ClaimKey(ctx context.Context, key, fingerprint string, lease time.Duration) (Claim, error)
	// CompleteKey stores the answer of a claimed key, replayed for ttl.
	CompleteKey(ctx context.Context, key string, response []byte, ttl time.Duration) error
	// ReleaseKey drops a claim whose request did not complete, so a retry
	// may run it.
	ReleaseKey(ctx context.Context, key string) error
	// RenewKey extends the lease of a key still in progress (a long
	// request), so no other replica claims it meanwhile.
	RenewKey(ctx context.Context, key string, lease time.Duration) error

	// SaveRun inserts or replaces a run (with its records). A run that is
	// no longer running (say, interrupted by another replica) is never set
	// back to running; a final status still replaces it.
	SaveRun(ctx context.Context, run *toolrouter.Run) error
	// GetRun returns a run (ENOTFOUND when unknown).
	GetRun(ctx context.Context, runID string) (*toolrouter.Run, error)
	// ListRuns returns a plan's runs, newest first, at most limit.
	ListRuns(ctx context.Context, planID string, limit int) ([]*toolrouter.Run, error)
	// InterruptStale marks running runs whose heartbeat is older than
	// before as interrupted and returns how many it marked.
	InterruptStale(ctx context.Context, before time.Time) (int, error)

	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
	Close() error
}

// ClaimState and Claim are the outcome of ClaimKey, declared in toolrouter
// so that the HTTP edge need not import the store.
type (
	ClaimState = toolrouter.ClaimState
	Claim      = toolrouter.Claim
)

// Claim states.
const (
	Claimed    = toolrouter.Claimed
	Answered   = toolrouter.Answered
	InProgress = toolrouter.InProgress
)

// Open opens the store named by a TOOLROUTER_STORE URL.
func Open(ctx context.Context, url string) (Store, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, fmt.Errorf("store %q: want memory://, sqlite://PATH or postgres://…", url)
	}
	switch scheme {
	case "memory":
		return NewMemory(), nil
	case "sqlite":
		s, err := OpenSQLite(ctx, sqlitePath(rest))
		if err != nil {
			return nil, err
		}
		return s, nil
	case "postgres", "postgresql":
		s, err := OpenPostgres(ctx, url)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("store %q: unsupported scheme %q (want memory, sqlite or postgres)", url, scheme)
}

// ErrKeyReused is returned by ClaimKey for a key already used with a
// different request body.
var ErrKeyReused = &toolrouter.Error{Code: toolrouter.EUNPROCESSABLE, Field: "Idempotency-Key",
	Message: "Idempotency-Key: already used with a different request body"}

// Interrupt marks a running run as interrupted: its replica stopped
// heartbeating before it finished.
func Interrupt(run *toolrouter.Run, now time.Time) {
	msg := "run interrupted: the replica running it stopped before it finished"
	run.Status = toolrouter.RunInterrupted
	run.Error = &msg
	t := now.UTC()
	run.FinishedAt = &t
}

func checkSequenceArgs(planID string, n int64) error {
	if planID == "" {
		return toolrouter.Invalid("plan_id", "plan_id must be a non-empty string")
	}
	if n < 1 {
		return toolrouter.Invalid("n", "sequences to allocate must be >= 1, got %d", n)
	}
	return nil
}
