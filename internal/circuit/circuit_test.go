package circuit_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolrouterd/toolrouterd/internal/circuit"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// backend is a fake Executor: each call gets the outcome of out, and is
// counted.
type backend struct {
	mu    sync.Mutex
	calls int
	out   func(ctx context.Context) toolrouter.Outcome
}

func (b *backend) Call(ctx context.Context, _ toolrouter.ExecRequest) toolrouter.Outcome {
	b.mu.Lock()
	b.calls++
	out := b.out
	b.mu.Unlock()
	return out(ctx)
}

func (b *backend) set(out func(ctx context.Context) toolrouter.Outcome) {
	b.mu.Lock()
	b.out = out
	b.mu.Unlock()
}

func (b *backend) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

func unreachable(context.Context) toolrouter.Outcome {
	out := toolrouter.Failure(toolrouter.CategoryResource, "tool endpoint unreachable: connection refused")
	out.Attempts = 1
	return out
}

func ok(context.Context) toolrouter.Outcome {
	return toolrouter.Outcome{Output: []byte(`{}`), Answered: true}
}

func call(ex circuit.Executor, t *toolrouter.Tool) toolrouter.Outcome {
	return ex.Call(context.Background(), toolrouter.ExecRequest{Tool: t})
}

var settings = toolrouter.Circuit{Failures: 3, Cooldown: 30 * time.Second}

// TestOpensFailsFastAndCloses: 3 connection failures in a row open the
// circuit of the host; calls then fail fast as resource, saying when to
// retry, without reaching the backend; after the cool-down one trial call
// goes through (the others still fail fast) and closes it. Metrics and
// the /readyz checks follow. The clock is synctest's.
func TestOpensFailsFastAndCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		b := circuit.New(toolrouter.Circuit{Failures: 5, Cooldown: time.Minute}, reg)
		be := &backend{out: unreachable}
		ex := b.Wrap(be)
		tool := &toolrouter.Tool{Name: "a", Endpoint: "http://10.0.0.7:8080/a", Circuit: settings}
		sibling := &toolrouter.Tool{Name: "b", Endpoint: "http://10.0.0.7:8080/b", Circuit: settings}
		for range 3 {
			if out := call(ex, tool); out.Err != "tool endpoint unreachable: connection refused" {
				t.Fatalf("before opening: %+v", out)
			}
		}
		time.Sleep(10 * time.Second)
		out := call(ex, sibling) // same host: same circuit
		if out.Category != toolrouter.CategoryResource || out.Err != "circuit open for tool endpoint host 10.0.0.7:8080 after 3 consecutive connection failures or timeouts, retry after 20s" {
			t.Fatalf("open: %+v", out)
		}
		if be.count() != 3 {
			t.Errorf("the backend got %d calls, want 3 (none while open)", be.count())
		}
		wantMetric(t, reg, `toolrouter_circuit_state{kind="http",target="10.0.0.7:8080"} 2`, `toolrouter_circuit_opened_total{kind="http",target="10.0.0.7:8080"} 1`)
		if c := b.Checks(); c["circuit http 10.0.0.7:8080"] != "open, retry after 20s" {
			t.Errorf("checks = %v", c)
		}

		// After the cool-down: one trial; while it runs, others fail fast.
		time.Sleep(20*time.Second + time.Millisecond)
		release := make(chan struct{})
		be.set(func(context.Context) toolrouter.Outcome { <-release; return ok(context.Background()) })
		trial := make(chan toolrouter.Outcome)
		go func() { trial <- call(ex, tool) }()
		synctest.Wait()
		if out := call(ex, tool); out.Category != toolrouter.CategoryResource || !strings.Contains(out.Err, "a trial call is in flight") {
			t.Errorf("during the trial: %+v", out)
		}
		wantMetric(t, reg, `toolrouter_circuit_state{kind="http",target="10.0.0.7:8080"} 1`)
		close(release)
		if out := <-trial; !out.Success() {
			t.Fatalf("trial: %+v", out)
		}
		if out := call(ex, tool); !out.Success() {
			t.Errorf("closed again: %+v", out)
		}
		wantMetric(t, reg, `toolrouter_circuit_state{kind="http",target="10.0.0.7:8080"} 0`)
		if c := b.Checks(); len(c) != 0 {
			t.Errorf("checks once closed = %v", c)
		}
	})
}

