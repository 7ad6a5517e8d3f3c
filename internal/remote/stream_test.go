package remote_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// streamTool serves the event stream body as a text/event-stream 200.
func streamTool(t *testing.T, body string) *toolrouter.Tool {
	t.Helper()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		_, _ = w.Write([]byte(body))
	})
	return newTool(srv.URL)
}

type progressRec struct {
	mu  sync.Mutex
	got []string
}

func (p *progressRec) fn(progress, total float64, message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, fmt.Sprintf("%g/%g %s", progress, total, message))
}

func (p *progressRec) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.got, "|")
}

func TestCallEventStream(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body       string
		wantOut, wantErr string
		wantCat          toolrouter.ErrorCategory
		wantProgress     string
		wantAnswered     bool
	}{
		{
			name: "progress in order then result",
			body: ": comment\n\nevent: progress\ndata: {\"progress\": 1, \"total\": 3, \"message\": \"one\"}\n\n" +
				"event: progress\r\ndata: {\"progress\": 2}\r\n\r\n" +
				"event: progress\rdata: {\"progress\": 3, \"total\": 3}\r\r" +
				"id: 7\nevent: result\ndata: {\"a\":\ndata: [1, 2]}\n\n",
			wantOut: "{\"a\":\n[1, 2]}", wantProgress: "1/3 one|2/0 |3/3 ", wantAnswered: true,
		},
		{
			name:    "result without progress, leading BOM, unknown events ignored",
			body:    "\uFEFFevent: other\ndata: x\n\ndata: plain message\n\nevent: result\ndata:{\"ok\":true}\n\n",
			wantOut: `{"ok":true}`, wantAnswered: true,
		},
		{
			name:    "empty result is null",
			body:    "event: result\ndata:\n\n",
			wantOut: `null`, wantAnswered: true,
		},
		{
			name:    "error event",
			body:    "event: progress\ndata: {\"progress\": 1}\n\nevent: error\ndata: {\"error\": \"quota exhausted\"}\n\n",
			wantErr: "quota exhausted", wantCat: toolrouter.CategoryResource, wantProgress: "1/0 ", wantAnswered: true,
		},
		{
			name:    "error event without JSON",
			body:    "event: error\ndata: boom\n\n",
			wantErr: "boom", wantCat: toolrouter.CategoryExecution,
		},
		{
			name:    "stream without a result",
			body:    "event: progress\ndata: {\"progress\": 1}\n\n",
			wantErr: "tool's event stream ended without a result or error event", wantCat: toolrouter.CategoryExecution, wantProgress: "1/0 ",
		},
		{
			name:    "result not followed by a blank line is not dispatched",
			body:    "event: result\ndata: {}",
			wantErr: "tool's event stream ended without a result or error event", wantCat: toolrouter.CategoryExecution,
		},
		{
			name:    "result that is not JSON",
			body:    "event: result\ndata: nope\n\n",
			wantErr: "tool returned a non-JSON reply: nope", wantCat: toolrouter.CategoryParse,
		},
		{
			name: "malformed progress ignored",
			body: "event: progress\ndata: nope\n\n" +
				"event: progress\ndata: {\"total\": 1}\n\n" +
				"event: progress\ndata: {\"progress\": \"1\"}\n\n" +
				"event: progress\ndata: {\"progress\": 1, \"total\": -1}\n\n" +
				"event: progress\ndata: {\"progress\": 1e999}\n\n" +
				"event: progress\ndata: {\"progress\": 1, \"message\": 5}\n\n" +
				"event: progress\ndata: {\"progress\": 0.5, \"message\": \"" + strings.Repeat("é", 600) + "\"}\n\n" +
				"event: result\ndata: 1\n\n",
			wantOut: "1", wantProgress: "0.5/0 " + strings.Repeat("é", 512), wantAnswered: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec progressRec
			c := newClient(t, remote.Options{})
			out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: streamTool(t, tc.body), Progress: rec.fn})
			if string(out.Output) != tc.wantOut || out.Err != tc.wantErr || out.Category != tc.wantCat {
				t.Fatalf("outcome = %q, %q (%s), want %q, %q (%s)", out.Output, out.Err, out.Category, tc.wantOut, tc.wantErr, tc.wantCat)
			}
			if out.Answered != tc.wantAnswered || out.Status != http.StatusOK {
				t.Errorf("answered %v status %d, want %v 200", out.Answered, out.Status, tc.wantAnswered)
			}
			if got := rec.String(); got != tc.wantProgress {
				t.Errorf("progress = %q, want %q", got, tc.wantProgress)
			}
		})
	}
}

func TestCallEventStreamWithoutProgressFunc(t *testing.T) {
	t.Parallel()
	c := newClient(t, remote.Options{})
	out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: streamTool(t, "event: progress\ndata: {\"progress\": 1}\n\nevent: result\ndata: 2\n\n")})
	if string(out.Output) != "2" || out.Err != "" {
		t.Fatalf("outcome = %q %q", out.Output, out.Err)
	}
}

func TestCallEventStreamTooLarge(t *testing.T) {
	t.Parallel()
	const limit = 1 << 10
	cases := map[string]string{
		"many progress events": strings.Repeat("event: progress\ndata: {\"progress\": 1}\n\n", 100) + "event: result\ndata: 1\n\n",
		"one large result":     "event: result\ndata: \"" + strings.Repeat("x", limit) + "\"\n\n",
		"endless line":         strings.Repeat("x", 4*limit),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, remote.Options{MaxReplyBytes: limit})
			out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: streamTool(t, body)})
			if want := fmt.Sprintf("tool reply exceeds %d bytes", limit); out.Err != want || out.Category != toolrouter.CategoryResource {
				t.Fatalf("outcome = %q (%s), want %q", out.Err, out.Category, want)
			}
		})
	}
}

func TestCallEventStreamResultTakenFromBudget(t *testing.T) {
	t.Parallel()
	c := newClient(t, remote.Options{})
	tool := streamTool(t, "event: result\ndata: \"0123456789\"\n\n")
	budget := toolrouter.NewBudget(100)
	out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Batch: budget})
	if out.Err != "" || !out.Budgeted {
		t.Fatalf("outcome = %q budgeted %v", out.Err, out.Budgeted)
	}
	small := toolrouter.NewBudget(5)
	if out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Batch: small}); out.Err == "" || out.Category != toolrouter.CategoryResource {
		t.Fatalf("over budget: outcome = %q (%s), want a resource failure", out.Err, out.Category)
	}
}

// A call cancelled mid-stream stops reading and closes the connection: the
// tool sees its request's context done.
func TestCallEventStreamCancelled(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: progress\ndata: {\"progress\": 1, \"total\": 2}\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newClient(t, remote.Options{})
	out := c.Call(ctx, toolrouter.ExecRequest{Tool: newTool(srv.URL), Progress: func(p, total float64, _ string) {
		if p == 1 && total == 2 {
			cancel() // cancelled once the first progress arrived
		}
	}})
	if out.Err != "call cancelled: context canceled" || out.Category != toolrouter.CategoryExecution {
		t.Fatalf("outcome = %q (%s)", out.Err, out.Category)
	}
	<-gone
}

// The tool's timeout applies mid-stream.
func TestCallEventStreamTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: progress\ndata: {\"progress\": 1}\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	tool := newTool(srv.URL)
	tool.Timeout = 100 * time.Millisecond
	c := newClient(t, remote.Options{})
	out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: tool})
	if out.Err != "tool timed out after 100ms" || out.Category != toolrouter.CategoryTimeout {
		t.Fatalf("outcome = %q (%s)", out.Err, out.Category)
	}
}
