// Package task runs tool calls as tasks (docs/mcp.md "Tasks"): a call the
// client does not wait for runs in the background, detached from the
// request that started it, while its state lives in the store, so the
// client polls it (GET /tasks/{id}, tasks/get on /mcp) and cancels it from
// any replica, and a restart keeps what it reached.
//
// The replica running a task heartbeats it. A replica that dies takes its
// running calls with it: the tasks it ran stop heartbeating, and the next
// poll on any replica ends them as failed, saying so (FailStaleTasks). A
// held call (approval) is a task input_required that runs nowhere until its
// approval is decided; a poll then finishes it with the decided result.
package task

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/randid"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Store keeps tasks (store.Tasks).
type Store interface {
	CreateTask(ctx context.Context, t *toolrouter.Task, beat time.Time) error
	GetTask(ctx context.Context, id string) (*toolrouter.Task, error)
	BeatTask(ctx context.Context, id string, beat time.Time, progress *toolrouter.TaskProgress, status toolrouter.TaskStatus, message string) (cancel, live bool, err error)
	SaveTask(ctx context.Context, t *toolrouter.Task) (bool, error)
	RequestTaskCancel(ctx context.Context, id string, now time.Time) (bool, error)
	FailStaleTasks(ctx context.Context, before, now time.Time, reason string) (int, error)
}

// Router routes a call (router.Router).
type Router interface {
	Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error)
}

// Results reads a held call's result once its approval is decided
// (approval.Keeper).
type Results interface {
	Result(ctx context.Context, toolCallID, owner string) (*toolrouter.Result, error)
}

// ErrCancelled is the cause of a task's context when its client
// cancelled it.
var ErrCancelled = errors.New("cancelled by its client")

// ReplicaLost is the reason a task whose replica stopped failed with.
const ReplicaLost = "the replica running the call stopped (restart or crash) before it finished; whether the tool acted is unknown: check before calling it again"

// Runner starts, polls and cancels tasks.
type Runner struct {
	Store   Store
	Router  Router
	Results Results // nil: held calls stay input_required
	// Heartbeat is how often a running task's replica says it is alive
	// and reads whether it was cancelled (default 5s); a task silent for 3
	// heartbeats failed (ReplicaLost).
	Heartbeat time.Duration
	// TTL is how long a task is kept after its last change (the result
	// retention), reported as ttlMs.
	TTL time.Duration
	// PollInterval is the polling interval asked of clients (default 1s).
	PollInterval time.Duration
	Now          func() time.Time
	Logger       zerolog.Logger

	mu      sync.Mutex
	running map[string]*run
	bg      sync.WaitGroup
}

// run is a task running on this replica.
type run struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) every() time.Duration {
	if r.Heartbeat <= 0 {
		return 5 * time.Second
	}
	return r.Heartbeat
}

// Start creates the task of cr in the store, then routes cr in the
// background, detached from ctx's end (its values, the caller's identity,
// stay). It returns the task as created and a channel closed when the call
// has finished (or is held) and its task is saved.
func (r *Runner) Start(ctx context.Context, cr *toolrouter.CallRequest) (*toolrouter.Task, <-chan struct{}, error) {
	now := r.now().UTC()
	t := &toolrouter.Task{TaskID: "task_" + randid.Hex(16), Status: toolrouter.TaskWorking, Entry: cr.EntryPoint(),
		ToolName: cr.Call.ToolName, PlanID: cr.PlanID, CreatedAt: now, UpdatedAt: now,
		TTLMillis: r.TTL.Milliseconds(), PollIntervalMillis: r.pollInterval().Milliseconds()}
	if c := access.FromContext(ctx); c != nil {
		t.Client = c.Name
	}
	if err := r.Store.CreateTask(ctx, t, now); err != nil {
		return nil, nil, toolrouter.StoreError(fmt.Errorf("create task: %w", err))
	}
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	ru := &run{cancel: cancel, done: make(chan struct{})}
	r.mu.Lock()
	if r.running == nil {
		r.running = map[string]*run{}
	}
	r.running[t.TaskID] = ru
	r.mu.Unlock()
	created := *t
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		defer close(ru.done)
		defer func() {
			r.mu.Lock()
			delete(r.running, t.TaskID)
			r.mu.Unlock()
			cancel(nil)
		}()
		r.execute(rctx, cancel, t, cr)
	}()
	return &created, ru.done, nil
}

func (r *Runner) pollInterval() time.Duration {
	if r.PollInterval <= 0 {
		return time.Second
	}
	return r.PollInterval
}

