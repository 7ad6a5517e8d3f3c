package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/poll"
	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
	"github.com/toolrouterd/toolrouterd/internal/task"
)

// Issue 34 item 1: long calls as tasks, through the binary: started on one
// replica, polled and cancelled on another sharing its SQLite file, a
// replica dying under a task, a restart keeping what finished, and
// another client's task not found on /route and /mcp.

// taskRegistry has the example tool server's slow tool as an optional
// task, with a timeout far above any wait of the test.
func taskRegistry(tools string) string {
	return fmt.Sprintf(`tools:
  - name: slow
    description: Sleeps ms milliseconds (at most 60000), then answers.
    endpoint: http://%s/slow
    timeout: 5m
    task: optional
    input_schema:
      type: object
      properties:
        ms: {type: number}
`, tools)
}

// taskRoute starts a call of slow (ms) as a task on url, as the client of
// key, and returns its task id.
func taskRoute(t *testing.T, url, key string, ms int) string {
	t.Helper()
	r := do(t, "POST", url+"/route", map[string]any{"plan_id": "tasks", "tool_call": map[string]any{"name": "slow", "arguments": fmt.Sprintf(`{"ms":%d}`, ms)}},
		"Authorization", "Bearer "+key, "Prefer", "respond-async")
	m := r.JSON(t)
	id, _ := m["task_id"].(string)
	if r.Status != http.StatusAccepted || id == "" || r.Header.Get("Location") != "/tasks/"+id || m["status"] != "working" {
		t.Fatalf("POST /route with Prefer: respond-async: %d %s", r.Status, r.Body)
	}
	return id
}

// taskPoll polls GET /tasks/{id} on url, as a client does (at the task's
// poll interval, here 20 ms), until done holds of the task.
func taskPoll(t *testing.T, url, key, id string, done func(map[string]any) bool) map[string]any {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		r := do(t, "GET", url+"/tasks/"+id, nil, "Authorization", "Bearer "+key)
		if r.Status != http.StatusOK {
			t.Fatalf("GET /tasks/%s: %d %s", id, r.Status, r.Body)
		}
		if m := r.JSON(t); done(m) {
			return m
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("task %s: still %s", id, r.Body)
		}
	}
}

func taskStatus(want string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["status"] == want }
}

