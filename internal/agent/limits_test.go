package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/agent"
	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// countingRuns counts what a runner writes to its store: the bytes of the
// run documents SaveRun stores and the heartbeats.
type countingRuns struct {
	*memory.Store
	saved, saves, beats atomic.Int64
	beat                chan struct{} // one send per heartbeat, when set
}

func (c *countingRuns) SaveRun(ctx context.Context, run *toolrouter.Run) error {
	b, _ := json.Marshal(run)
	c.saved.Add(int64(len(b)))
	c.saves.Add(1)
	return c.Store.SaveRun(ctx, run)
}

func (c *countingRuns) Heartbeat(ctx context.Context, id string, at time.Time) (bool, error) {
	c.beats.Add(1)
	if c.beat != nil {
		select {
		case c.beat <- struct{}{}:
		default:
		}
	}
	return c.Store.Heartbeat(ctx, id, at)
}

// A run with a large answer and many heartbeats writes its document a
// bounded number of times (start, each step, the end), not at every
// heartbeat (issue 14 item 6: a 271 KB answer wrote 340 MB).
func TestHeartbeatsDoNotRewriteTheRun(t *testing.T) {
	// In a synctest bubble the heartbeats tick on its fake clock: 50 of
	// them take no real time.
	synctest.Test(t, func(t *testing.T) {
		answer := strings.Repeat("é", 150_000) // 300 KB
		const beats = 50
		cr := &countingRuns{Store: memory.New(), beat: make(chan struct{}, 1)}
		a := &fakeAdapter{chat: func(n int, _ llm.Request) (llm.Response, error) {
			if n == 0 {
				return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "test/echo", Arguments: map[string]any{"msg": answer}}}}, nil
			}
			for range beats { // the model thinks for many heartbeats
				<-cr.beat
			}
			return llm.Response{Content: answer}, nil
		}}
		r, _ := newRunner(a, echoRouter(nil, nil))
		r.Runs, r.Heartbeat = cr, 5*time.Second // the default; fake time
		got := run(t, r, agent.Request{Prompt: "go"})
		if got.Status != toolrouter.RunCompleted || got.Content != answer {
			t.Fatalf("status %s, content %d bytes", got.Status, len(got.Content))
		}
		size, _ := json.Marshal(got)
		if cr.beats.Load() < beats {
			t.Fatalf("%d heartbeats, want >= %d", cr.beats.Load(), beats)
		}
		// Start (small), after the tool turn (one output) and at the end
		// (output and answer): about 2 documents' worth, never one per beat.
		if w := cr.saved.Load(); w > 3*int64(len(size)) {
			t.Errorf("%d heartbeats wrote %d bytes in %d saves for a %d-byte run; want <= 3x its size", cr.beats.Load(), w, cr.saves.Load(), len(size))
		}
	})
}

// A run whose answer and outputs exceed MaxRunBytes is stored truncated,
// saying so, within the cap.
func TestRunSizeIsCapped(t *testing.T) {
	big := strings.Repeat("x", 100_000)
	a := &fakeAdapter{chat: func(n int, _ llm.Request) (llm.Response, error) {
		if n == 0 {
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "test/echo", Arguments: map[string]any{"msg": big}}}}, nil
		}
		return llm.Response{Content: big + big}, nil
	}}
	r, st := newRunner(a, echoRouter(nil, nil))
	r.MaxRunBytes = 64 << 10
	got := run(t, r, agent.Request{Prompt: "go"})
	stored, err := st.GetRun(context.Background(), got.RunID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(stored)
	if int64(len(b)) > r.MaxRunBytes {
		t.Errorf("stored run is %d bytes, cap %d", len(b), r.MaxRunBytes)
	}
	if !strings.HasSuffix(stored.Content, "TOOLROUTER_MAX_RUN_BYTES]") || !strings.HasPrefix(stored.Content, "xxx") {
		t.Errorf("content not truncated with a note: %.40q…%q", stored.Content, stored.Content[max(0, len(stored.Content)-60):])
	}
	out, _ := json.Marshal(stored.ToolCalls[0].Output)
	in, _ := json.Marshal(stored.ToolCalls[0].Inputs)
	if !strings.Contains(string(out)+string(in), `"truncated":true`) {
		t.Errorf("big output kept: %.80s", out)
	}
}

