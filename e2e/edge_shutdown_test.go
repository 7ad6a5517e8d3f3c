package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/poll"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// sseClient reads a stream event by event.
type sseClient struct {
	resp   *http.Response
	sc     *bufio.Scanner
	events []sseEvent
}

// openStream POSTs body to url with Accept: text/event-stream.
func openStream(t *testing.T, client *http.Client, url string, body any) *sseClient {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &sseClient{resp: resp, sc: sc}
}

// next returns the next event, or false at the end of the stream.
func (c *sseClient) next() (sseEvent, bool) {
	var cur sseEvent
	for c.sc.Scan() {
		line := c.sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data)
		case line == "" && cur.Event != "":
			c.events = append(c.events, cur)
			return cur, true
		}
	}
	return cur, false
}

// until reads events until one satisfies ok.
func (c *sseClient) until(t *testing.T, ok func(sseEvent) bool) {
	t.Helper()
	for {
		e, more := c.next()
		if !more {
			t.Fatalf("stream ended before the awaited event; got %v", c.events)
		}
		if ok(e) {
			return
		}
	}
}

// rest reads the stream to its end and returns its last event.
func (c *sseClient) rest() sseEvent {
	defer c.resp.Body.Close()
	for {
		if _, more := c.next(); !more {
			break
		}
	}
	if len(c.events) == 0 {
		return sseEvent{}
	}
	return c.events[len(c.events)-1]
}

// TestEdgeShutdownFinishesStreams: SIGTERM while a streaming /route and a
// streaming /runs are in flight stops new connections, lets both streams
// run to their final event, then exits 0.
func TestEdgeShutdownFinishesStreams(t *testing.T) {
	tools := startTools(t)
	fake := startFakeLLM(t, "openai")
	rt, _ := startRouter(t, edgeRegistry(t, tools.addr, fake), "EDGE_LLM_KEY=sk-edge", "TOOLROUTER_SHUTDOWN_TIMEOUT=20s")
	fake.script(t,
		map[string]any{"tool_calls": []any{toolCall("test/slow", map[string]any{"ms": 1200})}},
		map[string]any{"text": "finished after SIGTERM"})
	client := &http.Client{}

	route := openStream(t, client, rt.URL()+"/route", map[string]any{"plan_id": "drain-sse",
		"tool_call": map[string]any{"name": "test/slow", "arguments": `{"ms":1200}`}})
	route.until(t, func(e sseEvent) bool { return e.Event == "update" && e.Data["status"] == "running" })
	run := openStream(t, client, rt.URL()+"/runs", map[string]any{"prompt": "call the slow tool", "context": map[string]any{"plan_id": "drain-run"}})
	run.until(t, func(e sseEvent) bool { return e.Event == "tool_call_started" })

	if err := rt.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// New connections are refused while the streams drain.
	poll.Until(t, 5*time.Second, func() error {
		conn, err := net.DialTimeout("tcp", rt.addr, 200*time.Millisecond)
		if err != nil {
			return nil
		}
		conn.Close()
		return errors.New("still accepting connections after SIGTERM")
	})

	last := route.rest()
	if last.Event != "result" || last.Data["success"] != true || last.Data["tool_name"] != "test/slow" {
		t.Errorf("/route stream after SIGTERM ended with %v (events %v)", last, route.events)
	}
	last = run.rest()
	if last.Event != "run_finished" || last.Data["status"] != "completed" || last.Data["content"] != "finished after SIGTERM" {
		t.Errorf("/runs stream after SIGTERM ended with %v (events %v)", last, run.events)
	}
	select {
	case <-rt.done:
	case <-time.After(15 * time.Second):
		t.Fatal("did not exit after the streams ended")
	}
	if code := rt.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestEdgeStreamDisconnectLeavesNoGoroutine: clients that hang up on
// /route and /runs streams mid-call leave nothing running in the binary
// (go_goroutines on /metrics returns to where it was).
func TestEdgeStreamDisconnectLeavesNoGoroutine(t *testing.T) {
	tools := startTools(t)
	fake := startFakeLLM(t, "openai", "-always-tool", toolrouter.ExportName(toolrouter.FormatOpenAI, "test/slow"), "-always-args", `{"ms":1000}`)
	rt, _ := startRouter(t, edgeRegistry(t, tools.addr, fake), "EDGE_LLM_KEY=sk-edge")
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	hangUp := func(path string, body any, awaited string) {
		s := openStream(t, client, rt.URL()+path, body)
		s.until(t, func(e sseEvent) bool { return e.Event == awaited })
		s.resp.Body.Close()
	}
	slow := map[string]any{"plan_id": "hangup", "tool_call": map[string]any{"name": "test/slow", "arguments": `{"ms":1000}`}}
	hangUp("/route", slow, "update") // warm up the pools
	// The baseline is taken once the warm-up's handler has ended (its
	// access log line).
	rt.waitOutput(t, "the warm-up's access log line", contains(`"path":"/route","route":"/route"`))
	baseline := goroutines(t, rt.URL())
	for i := 0; i < 10; i++ {
		hangUp("/route", slow, "update")
		hangUp("/runs", map[string]any{"prompt": "loop", "context": map[string]any{"plan_id": "hangup-run"}}, "tool_call_started")
	}
	waitGoroutines(t, rt, baseline+4)
	// The runs the clients left were cancelled and stored as failed.
	var list struct {
		Runs []struct {
			Status string `json:"status"`
		} `json:"runs"`
	}
	poll.Until(t, 10*time.Second, func() error {
		json.Unmarshal(do(t, "GET", rt.URL()+"/runs?plan_id=hangup-run", nil).Body, &list)
		for _, r := range list.Runs {
			if r.Status == "running" {
				return fmt.Errorf("runs after their clients hung up: %+v", list.Runs)
			}
		}
		if len(list.Runs) != 10 {
			return fmt.Errorf("runs after their clients hung up: %+v, want 10", list.Runs)
		}
		return nil
	})
}