// taskMCP sends one 2026-07-28 request of the tasks extension to url's
// /mcp as the client of key, naming name in Mcp-Name.
func taskMCP(t *testing.T, url, key, method, name, params string) (map[string]any, int, string) {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + strings.TrimSuffix(params, "}") + "," + meta + "}}"
	raw := mcpPost(t, url, "", body, "Authorization", "Bearer "+key, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", method, "Mcp-Name", name)
	return raw.rpc(t)
}

// TestTasksAcrossReplicasAndRestarts: on SQLite (processes sharing one
// file) and on PostgreSQL.
func TestTasksAcrossReplicasAndRestarts(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		tasksAcrossReplicas(t, "sqlite://"+filepath.Join(t.TempDir(), "tasks.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		tasksAcrossReplicas(t, pgtest.Start(t))
	})
}

func tasksAcrossReplicas(t *testing.T, db string) {
	start := time.Now()
	tools := startTools(t)
	reg := taskRegistry(tools.addr)
	// Heartbeats of 200 ms: a replica that stops is noticed 600 ms later.
	env := []string{"TOOLROUTER_API_KEYS=alice-key,mallory-key", "TOOLROUTER_TASK_HEARTBEAT=200ms"}
	reps := startReplicas(t, 2, reg, db, env...)
	one, two := reps[0], reps[1]
	const alice, mallory = "alice-key", "mallory-key"

	// A call longer than the client's own timeout: started on one,
	// followed on two. The HTTP client that started it gives up after
	// 300 ms, as a proxy cutting a 3-minute call would; the task does not
	// care.
	done := taskRoute(t, one.URL(), alice, 1000)
	impatient := &http.Client{Timeout: 300 * time.Millisecond}
	req, _ := http.NewRequest("GET", two.URL()+"/tasks/"+done, nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	if resp, err := impatient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a poll within the client's timeout: %v", err)
	} else {
		resp.Body.Close()
	}
	m := taskPoll(t, two.URL(), alice, done, taskStatus("completed"))
	res, _ := m["result"].(map[string]any)
	if res == nil || res["success"] != true || res["tool_name"] != "slow" || m["tool_call_id"] != res["tool_call_id"] {
		t.Fatalf("completed task: %v", m)
	}

	// Another client: not found, on /route's /tasks and on /mcp.
	if r := do(t, "GET", two.URL()+"/tasks/"+done, nil, "Authorization", "Bearer "+mallory); r.Status != http.StatusNotFound || strings.Contains(string(r.Body), "slow") {
		t.Fatalf("another client's GET: %d %s", r.Status, r.Body)
	}
	if r := do(t, "POST", one.URL()+"/tasks/"+done+"/cancel", nil, "Authorization", "Bearer "+mallory); r.Status != http.StatusNotFound {
		t.Fatalf("another client's cancel: %d %s", r.Status, r.Body)
	}
	if _, code, _ := taskMCP(t, two.URL(), mallory, "tasks/get", done, `{"taskId":"`+done+`"}`); code != -32602 {
		t.Fatalf("another client's tasks/get: code %d, want -32602", code)
	}

	// Over /mcp: created on one, polled on two to the CallToolResult.
	r, code, msg := taskMCP(t, one.URL(), alice, "tools/call", "slow", `{"name":"slow","arguments":{"ms":200}}`)
	mcpID, _ := r["taskId"].(string)
	if code != 0 || r["resultType"] != "task" || mcpID == "" {
		t.Fatalf("tools/call as a task: %v %d %s", r, code, msg)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		r, code, msg = taskMCP(t, two.URL(), alice, "tasks/get", mcpID, `{"taskId":"`+mcpID+`"}`)
		if code != 0 {
			t.Fatalf("tasks/get: %d %s", code, msg)
		}
		if r["status"] == "completed" {
			break
		}
		<-tick.C
	}
	if cr, _ := r["result"].(map[string]any); cr == nil || cr["isError"] == true || cr["resultType"] != "complete" {
		t.Fatalf("tasks/get of the completed task: %v", r)
	}

	// Cancelled from the other replica: one stops the call at its next
	// heartbeat.
	long := taskRoute(t, one.URL(), alice, 60000)
	if r := do(t, "POST", two.URL()+"/tasks/"+long+"/cancel", nil, "Authorization", "Bearer "+alice); r.Status != http.StatusAccepted || r.JSON(t)["cancel_requested"] != true {
		t.Fatalf("cancel on the other replica: %d %s", r.Status, r.Body)
	}
	taskPoll(t, two.URL(), alice, long, taskStatus("cancelled"))

	// The replica running a task dies: the task ends failed, saying why.
	orphan := taskRoute(t, one.URL(), alice, 60000)
	taskPoll(t, two.URL(), alice, orphan, func(m map[string]any) bool { return m["status"] == "working" })
	if err := one.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-one.done
	m = taskPoll(t, two.URL(), alice, orphan, taskStatus("failed"))
	if m["error"] != task.ReplicaLost {
		t.Fatalf("orphaned task: %v", m)
	}

	// A restarted replica on the same store still has what finished.
	again := startReplicas(t, 1, reg, db, env...)[0]
	m = taskPoll(t, again.URL(), alice, done, taskStatus("completed"))
	if b, _ := json.Marshal(m["result"]); !strings.Contains(string(b), `"success":true`) {
		t.Fatalf("after the restart: %v", m)
	}
	t.Logf("wall %s", time.Since(start).Round(time.Millisecond))
}

// taskConformance are the conformance suite's tasks scenarios (extension
// scenarios: run with --force at 2026-07-28) that pass whole through /mcp.
var taskConformance = []string{"tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
	"tasks-request-headers", "tasks-dispatch-and-envelope", "tasks-required-task-error", "tasks-mrtr-input", "tasks-mrtr-composition"}

// TestTasksConformance runs the official conformance suite's tasks
// scenarios against toolrouterd's /mcp. Its fixtures greet, slow_compute
// and failing_job are HTTP tools of the example tool server run as
// toolrouterd tasks; the others are the go-sdk fixture's backend tasks,
// relayed: protocol_error_job's panics into a JSON-RPC error and ends
// failed with it (a failing HTTP tool is a completed call with isError, as
// its synchronous call would be); confirm_delete's and multi_input's ask
// their client for input (tasks-mrtr-input: inputRequests on tasks/get,
// answered by tasks/update, one key at a time); test_tool_with_task asks
// by a multi round-trip request first, then answers its retry with a task
// (tasks-mrtr-composition). tasks-status-notifications has no check at
// this version.
func TestTasksConformance(t *testing.T) {
	t.Parallel()
	dir := conformanceDir(t)
	tools := startTools(t)
	fix := startFixture(t)
	router, _ := startRouter(t, fmt.Sprintf(`tools:
  - {name: greet, description: Greets name., endpoint: http://%[1]s/greet}
  - {name: slow_compute, description: Sleeps seconds., endpoint: http://%[1]s/slow, timeout: 5m, task: optional}
  - {name: failing_job, description: Fails., endpoint: http://%[1]s/fail, task: required}
mcp_servers:
  - {name: fixture, url: "%[2]s/mcp", prefix: "", tools: [protocol_error_job, confirm_delete, multi_input, test_tool_with_task]}
`, tools.addr, fix.URL()), "TOOLROUTER_LOG_LEVEL=warn")
	poll.Until(t, 20*time.Second, func() error {
		if r := do(t, "GET", router.URL()+"/schemas/unknown", nil); !strings.Contains(string(r.Body), `"test_tool_with_task"`) {
			return fmt.Errorf("the fixture's tools are not listed yet: %s", r.Body)
		}
		return nil
	})
	type run struct {
		scenario string
		out      []byte
		err      error
	}
	scenarios := taskConformance
	runs := make(chan run, len(scenarios))
	for _, s := range scenarios { // concurrently: each is mostly waiting
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, "bash", "../scripts/run-mcp-conformance.sh", dir, "server",
				"--url", router.URL()+"/mcp", "--scenario", s, "--spec-version", "2026-07-28", "--force").CombinedOutput()
			runs <- run{s, out, err}
		}()
	}
	var summary []string
	for range scenarios {
		r := <-runs
		m := passedLine.FindSubmatch(r.out)
		switch {
		case m == nil:
			t.Errorf("%s: no result (%v):\n%s", r.scenario, r.err, r.out)
			continue
		case r.err != nil || string(m[3]) != "0" || string(m[1]) != string(m[2]):
			t.Errorf("%s failed (%v):\n%s", r.scenario, r.err, r.out)
			continue
		}
		summary = append(summary, fmt.Sprintf("%s %s/%s", r.scenario, m[1], m[2]))
	}
	t.Logf("tasks conformance 2026-07-28: %s", strings.Join(summary, ", "))
}

