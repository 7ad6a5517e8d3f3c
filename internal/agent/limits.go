package agent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// DefaultMaxActive is the active runs a client may have at once when
// MaxActive is unset, and DefaultMaxRunBytes a run's stored size.
const (
	DefaultMaxActive   = 64
	DefaultMaxRunBytes = 8 << 20
)

// errCancelRequested is the cause of a run's context when POST
// /runs/{id}/cancel asked for it.
var errCancelRequested = errors.New("cancelled by POST /runs/{id}/cancel")

// active tracks the runs this process executes: per client, against
// MaxActive, and by id, so that a cancel reaches them at once.
type active struct {
	perClient map[string]int
	cancel    map[string]context.CancelCauseFunc
}

// admit counts a new run of the client in ctx, or refuses it (429) when
// the client already has MaxActive runs in this process (docs/runs.md "Runs:
// limits, cancellation and size").
func (r *Runner) admit(ctx context.Context) (client string, err error) {
	client = access.FromContext(ctx).LabelName()
	limit := r.MaxActive
	if limit <= 0 {
		limit = DefaultMaxActive
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.act.perClient == nil {
		r.act = active{perClient: map[string]int{}, cancel: map[string]context.CancelCauseFunc{}}
	}
	if r.act.perClient[client] >= limit {
		return "", toolrouter.Errorf(toolrouter.ETOOMANY,
			"too many active runs: %d already running (TOOLROUTER_MAX_ACTIVE_RUNS); wait for one to finish or cancel one", limit)
	}
	r.act.perClient[client]++
	return client, nil
}

// track registers a run executing here until the returned func is called.
func (r *Runner) track(runID, client string, cancel context.CancelCauseFunc) (untrack func()) {
	r.mu.Lock()
	r.act.cancel[runID] = cancel
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.act.cancel, runID)
		if r.act.perClient[client]--; r.act.perClient[client] <= 0 {
			delete(r.act.perClient, client)
		}
		r.mu.Unlock()
	}
}

// Cancel asks for a run to end as cancelled, on whichever replica runs it:
// the store keeps the request, which that replica sees at its next
// heartbeat or model call; a run executing here is cancelled at once. It
// returns the run and whether it was still running (a finished run is
// returned as it is). A run the client in ctx may not see is ENOTFOUND.
func (r *Runner) Cancel(ctx context.Context, id string) (*toolrouter.Run, bool, error) {
	run, err := r.get(ctx, id, false)
	if err == nil && run.Status == toolrouter.RunAwaitingApproval {
		// Nothing executes a paused run: it ends cancelled now, unless a
		// replica resumed it meanwhile (then it is cancelled as running).
		stop, now := errCancelRequested.Error(), r.now()
		paused := *run
		paused.Status, paused.Error, paused.FinishedAt = toolrouter.RunCancelled, &stop, &now
		paused.PendingApprovals, paused.Resume = nil, nil
		// err is the function's, not a shadow: the GetRun below sets it.
		var ok bool
		if ok, err = r.Runs.TransitionRun(ctx, &paused, toolrouter.RunAwaitingApproval); err != nil {
			return nil, false, toolrouter.StoreError(err)
		}
		if ok {
			return &paused, false, nil
		}
		run, err = r.Runs.GetRun(ctx, id)
	}
	if err != nil || run.Status != toolrouter.RunRunning {
		return run, false, toolrouter.StoreError(err)
	}
	run, err = r.Runs.RequestCancel(ctx, id)
	if err != nil {
		return nil, false, toolrouter.StoreError(err)
	}
	r.mu.Lock()
	cancel := r.act.cancel[id]
	r.mu.Unlock()
	if cancel != nil {
		cancel(errCancelRequested)
	}
	return run, run.Status == toolrouter.RunRunning, nil
}

// beat sets the run's heartbeat in the store (one column) and cancels the
// run when its cancellation was requested.
func (r *Runner) beat(ctx context.Context, runID string, cancel context.CancelCauseFunc, timeout time.Duration) error {
	sctx, done := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer done()
	requested, err := r.Runs.Heartbeat(sctx, runID, r.beatAt(r.now()))
	if requested {
		cancel(errCancelRequested)
	}
	return err
}

// truncatedNote replaces what a run cannot keep within MaxRunBytes.
const truncatedNote = "[truncated: the run exceeded TOOLROUTER_MAX_RUN_BYTES]"

// capRun keeps a run's stored document within limit bytes: the largest
// tool outputs and inputs are replaced by a note first, then the final answer is cut
// (at a rune boundary) and ends with the note. The run says what it lost
// in the records' output and the content themselves.
func capRun(run *toolrouter.Run, limit int64) {
	size := jsonSize(run)
	if size <= limit {
		return
	}
	// The largest parts first: a record's output or inputs.
	type big struct {
		i      int
		inputs bool
		size   int64
	}
	var parts []big
	for i, rec := range run.ToolCalls {
		parts = append(parts, big{i, false, jsonSize(rec.Output)}, big{i, true, jsonSize(rec.Inputs)})
	}
	slices.SortFunc(parts, func(a, b big) int { return int(b.size - a.size) })
	for _, p := range parts {
		note := map[string]any{"truncated": true, "bytes": p.size, "note": truncatedNote}
		if size <= limit || p.size <= jsonSize(note) {
			break
		}
		size += jsonSize(note) - p.size
		if p.inputs {
			run.ToolCalls[p.i].Inputs = note
		} else {
			run.ToolCalls[p.i].Output = note
		}
	}
	if size <= limit {
		return
	}
	over := size - limit + int64(len(truncatedNote)) + 16
	keep := max(int64(len(run.Content))-over, 0)
	for keep > 0 && !utf8.RuneStart(run.Content[keep]) {
		keep--
	}
	run.Content = run.Content[:keep] + "\n" + truncatedNote
	if jsonSize(run) > limit { // escaping made the cut too short
		run.Content = truncatedNote
	}
}

func jsonSize(v any) int64 {
	b, _ := json.Marshal(v) // a run that cannot be encoded fails in SaveRun
	return int64(len(b))
}
