package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

var taskTests = []struct {
	name string
	f    func(t *testing.T, b Backend, open func() store.Store, clk *Clock)
}{
	{"TasksAreSharedAndEndOnce", tasksAreSharedAndEndOnce},
	{"StaleTasksFailAndExpire", staleTasksFailAndExpire},
	{"ReopenedStoreKeepsTasks", reopenedStoreKeepsTasks},
}

func sampleTask(id string, at time.Time) *toolrouter.Task {
	at = at.UTC().Truncate(time.Millisecond)
	return &toolrouter.Task{TaskID: id, Status: toolrouter.TaskWorking, Client: "alice", Entry: toolrouter.EntryRoute,
		ToolName: "slow", PlanID: "p", CreatedAt: at, UpdatedAt: at, TTLMillis: 60000, PollIntervalMillis: 1000}
}

// tasksAreSharedAndEndOnce: a task created on one replica is read, beaten,
// cancelled and finished from another; a terminal task never changes.
func tasksAreSharedAndEndOnce(t *testing.T, _ Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	if _, err := ss[0].GetTask(ctx, "none"); toolrouter.ErrorCode(err) != toolrouter.ENOTFOUND {
		t.Fatalf("GetTask of an unknown task: %v, want not_found", err)
	}
	if err := ss[0].CreateTask(ctx, sampleTask("t1", clk.Now()), clk.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := ss[1].GetTask(ctx, "t1")
	if err != nil || got.Client != "alice" || got.Status != toolrouter.TaskWorking || got.ToolName != "slow" || got.CancelRequested {
		t.Fatalf("GetTask on the other replica = %+v, %v", got, err)
	}
	clk.Advance(time.Second)
	cancel, live, err := ss[0].BeatTask(ctx, "t1", clk.Now(), &toolrouter.TaskProgress{Progress: 1, Total: 4, Message: "one"}, "", "")
	if err != nil || cancel || !live {
		t.Fatalf("BeatTask = %v, %v, %v; want no cancel, live", cancel, live, err)
	}
	if _, _, err := ss[0].BeatTask(ctx, "t1", clk.Now(), nil, toolrouter.TaskInputRequired, "awaiting approval a1"); err != nil {
		t.Fatal(err)
	}
	got, _ = ss[1].GetTask(ctx, "t1")
	if got.Progress == nil || got.Progress.Progress != 1 || got.Progress.Message != "one" || got.Status != toolrouter.TaskInputRequired || got.StatusMessage != "awaiting approval a1" {
		t.Fatalf("after the beats: %+v (progress %+v)", got, got.Progress)
	}
	if ok, err := ss[1].RequestTaskCancel(ctx, "t1", clk.Now()); err != nil || !ok {
		t.Fatalf("RequestTaskCancel = %v, %v", ok, err)
	}
	if cancel, live, _ = ss[0].BeatTask(ctx, "t1", clk.Now(), nil, toolrouter.TaskWorking, ""); !cancel || !live {
		t.Fatalf("BeatTask after the cancel request = %v, %v; want the request seen", cancel, live)
	}
	done := sampleTask("t1", clk.Now())
	done.Status, done.StatusMessage, done.UpdatedAt = toolrouter.TaskCancelled, "cancelled by the client", clk.Now().UTC().Truncate(time.Millisecond)
	if ok, err := ss[0].SaveTask(ctx, done); err != nil || !ok {
		t.Fatalf("SaveTask = %v, %v", ok, err)
	}
	again := *done
	again.Status = toolrouter.TaskCompleted
	if ok, err := ss[1].SaveTask(ctx, &again); err != nil || ok {
		t.Fatalf("SaveTask of a terminal task = %v, %v; want refused", ok, err)
	}
	if ok, _ := ss[1].RequestTaskCancel(ctx, "t1", clk.Now()); ok {
		t.Fatal("RequestTaskCancel of a terminal task took effect")
	}
	if _, live, _ := ss[1].BeatTask(ctx, "t1", clk.Now(), nil, toolrouter.TaskWorking, ""); live {
		t.Fatal("BeatTask of a terminal task reports it live")
	}
	got, _ = ss[1].GetTask(ctx, "t1")
	if got.Status != toolrouter.TaskCancelled || got.StatusMessage != "cancelled by the client" {
		t.Fatalf("terminal task = %+v", got)
	}
}

// staleTasksFailAndExpire: a task whose heartbeat stopped ends failed with
// the reason given; tasks last updated before the retention are deleted,
// not those still beating.
func staleTasksFailAndExpire(t *testing.T, _ Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	s := open()
	start := clk.Now()
	for _, id := range []string{"old", "beating", "held"} {
		if err := s.CreateTask(ctx, sampleTask(id, start), start); err != nil {
			t.Fatal(err)
		}
	}
	// A held call runs nowhere: it never heartbeats, and is not stale.
	held := sampleTask("held", start)
	held.Status, held.ApprovalID = toolrouter.TaskInputRequired, "ap_1"
	if ok, err := s.SaveTask(ctx, held); err != nil || !ok {
		t.Fatalf("SaveTask of a held call = %v, %v", ok, err)
	}
	clk.Advance(time.Minute)
	if _, _, err := s.BeatTask(ctx, "beating", clk.Now(), nil, "", ""); err != nil {
		t.Fatal(err)
	}
	n, err := s.FailStaleTasks(ctx, start.Add(30*time.Second), clk.Now(), "the replica running it stopped")
	if err != nil || n != 1 {
		t.Fatalf("FailStaleTasks = %d, %v; want 1", n, err)
	}
	old, _ := s.GetTask(ctx, "old")
	if old.Status != toolrouter.TaskFailed || old.Error != "the replica running it stopped" {
		t.Fatalf("stale task = %+v", old)
	}
	if got, _ := s.GetTask(ctx, "beating"); got.Status != toolrouter.TaskWorking {
		t.Fatalf("beating task = %+v", got)
	}
	if got, _ := s.GetTask(ctx, "held"); got.Status != toolrouter.TaskInputRequired || got.ApprovalID != "ap_1" {
		t.Fatalf("held task = %+v", got)
	}
	clk.Advance(time.Minute)
	if _, _, err := s.BeatTask(ctx, "beating", clk.Now(), nil, "", ""); err != nil {
		t.Fatal(err)
	}
	n, err = s.DeleteTasksBefore(ctx, clk.Now().Add(-time.Second), 10)
	if err != nil || n != 2 {
		t.Fatalf("DeleteTasksBefore = %d, %v; want the failed and the held task (the other still beats)", n, err)
	}
	if _, err := s.GetTask(ctx, "old"); toolrouter.ErrorCode(err) != toolrouter.ENOTFOUND {
		t.Fatalf("deleted task: %v", err)
	}
}

// reopenedStoreKeepsTasks: a durable store keeps a finished task and its
// result across a restart.
func reopenedStoreKeepsTasks(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	if !b.Durable {
		t.Skip("not durable")
	}
	ctx := context.Background()
	s := open()
	if err := s.CreateTask(ctx, sampleTask("kept", clk.Now()), clk.Now()); err != nil {
		t.Fatal(err)
	}
	done := sampleTask("kept", clk.Now())
	done.Status = toolrouter.TaskCompleted
	done.Result = &toolrouter.Result{ToolCallID: "tc1", Success: true, Output: []byte(`{"ok":true}`)}
	if ok, err := s.SaveTask(ctx, done); err != nil || !ok {
		t.Fatalf("SaveTask = %v, %v", ok, err)
	}
	if err := s.Close(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	got, err := open().GetTask(ctx, "kept")
	if err != nil || got.Status != toolrouter.TaskCompleted || got.Result == nil || got.Result.ToolCallID != "tc1" || string(got.Result.Output) != `{"ok":true}` {
		t.Fatalf("after reopening: %+v, %v", got, err)
	}
}