// TestTasksOfMCPTools: the calls of an MCP server's tool (the go-sdk
// fixture's slow, which reports progress) run as toolrouterd tasks for an
// /mcp client of the tasks extension (mcp_servers[].task: optional):
// created on one replica, its progress and result read on the other, a
// long one cancelled from the other, and another client's not found.
func TestTasksOfMCPTools(t *testing.T) {
	t.Parallel()
	fix := startFixture(t)
	reg := fmt.Sprintf(`mcp_servers:
  - name: fixture
    url: %s/mcp
    prefix: ""
    tools: [slow]
    timeout: 5m
    task: optional
`, fix.URL())
	db := "sqlite://" + filepath.Join(t.TempDir(), "tasks.db")
	reps := startReplicas(t, 2, reg, db, "TOOLROUTER_API_KEYS=alice-key,mallory-key", "TOOLROUTER_TASK_HEARTBEAT=200ms")
	one, two := reps[0], reps[1]
	const alice, mallory = "alice-key", "mallory-key"
	for _, rep := range reps {
		poll.Until(t, 20*time.Second, func() error {
			if r := do(t, "GET", rep.URL()+"/schemas/unknown", nil, "Authorization", "Bearer "+alice); !strings.Contains(string(r.Body), `"slow"`) {
				return fmt.Errorf("the fixture's slow is not listed yet: %s", r.Body)
			}
			return nil
		})
	}
	get := func(url, key, id string) (map[string]any, int) {
		r, code, _ := taskMCP(t, url, key, "tasks/get", id, `{"taskId":"`+id+`"}`)
		return r, code
	}
	until := func(url, id string, done func(map[string]any) bool) map[string]any {
		t.Helper()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(20 * time.Second)
		for {
			r, code := get(url, alice, id)
			if code != 0 {
				t.Fatalf("tasks/get %s: code %d", id, code)
			}
			if done(r) {
				return r
			}
			select {
			case <-tick.C:
			case <-deadline:
				t.Fatalf("task %s: still %v", id, r)
			}
		}
	}

	r, code, msg := taskMCP(t, one.URL(), alice, "tools/call", "slow", `{"name":"slow","arguments":{"ms":300}}`)
	short, _ := r["taskId"].(string)
	if code != 0 || r["resultType"] != "task" || short == "" {
		t.Fatalf("tools/call of the MCP tool as a task: %v %d %s", r, code, msg)
	}
	r = until(two.URL(), short, func(m map[string]any) bool { return m["status"] == "completed" })
	if b, _ := json.Marshal(r["result"]); !strings.Contains(string(b), `"text":"slept 300 ms"`) {
		t.Fatalf("completed MCP task: %v", r)
	}
	if _, code := get(two.URL(), mallory, short); code != -32602 {
		t.Fatalf("another client's tasks/get: code %d, want -32602", code)
	}

	r, code, msg = taskMCP(t, one.URL(), alice, "tools/call", "slow", `{"name":"slow","arguments":{"ms":600000}}`)
	long, _ := r["taskId"].(string)
	if code != 0 || long == "" {
		t.Fatalf("tools/call of the long MCP tool: %v %d %s", r, code, msg)
	}
	// The backend's first progress, relayed into the task by the replica
	// running it, read on the other.
	until(two.URL(), long, func(m map[string]any) bool { return m["status"] == "working" && m["statusMessage"] == "step 0 of 10" })
	if _, code, msg = taskMCP(t, two.URL(), mallory, "tasks/cancel", long, `{"taskId":"`+long+`"}`); code != -32602 {
		t.Fatalf("another client's tasks/cancel: %d %s", code, msg)
	}
	if r, code, msg = taskMCP(t, two.URL(), alice, "tasks/cancel", long, `{"taskId":"`+long+`"}`); code != 0 || r["resultType"] != "complete" {
		t.Fatalf("tasks/cancel: %v %d %s", r, code, msg)
	}
	until(two.URL(), long, func(m map[string]any) bool { return m["status"] == "cancelled" })
}