// POST /runs/{id}/cancel on one replica ends a run another replica
// executes, as cancelled, at that replica's next heartbeat.
func TestCancelReachesTheReplicaRunningTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // the heartbeat ticks on the bubble's clock
		st := memory.New()
		started := make(chan struct{})
		ctxA := &blockingAdapter{started: started}
		owner, _ := newRunner(ctxA, echoRouter(nil, nil))
		other, _ := newRunner(ctxA, echoRouter(nil, nil))
		owner.Runs, other.Runs = st, st
		owner.Heartbeat = 5 * time.Second // the default; fake time makes it instant
		ctx := context.Background()
		pr, err := owner.Start(ctx, agent.Request{Prompt: "go"})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan *toolrouter.Run)
		go func() { done <- owner.Execute(ctx, pr, nil) }()
		<-started
		got, running, err := other.Cancel(ctx, pr.Run.RunID)
		if err != nil || !running || got.Status != toolrouter.RunRunning {
			t.Fatalf("Cancel = %v %v %v; want the running run", got, running, err)
		}
		end := <-done
		if end.Status != toolrouter.RunCancelled || end.Error == nil || !strings.Contains(*end.Error, "cancel") {
			t.Fatalf("run ended %s (%v), want cancelled", end.Status, end.Error)
		}
		stored, _ := st.GetRun(ctx, pr.Run.RunID)
		if stored.Status != toolrouter.RunCancelled {
			t.Fatalf("stored status %s", stored.Status)
		}
		// Cancelling a finished run answers it as it is.
		if got, running, err := other.Cancel(ctx, pr.Run.RunID); err != nil || running || got.Status != toolrouter.RunCancelled {
			t.Fatalf("second Cancel = %v %v %v", got, running, err)
		}
		_, _, err = other.Cancel(ctx, "run_unknown")
		if toolrouter.ErrorCode(err) != toolrouter.ENOTFOUND {
			t.Fatalf("unknown run: %v", err)
		}
	})
}

// blockingAdapter's model never answers: its calls end with their context.
type blockingAdapter struct {
	fakeAdapter
	started chan struct{}
	once    atomic.Bool
}

func (b *blockingAdapter) Chat(ctx context.Context, _ llm.Request) (llm.Response, error) {
	if b.once.CompareAndSwap(false, true) {
		close(b.started)
	}
	<-ctx.Done()
	return llm.Response{}, context.Cause(ctx)
}

// A client with MaxActive runs executing gets 429 (ETOOMANY) for the next
// until one ends.
func TestMaxActiveRuns(t *testing.T) {
	b := &blockingAdapter{started: make(chan struct{})}
	r, _ := newRunner(b, echoRouter(nil, nil))
	r.MaxActive = 1
	ctx, cancel := context.WithCancel(context.Background())
	pr, err := r.Start(ctx, agent.Request{Prompt: "one"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *toolrouter.Run)
	go func() { done <- r.Execute(ctx, pr, nil) }()
	_, err = r.Start(context.Background(), agent.Request{Prompt: "two"})
	if toolrouter.ErrorCode(err) != toolrouter.ETOOMANY || !strings.Contains(err.Error(), "TOOLROUTER_MAX_ACTIVE_RUNS") {
		t.Fatalf("second run: %v, want too_many naming TOOLROUTER_MAX_ACTIVE_RUNS", err)
	}
	cancel()
	<-done
	if _, err := r.Start(context.Background(), agent.Request{Prompt: "three"}); err != nil {
		t.Fatalf("after the first ended: %v", err)
	}
}

// lostRuns is a store where another replica wins every transition of a
// paused run, and which fails every read after that.
type lostRuns struct {
	*memory.Store
	lost atomic.Bool
}

func (l *lostRuns) TransitionRun(context.Context, *toolrouter.Run, toolrouter.RunStatus) (bool, error) {
	l.lost.Store(true)
	return false, nil
}

func (l *lostRuns) GetRun(ctx context.Context, id string) (*toolrouter.Run, error) {
	if l.lost.Load() {
		return nil, errors.New("store unreachable")
	}
	return l.Store.GetRun(ctx, id)
}

// Cancelling a paused run that another replica resumed meanwhile, when
// the store then fails to read it, is the store's error (503), not a nil
// run dereferenced (a panic, 500).
func TestCancelLostTransitionThenStoreFails(t *testing.T) {
	r, st := newRunner(&fakeAdapter{}, echoRouter(nil, nil))
	lr := &lostRuns{Store: st}
	r.Runs = lr
	ctx := context.Background()
	paused := &toolrouter.Run{RunID: "run_paused", Status: toolrouter.RunAwaitingApproval, CreatedAt: time.Now()}
	if err := st.SaveRun(ctx, paused); err != nil {
		t.Fatal(err)
	}
	got, running, err := r.Cancel(ctx, paused.RunID)
	if toolrouter.ErrorCode(err) != toolrouter.EUNAVAILABLE || got != nil || running {
		t.Fatalf("Cancel = %v %v %v; want the store's error (unavailable)", got, running, err)
	}
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}
