// Package store is the contract of what must outlive a request and be
// shared by replicas (per-plan sequences, route results, idempotency keys
// and runs) and Open, which picks the backend a TOOLROUTER_STORE URL names
// (docs/configuration.md "Configuration"). Each backend lives in its own package with its
// own driver: store/memory, store/sqlite, store/postgres; store/storetest
// is the contract suite they all pass.
package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/store/postgres"
	"github.com/toolrouterd/toolrouterd/internal/store/sqlite"
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

	// SaveResult stores a route result under its tool_call_id, and the
	// audit records of its call in the same transaction (docs/security.md "Audit
	// trail"). The SQL stores write it behind (group commit): it is
	// committed within milliseconds, with the results of other routes, or
	// by Flush or Close; a crash loses what was not yet committed, the
	// result and its audit records together (docs/operations.md "Storage and
	// durability").
	SaveResult(ctx context.Context, res *toolrouter.Result, audit ...toolrouter.AuditRecord) error
	// Flush waits until every write queued before it is committed.
	Flush(ctx context.Context) error
	// GetResult returns a stored route result (ENOTFOUND when unknown) by
	// its key, toolrouter.ScopedKey(client, tool_call_id), including the
	// results this store has queued.
	GetResult(ctx context.Context, toolCallID string) (*toolrouter.Result, error)

	// ClaimKey claims an Idempotency-Key for a request whose body has the
	// given fingerprint, for at most lease while it runs (so a replica that
	// dies mid-request does not hold the key for long). It returns a Claim saying whether the caller now
	// owns the key (and must Complete or Release it), whether the key was
	// already answered (Response holds the stored answer), or whether
	// another request holds it. A key used with another fingerprint is an
	// EUNPROCESSABLE error. Expired keys are treated as absent.
	ClaimKey(ctx context.Context, key, fingerprint string, lease time.Duration) (toolrouter.Claim, error)
	// CompleteKey stores the answer of a claimed key, replayed for ttl,
	// and returns once it is durably committed (with the results queued
	// before it). A claim whose lease lapsed unanswered is Abandoned.
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
	// ListRuns returns a plan's runs (every plan's when planID is ""),
	// newest first, at most limit.
	ListRuns(ctx context.Context, planID string, limit int) ([]*toolrouter.Run, error)
	// InterruptStale marks running runs whose heartbeat is older than
	// before as interrupted and returns how many it marked.
	InterruptStale(ctx context.Context, before time.Time) (int, error)

	// CreateApproval stores a pending approval (docs/approvals.md "Approvals").
	CreateApproval(ctx context.Context, a *toolrouter.Approval) error
	// GetApproval returns an approval (ENOTFOUND when unknown).
	GetApproval(ctx context.Context, id string) (*toolrouter.Approval, error)
	// ListApprovals returns the approvals passing f, newest first.
	ListApprovals(ctx context.Context, f toolrouter.ApprovalFilter) ([]*toolrouter.Approval, error)
	// DecideApproval applies d to a pending approval exactly once: one
	// conditional update, so of two deciders on any replicas one wins and
	// the other gets ECONFLICT (toolrouter.CheckDecision). It returns the
	// decided approval.
	DecideApproval(ctx context.Context, id string, d toolrouter.Decision) (*toolrouter.Approval, error)
	// ExpireApprovals marks the pending approvals whose expiry is at or
	// before now as expired and returns those it marked (each once, even
	// with several replicas sweeping).
	ExpireApprovals(ctx context.Context, now time.Time) ([]*toolrouter.Approval, error)
	// CountPendingApprovals is how many approvals of client are pending
	// (the cap TOOLROUTER_MAX_PENDING_APPROVALS bounds).
	CountPendingApprovals(ctx context.Context, client string) (int, error)
	// PurgeApprovals deletes at most limit approvals that are no longer
	// pending and were created before before, and returns how many.
	PurgeApprovals(ctx context.Context, before time.Time, limit int) (int, error)
	Tenancy
	RunAdmin
	Pins
	Marks
	Secrets
	Tasks
	Spend

	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
	Close() error
}

