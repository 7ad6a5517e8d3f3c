package e2e_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/poll"
)

// Issue 34 item 1, the relay: a backend's own tasks (the go-sdk fixture's
// backend_task and backend_ask, which answer a declaring client's
// tools/call with a CreateTaskResult) reach the /mcp client under a
// sealed task id, polled and cancelled from any replica, surviving a
// restart of the replica that started them; another client's poll, and a
// tampered id, are not found; a client that did not declare the extension
// gets a synchronous call.

// relayPlain sends one 2026-07-28 request to url's /mcp as the client of
// key, declaring no extension.
func relayPlain(t *testing.T, url, key, method, name, params string) (map[string]any, int, string) {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}`
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + strings.TrimSuffix(params, "}") + "," + meta + "}}"
	raw := mcpPost(t, url, "", body, "Authorization", "Bearer "+key, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", method, "Mcp-Name", name)
	return raw.rpc(t)
}

// relayFixtureTasks is the fixture's GET /control/tasks.
func relayFixtureTasks(t *testing.T, fix *proc) map[string]map[string]any {
	t.Helper()
	r := do(t, "GET", "http://"+fix.addr+"/control/tasks", nil)
	var out map[string]map[string]any
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatalf("GET /control/tasks: %v %s", err, r.Body)
	}
	return out
}

func TestTasksRelayedFromBackend(t *testing.T) {
	t.Parallel()
	start := time.Now()
	fix := startFixture(t)
	reg := fmt.Sprintf(`mcp_servers:
  - name: fixture
    url: %s/mcp
    prefix: ""
    tools: [backend_task, backend_ask]
    timeout: 5m
guardrails:
  - {name: secrets, builtin: redact_secrets, tools: ["*"]}