// execute routes cr for task t, heartbeating it, and saves how it ended.
func (r *Runner) execute(ctx context.Context, cancel context.CancelCauseFunc, t *toolrouter.Task, cr *toolrouter.CallRequest) {
	var (
		mu       sync.Mutex
		progress *toolrouter.TaskProgress
	)
	dirty := make(chan struct{}, 1)
	emit := cr.Emit
	cr.Emit = func(u toolrouter.Update) {
		if emit != nil {
			emit(u)
		}
		if u.Progress == nil && u.Message == "" {
			return
		}
		p := &toolrouter.TaskProgress{Message: u.Message}
		if u.Progress != nil {
			p.Progress = *u.Progress
		}
		if u.Total != nil {
			p.Total = *u.Total
		}
		mu.Lock()
		progress = p
		mu.Unlock()
		select {
		case dirty <- struct{}{}:
		default:
		}
	}
	stop := make(chan struct{})
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		tick := time.NewTicker(r.every())
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			case <-dirty:
			}
			mu.Lock()
			p := progress
			progress = nil
			mu.Unlock()
			bctx, done := context.WithTimeout(context.WithoutCancel(ctx), r.every())
			cancelled, _, err := r.Store.BeatTask(bctx, t.TaskID, r.now().UTC(), p, "", "")
			done()
			if err != nil {
				r.Logger.Warn().Err(err).Str("task_id", t.TaskID).Msg("task heartbeat")
			}
			if cancelled {
				cancel(ErrCancelled)
			}
		}
	}()
	res, err := r.Router.Do(ctx, cr)
	close(stop)
	<-beating
	end := *t
	end.UpdatedAt = r.now().UTC()
	mu.Lock()
	if progress != nil {
		end.Progress = progress
	}
	mu.Unlock()
	switch {
	case errors.Is(context.Cause(ctx), ErrCancelled):
		end.Status, end.StatusMessage = toolrouter.TaskCancelled, "cancelled by the client"
		end.Result = res
	case err != nil:
		end.Status, end.Error = toolrouter.TaskFailed, toolrouter.ErrorMessage(err)
		end.StatusMessage = end.Error
	case res.Status == toolrouter.ResultAwaitingApproval:
		end.Status, end.ApprovalID, end.ToolCallID = toolrouter.TaskInputRequired, res.ApprovalID, res.ToolCallID
		end.StatusMessage = fmt.Sprintf("awaiting approval %s: an approver must decide it (POST /approvals/%s)", res.ApprovalID, res.ApprovalID)
	default:
		end.Status, end.Result, end.ToolCallID = toolrouter.TaskCompleted, res, res.ToolCallID
	}
	sctx, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer done()
	if _, err := r.Store.SaveTask(sctx, &end); err != nil {
		r.Logger.Error().Err(err).Str("task_id", t.TaskID).Msg("save task")
	}
}

// Get returns the task id of the client in ctx (ENOTFOUND for another
// client's: a task it may not see does not exist), first failing the tasks
// whose replica stopped, and finishing a held call whose approval was
// decided.
func (r *Runner) Get(ctx context.Context, id string) (*toolrouter.Task, error) {
	now := r.now().UTC()
	if n, err := r.Store.FailStaleTasks(ctx, now.Add(-3*r.every()), now, ReplicaLost); err != nil {
		r.Logger.Warn().Err(err).Msg("fail stale tasks")
	} else if n > 0 {
		r.Logger.Warn().Int("tasks", n).Msg("failed tasks whose replica stopped")
	}
	t, err := r.Store.GetTask(ctx, id)
	if err != nil {
		return nil, toolrouter.StoreError(err)
	}
	if c := access.FromContext(ctx); c != nil && !c.Admin && t.Client != c.Name {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "task %q not found", id)
	}
	if t.Status == toolrouter.TaskInputRequired && t.ToolCallID != "" && r.Results != nil {
		res, err := r.Results.Result(ctx, t.ToolCallID, "")
		if err == nil && res.Status != toolrouter.ResultAwaitingApproval {
			end := *t
			end.Status, end.Result, end.StatusMessage, end.UpdatedAt = toolrouter.TaskCompleted, res, "", now
			if ok, err := r.Store.SaveTask(ctx, &end); err != nil {
				return nil, toolrouter.StoreError(err)
			} else if ok {
				return &end, nil
			}
			return r.Store.GetTask(ctx, id)
		}
	}
	return t, nil
}

// Cancel asks for the task id of the client in ctx to end as cancelled and
// returns it: on this replica its call's context is cancelled at once; on
// another, at that replica's next heartbeat; a held call's task ends
// cancelled now (its approval stays, for the approver to see). A finished
// task is returned as it is.
func (r *Runner) Cancel(ctx context.Context, id string) (*toolrouter.Task, error) {
	t, err := r.Get(ctx, id)
	if err != nil || t.Status.Terminal() {
		return t, err
	}
	now := r.now().UTC()
	if t.Status == toolrouter.TaskInputRequired {
		end := *t
		end.Status, end.StatusMessage, end.UpdatedAt = toolrouter.TaskCancelled, "cancelled by the client while awaiting approval "+t.ApprovalID, now
		if ok, err := r.Store.SaveTask(ctx, &end); err != nil || ok {
			return &end, toolrouter.StoreError(err)
		}
		return r.Store.GetTask(ctx, id)
	}
	if _, err := r.Store.RequestTaskCancel(ctx, id, now); err != nil {
		return nil, toolrouter.StoreError(err)
	}
	r.mu.Lock()
	ru := r.running[id]
	r.mu.Unlock()
	if ru != nil {
		ru.cancel(ErrCancelled)
		// Ended and saved, the answer says cancelled; a call slow to
		// stop is answered as it is meanwhile (cancellation is
		// cooperative).
		wait := time.NewTimer(cancelWait)
		defer wait.Stop()
		select {
		case <-ru.done:
		case <-wait.C:
		case <-ctx.Done():
		}
	}
	return r.Store.GetTask(ctx, id)
}

// cancelWait is how long Cancel waits for a call running here to stop.
const cancelWait = 5 * time.Second

// Wait blocks until every task running here finished or ctx is done.
func (r *Runner) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { r.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