// Open opens the store named by a TOOLROUTER_STORE URL.
func Open(ctx context.Context, url string) (Store, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, fmt.Errorf("store %q: want memory://, sqlite://PATH or postgres://…", url)
	}
	switch scheme {
	case "memory":
		return memory.New(), nil
	case "sqlite":
		// sqlite://toolrouter.db → toolrouter.db; sqlite:///data/x.db → /data/x.db
		s, err := sqlite.Open(ctx, strings.TrimSpace(rest))
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return s, nil
	case "postgres", "postgresql":
		s, err := postgres.Open(ctx, url)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("store %q: unsupported scheme %q (want memory, sqlite or postgres)", url, scheme)
}

// Marks are small facts replicas share, each until it expires (docs/mcp.md
// "MCP behind a load balancer" and "Elicitation through the gateway (multi
// round-trip requests)"): the MCP sessions terminated, the key signing
// requestStates.
type Marks interface {
	// PutMark stores value under key until expires, unless a mark that has
	// not expired holds key; it returns the value key holds now (value, or
	// the live mark's). Expired marks are deleted along the way.
	PutMark(ctx context.Context, key, value string, expires time.Time) (string, error)
	// GetMark returns the value of key's mark; false when there is none or
	// it expired.
	GetMark(ctx context.Context, key string) (string, bool, error)
}

// Secrets is the token vault's storage (docs/backend-auth.md "The token
// vault"): sealed secrets by kind and key, shared by replicas. The store
// never sees a secret in the clear. An expired secret is absent.
type Secrets interface {
	// PutSecret inserts or replaces the secret of s's kind and key
	// (expired secrets are deleted along the way).
	PutSecret(ctx context.Context, s *toolrouter.SealedSecret) error
	// GetSecret returns a secret (ENOTFOUND when unknown or expired).
	GetSecret(ctx context.Context, kind, key string) (*toolrouter.SealedSecret, error)
	// TakeSecret deletes a secret and returns it, in one statement, so of
	// several takers on any replicas one gets it (ENOTFOUND for the
	// others, and when unknown or expired).
	TakeSecret(ctx context.Context, kind, key string) (*toolrouter.SealedSecret, error)
	// ListSecrets returns the live secrets of a kind and owner, by key.
	ListSecrets(ctx context.Context, kind, owner string) ([]*toolrouter.SealedSecret, error)
	// DeleteSecret deletes a secret and reports whether there was one.
	DeleteSecret(ctx context.Context, kind, key string) (bool, error)
}

// Tasks are the tool calls toolrouterd runs in the background for a client
// that polls them (docs/mcp.md "Tasks"). A task's status only moves from
// working or input_required to a terminal status (completed, failed,
// cancelled), once: a terminal task never changes again.
type Tasks interface {
	// CreateTask stores a new task, its heartbeat at beat.
	CreateTask(ctx context.Context, t *toolrouter.Task, beat time.Time) error
	// GetTask returns a task (ENOTFOUND when unknown).
	GetTask(ctx context.Context, id string) (*toolrouter.Task, error)
	// BeatTask sets a task's heartbeat to beat and, unless progress is nil,
	// its progress; unless status is "", its status (working or
	// input_required) and message. It reports whether the task's
	// cancellation was requested, and live false when the task is terminal
	// or unknown (nothing changed).
	BeatTask(ctx context.Context, id string, beat time.Time, progress *toolrouter.TaskProgress, status toolrouter.TaskStatus, message string) (cancel, live bool, err error)
	// SaveTask stores t (a held call's task, input_required; a finished
	// one) unless the stored task is terminal; it reports whether it did.
	SaveTask(ctx context.Context, t *toolrouter.Task) (bool, error)
	// RequestTaskCancel marks a task that is not terminal as to be
	// cancelled (the replica running it sees it at its next heartbeat); it
	// reports whether it did.
	RequestTaskCancel(ctx context.Context, id string, now time.Time) (bool, error)
	// FailStaleTasks ends as failed, with reason, the working tasks whose
	// heartbeat is before before (their replica stopped), and returns how
	// many. A task input_required (a held call) runs nowhere: it is kept.
	FailStaleTasks(ctx context.Context, before, now time.Time, reason string) (int, error)
	// DeleteTasksBefore deletes at most limit tasks last updated before
	// before, and returns how many.
	DeleteTasksBefore(ctx context.Context, before time.Time, limit int) (int, error)
}