// TestTasksHeldForApproval: a call held for an approver is a task
// input_required naming its approval, read on another replica; once an
// approver decides it, the next poll there finds it completed with the
// call's result. Another client does not see it.
func TestTasksHeldForApproval(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	db := "sqlite://" + filepath.Join(t.TempDir(), "held.db")
	reps := startReplicas(t, 2, approvalRegistry("http://"+tools.addr), db)
	one, two := reps[0], reps[1]
	r := do(t, "POST", one.URL()+"/route", refundCall("held", 12), append(asAgent, "Prefer", "respond-async")...)
	id, _ := r.JSON(t)["task_id"].(string)
	if r.Status != http.StatusAccepted || id == "" {
		t.Fatalf("POST /route of a held tool with respond-async: %d %s", r.Status, r.Body)
	}
	key := strings.TrimPrefix(asAgent[1], "Bearer ")
	held := taskPoll(t, two.URL(), key, id, taskStatus("input_required"))
	approval, _ := held["approval_id"].(string)
	if approval == "" || !strings.Contains(fmt.Sprint(held["status_message"]), approval) {
		t.Fatalf("held task: %v", held)
	}
	if r := do(t, "GET", two.URL()+"/tasks/"+id, nil, asOther...); r.Status != http.StatusNotFound {
		t.Fatalf("another client's GET: %d %s", r.Status, r.Body)
	}
	if r := do(t, "POST", two.URL()+"/approvals/"+approval, map[string]any{"decision": "approve"}, asReviewer...); r.Status != http.StatusOK {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	done := taskPoll(t, two.URL(), key, id, taskStatus("completed"))
	if res, _ := done["result"].(map[string]any); res == nil || res["success"] != true || res["tool_name"] != "billing/refund" {
		t.Fatalf("decided task: %v", done)
	}
}

// TestTasksSurviveARollingRestart: an HTTP tool's task on a replica told
// to stop (SIGTERM, as a rolling update does) runs to its end before that
// replica exits (within TOOLROUTER_SHUTDOWN_TIMEOUT): its heartbeats go on
// while it drains, so the other replica, polling throughout, never sees it
// fail, and reads its result; the replica started in its place does too.
func TestTasksSurviveARollingRestart(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	reg := taskRegistry(tools.addr)
	db := "sqlite://" + filepath.Join(t.TempDir(), "tasks.db")
	env := []string{"TOOLROUTER_API_KEYS=alice-key", "TOOLROUTER_TASK_HEARTBEAT=200ms", "TOOLROUTER_SHUTDOWN_TIMEOUT=1m"}
	reps := startReplicas(t, 2, reg, db, env...)
	one, two := reps[0], reps[1]
	const alice = "alice-key"

	// 3 s: fifteen heartbeats, five times what a stopped replica is given.
	id := taskRoute(t, one.URL(), alice, 3000)
	taskPoll(t, two.URL(), alice, id, taskStatus("working"))
	if err := one.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	m := taskPoll(t, two.URL(), alice, id, func(m map[string]any) bool { return m["status"] != "working" })
	if res, _ := m["result"].(map[string]any); m["status"] != "completed" || res == nil || res["success"] != true {
		t.Fatalf("the task of a replica stopping: %v", m)
	}
	select {
	case <-one.done:
		if one.err != nil {
			t.Fatalf("the drained replica exited with %v:\n%s", one.err, one.Output())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the replica did not exit after its task ended:\n%s", one.Output())
	}
	again := startReplicas(t, 1, reg, db, env...)[0]
	if m := taskPoll(t, again.URL(), alice, id, taskStatus("completed")); m["tool_call_id"] == nil {
		t.Fatalf("after the restart: %v", m)
	}
}
