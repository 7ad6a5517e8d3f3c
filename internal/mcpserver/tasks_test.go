package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/task"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

const taskTools = `
  - name: test/echotask
    description: Returns its arguments, as a task for clients of the tasks extension.
    endpoint: TOOLS/echo
    input_schema: {type: object}
    task: optional
  - name: test/slowtask
    description: Sleeps ms milliseconds; only as a task.
    endpoint: TOOLS/slow
    input_schema: {type: object, properties: {ms: {type: number}}}
    task: required
`

// taskEnv is /mcp with tasks, its callers named by the X-Client header.
func taskEnv(t *testing.T) (url string, runner *task.Runner) {
	e := newEnv(t, func(d *mcpserver.Deps) {
		runner = &task.Runner{Store: memory.New(), Router: d.Router}
		d.Tasks = runner
	})
	e.reg.cur.Store(parse(t, e.tools, registryYAML+taskTools))
	clients := access.NewClients(nil, []toolrouter.ClientSpec{{Name: "alice", Tools: []string{"*"}}, {Name: "mallory", Tools: []string{"*"}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := clients.ByName(r.Header.Get("X-Client"))
		e.h.ServeHTTP(w, r.WithContext(access.NewContext(r.Context(), c)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, runner
}

// withTasks declares the tasks extension in a modern request's body.
func withTasks(body string) string {
	return strings.Replace(body, `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`, 1)
}

func as(client string, h map[string]string) map[string]string {
	h["X-Client"] = client
	return h
}

// TestMCPTasksOfToolrouterdTools: a client of the tasks extension calling
// an optional-task tool gets a CreateTaskResult, polls tasks/get to the
// CallToolResult; another client's tasks/get and tasks/cancel are "not
// found"; without the extension, the optional tool answers at once and
// the required one is refused with -32021; tasks/cancel ends a running
// task cancelled.
func TestMCPTasksOfToolrouterdTools(t *testing.T) {
	url, runner := taskEnv(t)
	echo, slow := mcpName("test/echotask"), mcpName("test/slowtask")

	disc, dh := modern("server/discover", "", "{}")
	_, _, b := post(t, url, disc, as("alice", dh))
	if caps, _ := decodeReply(t, b).Result["capabilities"].(map[string]any); caps == nil || !strings.Contains(string(b), `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
		t.Fatalf("server/discover does not name the tasks extension: %s", b)
	}

	body, h := modern("tools/call", echo, `{"name":"`+echo+`","arguments":{"msg":"hi"}}`)
	status, _, b := post(t, url, withTasks(body), as("alice", h))
	r := decodeReply(t, b)
	id, _ := r.Result["taskId"].(string)
	if status != 200 || r.Error != nil || r.Result["resultType"] != "task" || id == "" || r.Result["status"] != "working" || r.Result["createdAt"] == nil {
		t.Fatalf("tools/call of a task tool: %d %s", status, b)
	}
	if err := runner.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	get, gh := modern("tasks/get", id, `{"taskId":"`+id+`"}`)
	status, _, b = post(t, url, withTasks(get), as("alice", gh))
	r = decodeReply(t, b)
	res, _ := r.Result["result"].(map[string]any)
	if status != 200 || r.Result["resultType"] != "complete" || r.Result["status"] != "completed" || res == nil || res["resultType"] != "complete" || !strings.Contains(string(b), `{\"msg\":\"hi\"}`) {
		t.Fatalf("tasks/get: %d %s", status, b)
	}
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		other, oh := modern(m, id, `{"taskId":"`+id+`","inputResponses":{}}`)
		_, _, b = post(t, url, withTasks(other), as("mallory", oh))
		if r = decodeReply(t, b); r.Error == nil || r.Error.Code != -32602 || strings.Contains(string(b), "msg") {
			t.Errorf("%s of another client's task: %s, want -32602 not found", m, b)
		}
	}
	gh["Mcp-Name"] = "another"
	status, _, b = post(t, url, withTasks(get), as("alice", gh))
	if r = decodeReply(t, b); status != 400 || r.Error == nil || r.Error.Code != -32020 || !strings.Contains(string(b), `"id":1`) {
		t.Errorf("tasks/get with Mcp-Name not its taskId: %d %s, want 400, -32020, the request's id", status, b)
	}
	gh["Mcp-Name"] = id
	_, _, b = post(t, url, get, as("alice", gh))
	if r = decodeReply(t, b); r.Error == nil || r.Error.Code != -32021 {
		t.Errorf("tasks/get without the extension: %s, want -32021", b)
	}

	// Without the extension: optional runs at once, required is refused.
	status, _, b = post(t, url, body, as("alice", h))
	if r = decodeReply(t, b); status != 200 || r.Error != nil || r.Result["resultType"] != "complete" {
		t.Errorf("optional task tool without the extension: %d %s", status, b)
	}
	slowBody, sh := modern("tools/call", slow, `{"name":"`+slow+`","arguments":{"ms":60000}}`)
	_, _, b = post(t, url, slowBody, as("alice", sh))
	if r = decodeReply(t, b); r.Error == nil || r.Error.Code != -32021 || !strings.Contains(string(b), "io.modelcontextprotocol/tasks") {
		t.Errorf("required task tool without the extension: %s, want -32021 naming the extension", b)
	}

	// A long call, cancelled.
	_, _, b = post(t, url, withTasks(slowBody), as("alice", sh))
	r = decodeReply(t, b)
	id, _ = r.Result["taskId"].(string)
	if r.Result["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call of the slow task tool: %s", b)
	}
	cancel, ch := modern("tasks/cancel", id, `{"taskId":"`+id+`"}`)
	if _, _, b = post(t, url, withTasks(cancel), as("alice", ch)); decodeReply(t, b).Result["resultType"] != "complete" {
		t.Fatalf("tasks/cancel: %s", b)
	}
	get, gh = modern("tasks/get", id, `{"taskId":"`+id+`"}`)
	if _, _, b = post(t, url, withTasks(get), as("alice", gh)); decodeReply(t, b).Result["status"] != "cancelled" {
		t.Fatalf("tasks/get after tasks/cancel: %s", b)
	}
}

// capsRouter records the client capabilities a call would forward.
type capsRouter struct {
	mcpserver.Router
	got chan string
}

func (c capsRouter) Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
	c.got <- string(req.Relay.ClientCapabilities)
	return c.Router.Do(ctx, req)
}

// TestMCPTasksExtensionForwardedUnlessOwnTask: a backend hears that the
// caller takes tasks (it may answer with its own task, relayed) with the
// rest of the caller's capabilities; a call toolrouterd runs as its own
// task does not pass it on (the task is toolrouterd's).
func TestMCPTasksExtensionForwardedUnlessOwnTask(t *testing.T) {
	got := make(chan string, 1)
	e := newEnv(t, func(d *mcpserver.Deps) {
		d.Router = capsRouter{d.Router, got}
		d.Tasks = &task.Runner{Store: memory.New(), Router: d.Router}
	})
	e.reg.cur.Store(parse(t, e.tools, registryYAML+taskTools))
	declared := `"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{},"com.example/x":{}}}`
	for _, tc := range []struct {
		tool      string
		forwarded bool
	}{{"test/echo", true}, {"test/echotask", false}} {
		name := mcpName(tc.tool)
		body, h := modern("tools/call", name, `{"name":"`+name+`","arguments":{"msg":"hi"}}`)
		body = strings.Replace(body, `"io.modelcontextprotocol/clientCapabilities":{}`, declared, 1)
		if status, _, b := post(t, e.url, body, h); status != 200 {
			t.Fatalf("tools/call %s: %d %s", tc.tool, status, b)
		}
		if caps := <-got; strings.Contains(caps, "io.modelcontextprotocol/tasks") != tc.forwarded || !strings.Contains(caps, "com.example/x") || !strings.Contains(caps, "elicitation") {
			t.Errorf("%s: forwarded capabilities %s (tasks extension forwarded: want %v)", tc.tool, caps, tc.forwarded)
		}
	}
}

// refusingRouter refuses every call as a spend limit does.
type refusingRouter struct{}

func (refusingRouter) Do(_ context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
	cat, msg := toolrouter.CategoryBudget, "spend limit reached: the client's daily budget is spent"
	return &toolrouter.Result{ToolCallID: "tc_refused", ToolName: req.Call.ToolName, ErrorCategory: &cat, Error: &msg}, nil
}

// TestMCPTaskOfARefusedCallFails: a task whose call ends as its
// synchronous call would answer with a JSON-RPC error (a spend limit's
// -32023) ends failed with that error, not completed (the extension:
// failed is for JSON-RPC errors, completed for results).
func TestMCPTaskOfARefusedCallFails(t *testing.T) {
	runner := &task.Runner{Store: memory.New(), Router: refusingRouter{}}
	e := newEnv(t, func(d *mcpserver.Deps) { d.Tasks = runner })
	e.reg.cur.Store(parse(t, e.tools, registryYAML+taskTools))
	echo := mcpName("test/echotask")
	body, h := modern("tools/call", echo, `{"name":"`+echo+`","arguments":{"msg":"hi"}}`)
	_, _, b := post(t, e.url, withTasks(body), h)
	id, _ := decodeReply(t, b).Result["taskId"].(string)
	if id == "" {
		t.Fatalf("tools/call: %s", b)
	}
	if err := runner.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	get, gh := modern("tasks/get", id, `{"taskId":"`+id+`"}`)
	_, _, b = post(t, e.url, withTasks(get), gh)
	r := decodeReply(t, b)
	errObj, _ := r.Result["error"].(map[string]any)
	if r.Result["status"] != "failed" || errObj == nil || errObj["code"] != float64(-32023) || !strings.Contains(fmt.Sprint(errObj["message"]), "spend limit") || r.Result["result"] != nil {
		t.Fatalf("tasks/get of a refused call's task: %s, want failed with -32023 and no result", b)
	}
}
