package httpapi

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// awaitFake is a held call's result as a store shows it, with a decision
// watch as router.Router has.
type awaitFake struct {
	Approvals
	reads   atomic.Int32
	mu      sync.Mutex
	final   bool
	decided chan struct{}
}

func (f *awaitFake) Result(ctx context.Context, id, owner string) (*toolrouter.Result, error) {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.final {
		return &toolrouter.Result{ToolCallID: id, Success: true}, nil
	}
	return &toolrouter.Result{ToolCallID: id, Status: toolrouter.ResultAwaitingApproval}, nil
}

func (f *awaitFake) WatchDecision(ctx context.Context, id string) (<-chan struct{}, func()) {
	return f.decided, func() {}
}

// A stream waiting for a decision does not poll the store four times a
// second (issue 21 item 5: 300 idle streams cost ~27 % of a core); a
// decision made in this process wakes it at once.
func TestAwaitDecisionWokenNotPolling(t *testing.T) {
	f := &awaitFake{decided: make(chan struct{})}
	done := make(chan *toolrouter.Result, 1)
	go func() { done <- awaitDecision(context.Background(), f, "tc_1") }()
	// Idle for a second: the first read, then none until the slow poll.
	idle := time.NewTimer(time.Second)
	select {
	case r := <-done:
		t.Fatalf("returned before the decision: %+v", r)
	case <-idle.C:
	}
	if n := f.reads.Load(); n > 1 {
		t.Errorf("%d store reads in a second of waiting, want 1 (polling every %s)", n, approvalPoll)
	}
	f.mu.Lock()
	f.final = true
	f.mu.Unlock()
	decidedAt := time.Now()
	close(f.decided)
	select {
	case r := <-done:
		if r == nil || !r.Success {
			t.Fatalf("result %+v", r)
		}
		if took := time.Since(decidedAt); took > 500*time.Millisecond {
			t.Errorf("woken %s after the decision", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not woken by the decision")
	}
}