// Tenancy is what the store keeps per client (docs/security.md "Clients"): runs by
// owner, the audit trail, and rate limit counters shared by replicas.
type Tenancy interface {
	// ListClientRuns returns the runs of a plan (every plan when planID
	// is "") started by client, newest first, at most limit.
	ListClientRuns(ctx context.Context, client, planID string, limit int) ([]*toolrouter.Run, error)
	// AppendAudit appends audit records in one write, written behind like
	// SaveResult's (visible after Flush; ListAudit flushes first).
	AppendAudit(ctx context.Context, recs []toolrouter.AuditRecord) error
	// ListAudit returns the records f selects, newest (highest id) first.
	ListAudit(ctx context.Context, f toolrouter.AuditFilter) ([]toolrouter.AuditRecord, error)
	// PurgeAudit deletes at most limit records older than before and
	// returns how many it deleted.
	PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error)
	// TakeRate adds n calls to the counter of client in the window that
	// starts at window, unless that would exceed quota (then nothing is
	// added), in one statement; it returns the calls counted after the
	// answer and whether the n were taken.
	TakeRate(ctx context.Context, client string, window time.Time, n, quota int) (used int, ok bool, err error)
	// PurgeRates deletes the counters of windows that started before
	// before.
	PurgeRates(ctx context.Context, before time.Time) (int, error)
}

// Pins keeps the pinned tool definitions of MCP servers (docs/trusting-tools.md "Pinned
// definitions"), shared by replicas: one pin per server and tool, updated
// by compare-and-swap on its Version.
type Pins interface {
	// ListPins returns every pin, ordered by server and tool.
	ListPins(ctx context.Context) ([]*toolrouter.Pin, error)
	// CreatePin stores p unless a pin of its server and tool exists, and
	// reports whether it did (then p.Version is 1).
	CreatePin(ctx context.Context, p *toolrouter.Pin) (bool, error)
	// UpdatePin replaces the pin of p's server and tool if its version is
	// still p.Version (then p.Version is incremented) and reports whether
	// it did: false when another update came first.
	UpdatePin(ctx context.Context, p *toolrouter.Pin) (bool, error)
	// DeletePin deletes the pin of p's server and tool if its version is
	// still p.Version, and reports whether it did.
	DeletePin(ctx context.Context, p *toolrouter.Pin) (bool, error)
}

// Spend is the spend ledger (docs/costs.md): what each call and model
// turn cost, shared by replicas, which spend limits and GET /usage read.
type Spend interface {
	// ReserveSpend inserts e (a new id) into the ledger unless, for one of
	// checks, what its counter has spent plus e.Amount would pass its
	// limit (or e.Amount is 0 and the limit is reached); then it inserts
	// nothing and returns that check's index, else -1. The checks and the
	// insert are one atomic step across replicas.
	ReserveSpend(ctx context.Context, e toolrouter.SpendEntry, checks []toolrouter.SpendCheck) (int, error)
	// SettleSpend inserts e or replaces the entry of its key (its id and
	// start, e.Key()): what the call or turn cost once it ran.
	SettleSpend(ctx context.Context, e toolrouter.SpendEntry) error
	// DropSpend deletes the entry of k: a reserved call that did not run.
	DropSpend(ctx context.Context, k toolrouter.SpendKey) error
	// Usage returns the groups f selects, by key then currency.
	Usage(ctx context.Context, f toolrouter.UsageFilter) ([]toolrouter.UsageRow, error)
	// PurgeSpend deletes at most limit ledger entries of calls and turns
	// that started before before, and returns how many.
	PurgeSpend(ctx context.Context, before time.Time, limit int) (int, error)
	// Costs returns the costs of the ledger entries of keys that exist, by
	// id (a call's: toolrouter.ScopedKey(client, tool_call_id), started at
	// its audit record's time).
	Costs(ctx context.Context, keys []toolrouter.SpendKey) (map[string]toolrouter.Cost, error)
}
