package task_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/task"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// routerFunc routes with a func.
type routerFunc func(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error)

func (f routerFunc) Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
	return f(ctx, req)
}

// beats tells of every heartbeat that carried progress.
type beats struct {
	*memory.Store
	progress chan *toolrouter.TaskProgress
}

func (b *beats) BeatTask(ctx context.Context, id string, beat time.Time, p *toolrouter.TaskProgress, s toolrouter.TaskStatus, m string) (bool, bool, error) {
	c, l, err := b.Store.BeatTask(ctx, id, beat, p, s, m)
	if p != nil {
		b.progress <- p
	}
	return c, l, err
}

func alice() context.Context {
	return access.NewContext(context.Background(), &access.Client{Name: "alice"})
}
func bob() context.Context {
	return access.NewContext(context.Background(), &access.Client{Name: "bob"})
}

func call(tool string) *toolrouter.CallRequest {
	return &toolrouter.CallRequest{PlanID: "p", Call: toolrouter.Call{ToolName: tool}}
}

func TestTaskCompletesAndIsItsClientsOnly(t *testing.T) {
	t.Parallel()
	st := &beats{Store: memory.New(), progress: make(chan *toolrouter.TaskProgress, 1)}
	release := make(chan struct{})
	var gotClient string
	r := &task.Runner{Store: st, Heartbeat: time.Hour, Router: routerFunc(func(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
		gotClient = access.FromContext(ctx).Name
		half := 0.5
		req.Emit(toolrouter.Update{Status: toolrouter.StatusRunning, Progress: &half, Message: "halfway"})
		<-release
		return &toolrouter.Result{ToolCallID: "tc_1", Success: true, Output: []byte(`"done"`)}, nil
	})}
	ctx, hangUp := context.WithCancel(alice())
	tk, done, err := r.Start(ctx, call("slow"))
	if err != nil || tk.Status != toolrouter.TaskWorking || tk.ToolName != "slow" {
		t.Fatalf("Start = %+v, %v", tk, err)
	}
	hangUp() // the task outlives the request that started it
	if p := <-st.progress; p.Progress != 0.5 || p.Message != "halfway" {
		t.Fatalf("progress beaten = %+v", p)
	}
	got, err := r.Get(alice(), tk.TaskID)
	if err != nil || got.Status != toolrouter.TaskWorking || got.Progress == nil || got.Progress.Message != "halfway" {
		t.Fatalf("Get while running = %+v, %v", got, err)
	}
	if _, err := r.Get(bob(), tk.TaskID); toolrouter.ErrorCode(err) != toolrouter.ENOTFOUND {
		t.Fatalf("another client's Get: %v, want not_found", err)
	}
	if _, err := r.Cancel(bob(), tk.TaskID); toolrouter.ErrorCode(err) != toolrouter.ENOTFOUND {
		t.Fatalf("another client's Cancel: %v, want not_found", err)
	}
	close(release)
	<-done
	got, err = r.Get(alice(), tk.TaskID)
	if err != nil || got.Status != toolrouter.TaskCompleted || got.Result == nil || string(got.Result.Output) != `"done"` || got.ToolCallID != "tc_1" {
		t.Fatalf("Get when done = %+v, %v", got, err)
	}
	if gotClient != "alice" {
		t.Fatalf("the call ran as %q, want alice", gotClient)
	}
	admin := access.NewContext(context.Background(), &access.Client{Name: "root", Admin: true})
	if _, err := r.Get(admin, tk.TaskID); err != nil {
		t.Fatalf("an admin's Get: %v", err)
	}
}

// blocking routes calls that end only when cancelled, with the cause seen.
func blocking(causes chan error) routerFunc {
	return func(ctx context.Context, _ *toolrouter.CallRequest) (*toolrouter.Result, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return &toolrouter.Result{Success: false}, nil
	}
}

