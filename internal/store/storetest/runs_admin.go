package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// runAdminTests are the contract of store.RunAdmin (docs/runs.md "Runs: limits,
// cancellation and size", "Retention").
var runAdminTests = []struct {
	name string
	f    func(t *testing.T, b Backend, open func() store.Store, clk *Clock)
}{
	{"HeartbeatTouchesOnlyTheHeartbeat", heartbeatTouchesOnlyTheHeartbeat},
	{"CancelIsSeenByTheReplicaRunningTheRun", cancelIsSeenByTheReplicaRunningTheRun},
	{"RetentionDeletesExpiredResultsAndFinishedRunsInBatches", retentionDeletesInBatches},
	{"PausedRunIsResumedOnceAndKeepsItsState", pausedRunIsResumedOnce},
}

// pausedRunIsResumedOnce: a run stored awaiting approval keeps its resume
// state, survives retention, and of two replicas claiming it (two store
// handles) exactly one wins.
func pausedRunIsResumedOnce(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	s1, s2 := open(), open()
	run := runningRun("run_paused", clk.Now())
	run.Status, run.Resume = toolrouter.RunAwaitingApproval, []byte(`{"iteration":1}`)
	run.PendingApprovals = []toolrouter.PendingApproval{{ApprovalID: "ap_1", ToolCallID: "tc_1", ToolName: "billing/refund"}}
	if err := s1.SaveRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if n, err := s1.DeleteRunsBefore(ctx, clk.Now().Add(time.Hour), 10); err != nil || n != 0 {
		t.Fatalf("retention deleted %d paused runs (%v)", n, err)
	}
	got, err := s2.GetRun(ctx, run.RunID)
	if err != nil || got.Status != toolrouter.RunAwaitingApproval || string(got.Resume) != `{"iteration":1}` || len(got.PendingApprovals) != 1 {
		t.Fatalf("paused run read back: %v %+v", err, got)
	}
	wins := 0
	for i, s := range []store.Store{s1, s2} {
		claim := *got
		claim.Status, claim.Owner, claim.Resume, claim.PendingApprovals = toolrouter.RunRunning, fmt.Sprintf("replica-%d", i), nil, nil
		ok, err := s.TransitionRun(ctx, &claim, toolrouter.RunAwaitingApproval)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			wins++
		}
	}
	if wins != 1 {
		t.Fatalf("%d replicas resumed the paused run, want 1", wins)
	}
	got, err = s1.GetRun(ctx, run.RunID)
	if err != nil || got.Status != toolrouter.RunRunning || got.Owner != "replica-0" || got.Resume != nil {
		t.Fatalf("resumed run: %v %+v", err, got)
	}
}

func runningRun(id string, at time.Time) *toolrouter.Run {
	r := sampleRun(id, "plan-admin", at)
	r.Status, r.TerminatedReason, r.TerminatedByLimit, r.FinishedAt = toolrouter.RunRunning, nil, false, nil
	r.HeartbeatAt = at
	return r
}

func heartbeatTouchesOnlyTheHeartbeat(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	s := open()
	run := runningRun("run_hb", clk.Now())
	if err := s.SaveRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	at := clk.Now().Add(7 * time.Second)
	cancel, err := s.Heartbeat(ctx, run.RunID, at)
	if err != nil || cancel {
		t.Fatalf("Heartbeat = %v, %v; want false, nil", cancel, err)
	}
	got, err := s.GetRun(ctx, run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	want := *run
	want.HeartbeatAt = at
	wantRun(t, got, &want)

	// A finished run keeps its heartbeat; an unknown one is no error.
	done := sampleRun("run_hb_done", "plan-admin", clk.Now())
	if err := s.SaveRun(ctx, done); err != nil {
		t.Fatal(err)
	}
	if cancel, err := s.Heartbeat(ctx, done.RunID, at.Add(time.Hour)); err != nil || cancel {
		t.Fatalf("Heartbeat(finished) = %v, %v", cancel, err)
	}
	got, err = s.GetRun(ctx, done.RunID)
	if err != nil {
		t.Fatal(err)
	}
	wantRun(t, got, done)
	if cancel, err := s.Heartbeat(ctx, "run_unknown", at); err != nil || cancel {
		t.Fatalf("Heartbeat(unknown) = %v, %v", cancel, err)
	}
}

func cancelIsSeenByTheReplicaRunningTheRun(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	rs := replicas(open, 2)
	owner, other := rs[0], rs[1]
	run := runningRun("run_cancel", clk.Now())
	if err := owner.SaveRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	got, err := other.RequestCancel(ctx, run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != toolrouter.RunRunning || got.RunID != run.RunID {
		t.Fatalf("RequestCancel returned %s %s, want the running run", got.RunID, got.Status)
	}
	// A step saved meanwhile does not lose the request.
	run.Iterations = 3
	if err := owner.SaveRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if cancel, err := owner.Heartbeat(ctx, run.RunID, clk.Now()); err != nil || !cancel {
		t.Fatalf("owner's Heartbeat = %v, %v; want true (cancel requested)", cancel, err)
	}
	// A finished run is answered as it is.
	done := sampleRun("run_cancel_done", "plan-admin", clk.Now())
	if err := owner.SaveRun(ctx, done); err != nil {
		t.Fatal(err)
	}
	got, err = other.RequestCancel(ctx, done.RunID)
	if err != nil {
		t.Fatal(err)
	}
	wantRun(t, got, done)
	_, err = other.RequestCancel(ctx, "run_unknown")
	wantCode(t, err, toolrouter.ENOTFOUND)
}

func retentionDeletesInBatches(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	s := open()
	const week = 7 * 24 * time.Hour
	for i := range 7 {
		if err := s.SaveResult(ctx, sampleResult(fmt.Sprintf("tc_old_%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	old := clk.Now()
	for i := range 5 {
		if err := s.SaveRun(ctx, sampleRun(fmt.Sprintf("run_old_%d", i), "plan-ret", old)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveRun(ctx, runningRun("run_old_running", old)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(week + time.Hour)
	for i := range 2 {
		if err := s.SaveResult(ctx, sampleResult(fmt.Sprintf("tc_new_%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveRun(ctx, sampleRun("run_new", "plan-ret", clk.Now())); err != nil {
		t.Fatal(err)
	}
	cutoff := clk.Now().Add(-week)
	for _, want := range []int{3, 3, 1, 0} {
		n, err := s.DeleteResultsBefore(ctx, cutoff, 3)
		if err != nil || n != want {
			t.Fatalf("DeleteResultsBefore = %d, %v; want %d", n, err, want)
		}
	}
	for _, want := range []int{2, 2, 1, 0} {
		n, err := s.DeleteRunsBefore(ctx, cutoff, 2)
		if err != nil || n != want {
			t.Fatalf("DeleteRunsBefore = %d, %v; want %d", n, err, want)
		}
	}
	for i := range 7 {
		_, err := s.GetResult(ctx, fmt.Sprintf("tc_old_%d", i))
		wantCode(t, err, toolrouter.ENOTFOUND)
	}
	for i := range 2 {
		if _, err := s.GetResult(ctx, fmt.Sprintf("tc_new_%d", i)); err != nil {
			t.Errorf("recent result deleted: %v", err)
		}
	}
	for _, id := range []string{"run_old_running", "run_new"} {
		if _, err := s.GetRun(ctx, id); err != nil {
			t.Errorf("%s deleted: %v", id, err)
		}
	}
	_, err := s.GetRun(ctx, "run_old_0")
	wantCode(t, err, toolrouter.ENOTFOUND)
}