`, fix.URL())
	db := "sqlite://" + filepath.Join(t.TempDir(), "relay.db")
	env := []string{"TOOLROUTER_API_KEYS=alice-key,mallory-key"}
	reps := startReplicas(t, 2, reg, db, env...)
	one, two := reps[0], reps[1]
	const alice, mallory = "alice-key", "mallory-key"
	ready := func(url string) {
		poll.Until(t, 20*time.Second, func() error {
			if r := do(t, "GET", url+"/schemas/unknown", nil, "Authorization", "Bearer "+alice); !strings.Contains(string(r.Body), `"backend_ask"`) {
				return fmt.Errorf("the fixture's tools are not listed yet: %s", r.Body)
			}
			return nil
		})
	}
	ready(one.URL())
	ready(two.URL())
	t.Logf("two replicas ready: %s", time.Since(start).Round(time.Millisecond))
	get := func(url, key, id string) (map[string]any, int, string) {
		return taskMCP(t, url, key, "tasks/get", id, `{"taskId":"`+id+`"}`)
	}
	until := func(url, id string, done func(map[string]any) bool) map[string]any {
		t.Helper()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(20 * time.Second)
		for {
			r, code, msg := get(url, alice, id)
			if code != 0 {
				t.Fatalf("tasks/get: %d %s", code, msg)
			}
			if done(r) {
				return r
			}
			select {
			case <-tick.C:
			case <-deadline:
				t.Fatalf("task: still %v", r)
			}
		}
	}
	status := func(s string) func(map[string]any) bool {
		return func(m map[string]any) bool { return m["status"] == s }
	}

	// A client that did not declare the extension: a synchronous call,
	// the backend not told of tasks (it would have made one).
	r, code, msg := relayPlain(t, one.URL(), alice, "tools/call", "backend_task", `{"name":"backend_task","arguments":{"ms":180000}}`)
	if b, _ := json.Marshal(r); code != 0 || r["resultType"] != "complete" || !strings.Contains(string(b), "ran without a task") {
		t.Fatalf("tools/call without the extension: %v %d %s", r, code, msg)
	}
	if n := len(relayFixtureTasks(t, fix)); n != 0 {
		t.Fatalf("the backend made %d tasks for a client that did not declare the extension", n)
	}

	// A three-minute backend task, started on one.
	r, code, msg = taskMCP(t, one.URL(), alice, "tools/call", "backend_task", `{"name":"backend_task","arguments":{"ms":180000}}`)
	long, _ := r["taskId"].(string)
	if code != 0 || r["resultType"] != "task" || r["status"] != "working" || !strings.HasPrefix(long, "trt1.") || r["pollIntervalMs"] != float64(50) {
		t.Fatalf("tools/call of the backend task: %v %d %s", r, code, msg)
	}
	backendIDs := relayFixtureTasks(t, fix)
	if len(backendIDs) != 1 {
		t.Fatalf("backend tasks: %v", backendIDs)
	}
	for id := range backendIDs {
		if strings.Contains(long, id) {
			t.Fatalf("the client's task id %s shows the backend's %s", long, id)
		}
	}
	// Polled from two.
	if r, code, msg = get(two.URL(), alice, long); code != 0 || r["status"] != "working" || r["taskId"] != long || r["resultType"] != "complete" {
		t.Fatalf("tasks/get on the other replica: %v %d %s", r, code, msg)
	}
	// Another client, and a tampered id: not found.
	for _, m := range []string{"tasks/get", "tasks/cancel"} {
		if _, code, msg := taskMCP(t, two.URL(), mallory, m, long, `{"taskId":"`+long+`"}`); code != -32602 {
			t.Fatalf("another client's %s: %d %s", m, code, msg)
		}
	}
	tampered := long[:len(long)-6] + strings.Map(func(r rune) rune {
		if r == 'A' {
			return 'B'
		}
		return 'A'
	}, long[len(long)-6:])
	if _, code, msg := get(two.URL(), alice, tampered); code != -32602 {
		t.Fatalf("a tampered task id: %d %s", code, msg)
	}

	// The replica that started it restarts; the task goes on, polled
	// from two and from the restarted one, then cancelled there.
	if err := one.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-one.done
	t.Logf("the starting replica stopped: %s", time.Since(start).Round(time.Millisecond))
	if r, code, msg = get(two.URL(), alice, long); code != 0 || r["status"] != "working" {
		t.Fatalf("tasks/get with the starting replica down: %v %d %s", r, code, msg)
	}
	again := startReplicas(t, 1, reg, db, env...)[0]
	ready(again.URL())
	t.Logf("restarted: %s", time.Since(start).Round(time.Millisecond))
	if r, code, msg = get(again.URL(), alice, long); code != 0 || r["status"] != "working" {
		t.Fatalf("tasks/get on the restarted replica: %v %d %s", r, code, msg)
	}
	if r, code, msg = taskMCP(t, again.URL(), alice, "tasks/cancel", long, `{"taskId":"`+long+`"}`); code != 0 || r["resultType"] != "complete" {
		t.Fatalf("tasks/cancel: %v %d %s", r, code, msg)
	}
	for _, bt := range relayFixtureTasks(t, fix) {
		if bt["cancelled"] != true || bt["status"] != "cancelled" {
			t.Fatalf("the backend did not see the cancel: %v", bt)
		}
	}
	until(two.URL(), long, status("cancelled"))

	// A short one completes: its result went through the pipeline as a
	// synchronous call's (the secret it returns redacted).
	r, code, msg = taskMCP(t, two.URL(), alice, "tools/call", "backend_task", `{"name":"backend_task","arguments":{"ms":100,"secret":" `+leakAWS+`"}}`)
	short, _ := r["taskId"].(string)
	if code != 0 || short == "" {
		t.Fatalf("tools/call of the short backend task: %v %d %s", r, code, msg)
	}
	r = until(again.URL(), short, status("completed"))
	res, _ := r["result"].(map[string]any)
	if b, _ := json.Marshal(res); res == nil || res["resultType"] != "complete" || !strings.Contains(string(b), "backend task done after 100 ms") ||
		strings.Contains(string(b), leakAWS) {
		t.Fatalf("completed backend task: %v", r)
	}
	// The completion is a call record of its own, stored as a
	// synchronous call's result is (redacted), readable by its client. (On
	// the replica that answered the poll: a replica's writes are queued,
	// and read back there after a flush; another sees them once the queue
	// commits.)
	meta, _ := res["_meta"].(map[string]any)
	tc, _ := meta["toolrouter/tool_call_id"].(string)
	if got := do(t, "GET", again.URL()+"/results/"+tc, nil, "Authorization", "Bearer "+alice); tc == "" || got.Status != 200 ||
		!strings.Contains(string(got.Body), "backend task done after 100 ms") || strings.Contains(string(got.Body), leakAWS) {
		t.Fatalf("the stored result of the completion %q: %d %s", tc, got.Status, got.Body)
	}

	// A backend task asking its client for input: input_required with
	// the backend's inputRequests, answered with tasks/update.
	r, code, msg = taskMCP(t, again.URL(), alice, "tools/call", "backend_ask", `{"name":"backend_ask","arguments":{}}`)
	ask, _ := r["taskId"].(string)
	if code != 0 || r["status"] != "input_required" {
		t.Fatalf("tools/call of backend_ask: %v %d %s", r, code, msg)
	}
	r = until(two.URL(), ask, status("input_required"))
	if b, _ := json.Marshal(r["inputRequests"]); !strings.Contains(string(b), `"ask-1"`) || !strings.Contains(string(b), "elicitation/create") {
		t.Fatalf("input_required task: %v", r)
	}
	if r, code, msg = taskMCP(t, two.URL(), alice, "tasks/update", ask, `{"taskId":"`+ask+`","inputResponses":{"ask-1":{"action":"accept","content":{"name":"Ada"}}}}`); code != 0 || r["resultType"] != "complete" {
		t.Fatalf("tasks/update: %v %d %s", r, code, msg)
	}
	r = until(again.URL(), ask, status("completed"))
	if b, _ := json.Marshal(r["result"]); !strings.Contains(string(b), "Hello, Ada") {
		t.Fatalf("answered task: %v", r)
	}
	t.Logf("wall %s", time.Since(start).Round(time.Millisecond))
}