// TestWhatCounts: only connection failures and timeouts count, in a row;
// an answer (even an error, even an HTTP error status) resets the count; a
// caller that went away, or an MCP call that found no session and sent
// nothing, counts for nothing; a failed trial opens it again.
func TestWhatCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := circuit.New(toolrouter.Circuit{Failures: 5, Cooldown: time.Minute}, nil)
		be := &backend{}
		ex := b.Wrap(be)
		tool := &toolrouter.Tool{Name: "m/x", MCPServer: "m", Circuit: toolrouter.Circuit{}} // the defaults
		timeout := func(context.Context) toolrouter.Outcome {
			return toolrouter.Failure(toolrouter.CategoryTimeout, "tool timed out after 1s")
		}
		status503 := func(context.Context) toolrouter.Outcome {
			return toolrouter.Outcome{Err: "tool returned 503", Category: toolrouter.CategoryResource, Status: 503, Attempts: 1}
		}
		answeredErr := func(context.Context) toolrouter.Outcome {
			return toolrouter.Outcome{Err: "no such file", Category: toolrouter.CategoryExecution, Answered: true}
		}
		seq := []func(context.Context) toolrouter.Outcome{timeout, timeout, timeout, timeout, status503, timeout, timeout, timeout, timeout, answeredErr, timeout, timeout, timeout, timeout}
		for i, f := range seq {
			be.set(f)
			if out := call(ex, tool); strings.HasPrefix(out.Err, "circuit open") {
				t.Fatalf("call %d: opened after fewer than 5 failures in a row: %+v", i, out)
			}
		}
		// The caller went away: not counted.
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		be.set(func(context.Context) toolrouter.Outcome {
			return toolrouter.Failure(toolrouter.CategoryTimeout, "call cancelled")
		})
		for range 3 {
			ex.Call(cancelled, toolrouter.ExecRequest{Tool: tool})
		}
		// An MCP call that found no session sent nothing: not counted.
		be.set(func(context.Context) toolrouter.Outcome {
			return toolrouter.Failure(toolrouter.CategoryResource, "MCP server m unavailable: not connected")
		})
		for range 6 {
			if out := call(ex, tool); strings.HasPrefix(out.Err, "circuit open") {
				t.Fatalf("opened on calls that found no session: %+v", out)
			}
		}
		be.set(unreachable)
		call(ex, tool) // the fifth in a row
		if out := call(ex, tool); out.Err != "circuit open for MCP server m after 5 consecutive connection failures or timeouts, retry after 60s" {
			t.Fatalf("after 5: %+v", out)
		}
		// A failed trial opens it again for a whole cool-down.
		time.Sleep(time.Minute + time.Second)
		if out := call(ex, tool); !strings.Contains(out.Err, "unreachable") {
			t.Fatalf("trial: %+v", out)
		}
		if out := call(ex, tool); !strings.Contains(out.Err, "retry after 60s") {
			t.Fatalf("after a failed trial: %+v", out)
		}
	})
}

// TestOff: failures 0 (per tool, or as the default) turns the breaker off.
func TestOff(t *testing.T) {
	be := &backend{out: unreachable}
	for _, tc := range []struct {
		def, tool toolrouter.Circuit
	}{
		{def: toolrouter.Circuit{Failures: 1, Cooldown: time.Minute}, tool: toolrouter.Circuit{Off: true}},
		{def: toolrouter.Circuit{Failures: 0, Cooldown: time.Minute}, tool: toolrouter.Circuit{}},
		{def: toolrouter.Circuit{Failures: 1}, tool: toolrouter.Circuit{}},
	} {
		ex := circuit.New(tc.def, nil).Wrap(be)
		tool := &toolrouter.Tool{Name: "a", Endpoint: "http://h/a", Circuit: tc.tool}
		for range 5 {
			if out := call(ex, tool); strings.HasPrefix(out.Err, "circuit") {
				t.Fatalf("%+v: %+v", tc, out)
			}
		}
	}
}

func wantMetric(t *testing.T, reg *prometheus.Registry, lines ...string) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			sb.WriteString(mf.GetName() + "{")
			for i, l := range m.Label {
				if i > 0 {
					sb.WriteString(",")
				}
				sb.WriteString(l.GetName() + `="` + l.GetValue() + `"`)
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			sb.WriteString("} " + fmt.Sprint(v) + "\n")
		}
	}
	for _, l := range lines {
		if !strings.Contains(sb.String(), l+"\n") {
			t.Errorf("metrics lack %s:\n%s", l, sb.String())
		}
	}
}

// BenchmarkGuardedCall is the cost the breaker adds to a call (the
// backend here answers at once), against the bare backend.
func BenchmarkGuardedCall(b *testing.B) {
	be := &backend{out: ok}
	tool := &toolrouter.Tool{Name: "a", Endpoint: "http://10.0.0.7:8080/a"}
	req := toolrouter.ExecRequest{Tool: tool}
	ctx := context.Background()
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			be.Call(ctx, req)
		}
	})
	b.Run("guarded", func(b *testing.B) {
		ex := circuit.New(toolrouter.Circuit{Failures: 5, Cooldown: time.Minute}, nil).Wrap(be)
		b.ReportAllocs()
		for b.Loop() {
			ex.Call(ctx, req)
		}
	})
}