func TestCancelReachesTheCallOnThisReplica(t *testing.T) {
	t.Parallel()
	causes := make(chan error, 1)
	r := &task.Runner{Store: memory.New(), Heartbeat: time.Hour, Router: blocking(causes)}
	tk, _, err := r.Start(alice(), call("slow"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Cancel(alice(), tk.TaskID)
	if err != nil || got.Status != toolrouter.TaskCancelled {
		t.Fatalf("Cancel = %+v, %v", got, err)
	}
	if c := <-causes; !errors.Is(c, task.ErrCancelled) {
		t.Fatalf("the call's context ended with %v", c)
	}
}

func TestCancelFromAnotherReplicaReachesTheCallAtItsHeartbeat(t *testing.T) {
	t.Parallel()
	st := memory.New()
	causes := make(chan error, 1)
	one := &task.Runner{Store: st, Heartbeat: 5 * time.Millisecond, Router: blocking(causes)}
	two := &task.Runner{Store: st, Heartbeat: time.Hour}
	tk, done, err := one.Start(alice(), call("slow"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := two.Cancel(alice(), tk.TaskID); err != nil || got.Status.Terminal() || !got.CancelRequested {
		t.Fatalf("Cancel on replica two = %+v, %v; want the request recorded", got, err)
	}
	if c := <-causes; !errors.Is(c, task.ErrCancelled) {
		t.Fatalf("the call's context ended with %v", c)
	}
	<-done
	if got, _ := two.Get(alice(), tk.TaskID); got.Status != toolrouter.TaskCancelled {
		t.Fatalf("after the cancel: %+v", got)
	}
}

// TestReplicaLostFailsItsTasks: a task whose replica stopped heartbeating
// is failed, saying why, by the next poll on another replica.
func TestReplicaLostFailsItsTasks(t *testing.T) {
	t.Parallel()
	st := memory.New()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	stuck := make(chan struct{})
	defer close(stuck)
	dead := &task.Runner{Store: st, Heartbeat: time.Hour, Now: clock, Router: routerFunc(func(context.Context, *toolrouter.CallRequest) (*toolrouter.Result, error) {
		<-stuck // never ends while the test runs: its replica "died"
		return &toolrouter.Result{}, nil
	})}
	tk, _, err := dead.Start(alice(), call("slow"))
	if err != nil {
		t.Fatal(err)
	}
	other := &task.Runner{Store: st, Heartbeat: time.Second, Now: clock}
	if got, _ := other.Get(alice(), tk.TaskID); got.Status != toolrouter.TaskWorking {
		t.Fatalf("a fresh task = %+v", got)
	}
	mu.Lock()
	now = now.Add(3*time.Second + time.Millisecond) // 3 heartbeats of silence
	mu.Unlock()
	got, err := other.Get(alice(), tk.TaskID)
	if err != nil || got.Status != toolrouter.TaskFailed || got.Error != task.ReplicaLost {
		t.Fatalf("a silent task = %+v, %v; want failed, %q", got, err, task.ReplicaLost)
	}
}

// results answers a held call's result.
type results struct{ res *toolrouter.Result }

func (r *results) Result(context.Context, string, string) (*toolrouter.Result, error) {
	return r.res, nil
}

func TestHeldCallIsInputRequiredUntilDecided(t *testing.T) {
	t.Parallel()
	decided := &results{res: &toolrouter.Result{ToolCallID: "tc_9", Status: toolrouter.ResultAwaitingApproval}}
	r := &task.Runner{Store: memory.New(), Heartbeat: time.Hour, Results: decided, Router: routerFunc(func(context.Context, *toolrouter.CallRequest) (*toolrouter.Result, error) {
		return &toolrouter.Result{ToolCallID: "tc_9", Status: toolrouter.ResultAwaitingApproval, ApprovalID: "ap_1"}, nil
	})}
	tk, done, err := r.Start(alice(), call("refund"))
	if err != nil {
		t.Fatal(err)
	}
	<-done
	got, err := r.Get(alice(), tk.TaskID)
	if err != nil || got.Status != toolrouter.TaskInputRequired || got.ApprovalID != "ap_1" {
		t.Fatalf("held = %+v, %v", got, err)
	}
	decided.res = &toolrouter.Result{ToolCallID: "tc_9", Success: true, Output: []byte(`1`)}
	got, err = r.Get(alice(), tk.TaskID)
	if err != nil || got.Status != toolrouter.TaskCompleted || string(got.Result.Output) != "1" {
		t.Fatalf("after the decision = %+v, %v", got, err)
	}
}
