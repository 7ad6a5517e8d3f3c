package httpapi_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/httpapi"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// failingKeys is a key store whose CompleteKey fails while broken is set.
type failingKeys struct {
	*memory.Store
	broken atomic.Bool
}

func (f *failingKeys) CompleteKey(ctx context.Context, key string, resp []byte, ttl time.Duration) error {
	if f.broken.Load() {
		return errors.New("disk full")
	}
	return f.Store.CompleteKey(ctx, key, resp, ttl)
}

// TestKeyedAnswerIsStoredBeforeItIsSent: when the answer of a keyed
// request cannot be stored, the client gets a 503, not the 200; a retry
// with the key is told the outcome is unknown once the lease lapses, and
// the tool is never run a second time (issue 14 item 1).
func TestKeyedAnswerIsStoredBeforeItIsSent(t *testing.T) {
	clk := time.Now()
	var now atomic.Pointer[time.Time]
	now.Store(&clk)
	keys := &failingKeys{Store: memory.New()}
	keys.Store.Now = func() time.Time { return *now.Load() }
	s := newServer(t, func(d *httpapi.Deps) { d.Keys = keys })
	var runs atomic.Int32
	s.router.route = func(_ context.Context, planID string, _ any, _ map[string]any) (*toolrouter.Result, error) {
		runs.Add(1)
		return &toolrouter.Result{ToolCallID: "tc_000000000000000000000000", PlanID: planID, Success: true}, nil
	}
	keys.broken.Store(true)
	w := s.serve("POST", "/route", echoCall, "Idempotency-Key", "k-fail")
	if w.Code != 503 || strings.Contains(w.Body.String(), "tc_000000000000000000000000") {
		t.Fatalf("answer not stored: %d %s, want 503 without the result", w.Code, w.Body)
	}
	keys.broken.Store(false)
	later := clk.Add(time.Minute) // the lease (10s) lapsed: nobody renews it
	now.Store(&later)
	w = s.serve("POST", "/route", echoCall, "Idempotency-Key", "k-fail")
	if w.Code != 409 || !strings.Contains(w.Body.String(), "not run again") {
		t.Errorf("retry: %d %s, want 409 outcome unknown", w.Code, w.Body)
	}
	w = s.serve("POST", "/route", echoCall, "Idempotency-Key", "k-fail")
	if w.Code != 409 || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("second retry: %d %v, want the stored 409 replayed", w.Code, w.Header())
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	// A stored answer is sent, and replayed.
	w = s.serve("POST", "/route", echoCall, "Idempotency-Key", "k-ok")
	if w.Code != 200 || !strings.Contains(w.Body.String(), "tc_000000000000000000000000") {
		t.Fatalf("stored: %d %s", w.Code, w.Body)
	}
	if w = s.serve("POST", "/route", echoCall, "Idempotency-Key", "k-ok"); w.Code != 200 || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %d %v", w.Code, w.Header())
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the tool ran %d times, want 2", n)
	}
}
