package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func TestSealedTaskIDs(t *testing.T) {
	key := []byte("the state key of every replica on the store")
	want := relayedTask{Server: "billing", Tool: "export", ID: "backend-task-7", Session: "sess-1", Client: "alice", User: "u-1", Plan: "p"}
	id, err := sealTask(key, want)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, sealedTaskPrefix) || !isRelayedTask(id) {
		t.Fatalf("sealed id %q lacks its prefix", id)
	}
	for _, secret := range []string{"backend-task-7", "billing", "alice", "sess-1"} {
		if strings.Contains(id, secret) || strings.Contains(id, base64.RawURLEncoding.EncodeToString([]byte(secret))) {
			t.Fatalf("sealed id %q shows %q", id, secret)
		}
	}
	if again, _ := sealTask(key, want); again == id {
		t.Fatal("two seals of one task are the same id: the nonce is not fresh")
	}
	got, err := openTask(key, id)
	if err != nil || got != want {
		t.Fatalf("openTask = %+v, %v; want %+v", got, err, want)
	}

	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(id, sealedTaskPrefix))
	for name, bad := range map[string]string{
		"one bit flipped": func() string {
			b := append([]byte(nil), raw...)
			b[len(b)/2] ^= 1
			return sealedTaskPrefix + base64.RawURLEncoding.EncodeToString(b)
		}(),
		"truncated":          id[:len(id)-4],
		"no prefix":          strings.TrimPrefix(id, sealedTaskPrefix),
		"own task id":        "task_0123456789abcdef",
		"not base64":         sealedTaskPrefix + "!!!",
		"shorter than nonce": sealedTaskPrefix + "AAAA",
		"empty after prefix": sealedTaskPrefix,
		"another prefix":     "trt0." + strings.TrimPrefix(id, sealedTaskPrefix),
		"another key's":      func() string { s, _ := sealTask([]byte("another store's key"), want); return s }(),
	} {
		if _, err := openTask(key, bad); !errors.Is(err, errNotSealed) {
			t.Errorf("%s: openTask = %v, want errNotSealed", name, err)
		}
	}
	// An id sealed without the fields that route it is refused too.
	for _, partial := range []relayedTask{{Tool: "t", ID: "i"}, {Server: "s", ID: "i"}, {Server: "s", Tool: "t"}} {
		s, _ := sealTask(key, partial)
		if _, err := openTask(key, s); !errors.Is(err, errNotSealed) {
			t.Errorf("%+v: openTask = %v, want errNotSealed", partial, err)
		}
	}
}

// pollRouter answers a relayed task's requests as the pipeline would:
// res, recording what it was asked.
type pollRouter struct {
	res *toolrouter.Result
	got []*toolrouter.CallRequest
}

func (p *pollRouter) Do(_ context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
	p.got = append(p.got, req)
	return p.res, nil
}

// TestRelayedTaskRequests: a sealed id's tasks/* request goes through the
// pipeline to the task's server, tool and backend id, as its client and
// user only; the pipeline's refusal (the tool out of the caller's scopes
// or view now) and the backend's "not found" are the extension's "Task
// not found"; a completed task's result is the CallToolResult.
func TestRelayedTaskRequests(t *testing.T) {
	rt := &pollRouter{}
	h := New(Deps{Router: rt, StateKey: "a state key of at least thirty-two characters", Logger: zerolog.Nop(), Tools: func() Tools { return relayNoTools{} }})
	defer h.Close()
	ctx := context.Background()
	key, err := h.stateKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := sealTask(key, relayedTask{Server: "fx", Tool: "backend_task", ID: "bk-1", Session: "s-1", Client: "alice", User: "u-1", Plan: "plan-1"})
	as := func(client, user string) context.Context {
		c := access.NewContext(ctx, &access.Client{Name: client})
		return access.NewUserContext(c, &access.User{Subject: user})
	}
	caps := json.RawMessage(`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
	ttl := int64(60000)
	rt.res = &toolrouter.Result{Success: true, ToolCallID: "tc_1", MCPResult: json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`),
		BackendTask: &toolrouter.BackendTask{Server: "fx", ID: "bk-1", Status: toolrouter.TaskCompleted, CreatedAt: "2026-12-07T10:00:00Z", LastUpdatedAt: "2026-12-07T10:00:01Z", TTLMillis: &ttl}}
	got, rpcErr := h.relayTaskMethod(as("alice", "u-1"), "tasks/get", id, nil, caps)
	b, _ := json.Marshal(got)
	if rpcErr != nil || !strings.Contains(string(b), `"text":"done"`) || !strings.Contains(string(b), `"status":"completed"`) || !strings.Contains(string(b), `"taskId":"`+id+`"`) || strings.Contains(string(b), "bk-1") {
		t.Fatalf("tasks/get: %s %v", b, rpcErr)
	}
	if len(rt.got) != 1 {
		t.Fatalf("the pipeline got %d requests", len(rt.got))
	}
	cr := rt.got[0]
	if op := cr.TaskOp; op == nil || op.Method != "tasks/get" || op.ID != "bk-1" || op.Server != "fx" || op.Session != "s-1" || cr.Call.ToolName != "backend_task" || cr.PlanID != "plan-1" || cr.Entry != toolrouter.EntryMCP {
		t.Fatalf("the pipeline's request: %+v %+v", cr, cr.TaskOp)
	}

	// A task started through a search view's call_tool is polled through
	// it, naming the tool it called.
	viaCallTool, _ := sealTask(key, relayedTask{Server: "fx", Tool: toolrouter.CallToolName, Inner: "backend_task", ID: "bk-2", Client: "alice", User: "u-1"})
	if _, rpcErr = h.relayTaskMethod(as("alice", "u-1"), "tasks/get", viaCallTool, nil, caps); rpcErr != nil || len(rt.got) != 2 ||
		rt.got[1].Call.ToolName != toolrouter.CallToolName || rt.got[1].Call.Arguments["name"] != "backend_task" {
		t.Fatalf("a task of call_tool: %v, the pipeline got %+v", rpcErr, rt.got[len(rt.got)-1].Call)
	}

	// An unfinished task's state is the pipeline's (redacted), not the
	// backend's as sent.
	rt.res = &toolrouter.Result{Success: true, MCPResult: json.RawMessage(`{"statusMessage":"[REDACTED]","inputRequests":{"k":{"method":"elicitation/create"}}}`),
		BackendTask: &toolrouter.BackendTask{ID: "bk-1", Status: toolrouter.TaskInputRequired, StatusMessage: "secret", InputRequests: json.RawMessage(`{"k":{"secret":1}}`)}}
	got, rpcErr = h.relayTaskMethod(as("alice", "u-1"), "tasks/get", id, nil, caps)
	if b, _ = json.Marshal(got); rpcErr != nil || strings.Contains(string(b), "secret") || !strings.Contains(string(b), `"statusMessage":"[REDACTED]"`) || !strings.Contains(string(b), `"inputRequests":{"k":{"method":"elicitation/create"}}`) {
		t.Fatalf("tasks/get of an input_required task: %s %v", b, rpcErr)
	}

	// A JSON-RPC error the backend answered a poll with is the
	// pipeline's (redacted, as a synchronous call's error text is), not
	// the backend's as sent.
	rt.res = &toolrouter.Result{Success: true, MCPResult: json.RawMessage(`{"error":{"code":-32603,"message":"[REDACTED]","data":"[REDACTED]"}}`),
		BackendTask: &toolrouter.BackendTask{ID: "bk-1", RPCError: json.RawMessage(`{"code":-32603,"message":"secret","data":"secret"}`)}}
	got, rpcErr = h.relayTaskMethod(as("alice", "u-1"), "tasks/get", id, nil, caps)
	if b, _ = json.Marshal(rpcErr); got != nil || rpcErr == nil || rpcErr.Code != -32603 || strings.Contains(string(b), "secret") || !strings.Contains(string(b), "[REDACTED]") {
		t.Fatalf("tasks/get answered a JSON-RPC error: %v %s", got, b)
	}

	notFound := func(name string, ctx context.Context, id string) {
		t.Helper()
		if _, e := h.relayTaskMethod(ctx, "tasks/cancel", id, nil, caps); e == nil || e.Code != -32602 || e.Message != "Failed to retrieve task: Task not found" {
			t.Errorf("%s: %v, want -32602 Task not found", name, e)
		}
	}
	rt.got = nil
	notFound("another client", as("mallory", "u-1"), id)
	notFound("another user", as("alice", "u-2"), id)
	notFound("altered", as("alice", "u-1"), id[:len(id)-2]+"xx")
	if len(rt.got) != 0 {
		t.Fatalf("refused ids reached the pipeline: %d", len(rt.got))
	}
	cat, msg := toolrouter.CategoryNotFound, "unknown tool"
	rt.res = &toolrouter.Result{ErrorCategory: &cat, Error: &msg}
	notFound("the tool out of the caller's scope now", as("alice", "u-1"), id)
	rt.res = &toolrouter.Result{Success: true, BackendTask: &toolrouter.BackendTask{ID: "bk-1", RPCError: json.RawMessage(`{"code":-32602,"message":"no such task bk-1"}`)}}
	notFound("the backend's not found", as("alice", "u-1"), id)
}

// relayNoTools is an empty registry.
type relayNoTools struct{}

func (relayNoTools) Tools() []*toolrouter.Tool { return nil }

// TestRelayedCreateIsRedacted: the CreateTaskResult of a call a backend
// answered with a task carries the statusMessage as the pipeline left it
// (redacted), not the backend's as sent.
func TestRelayedCreateIsRedacted(t *testing.T) {
	h := New(Deps{Router: &pollRouter{}, StateKey: "a state key of at least thirty-two characters", Logger: zerolog.Nop(), Tools: func() Tools { return relayNoTools{} }})
	defer h.Close()
	ctx := access.NewContext(context.Background(), &access.Client{Name: "alice"})
	res := &toolrouter.Result{Success: true, MCPResult: json.RawMessage(`{"statusMessage":"[REDACTED]"}`),
		BackendTask: &toolrouter.BackendTask{Server: "fx", ID: "bk-1", Status: toolrouter.TaskWorking, StatusMessage: "secret"}}
	ct, err := h.relayedCreate(ctx, "backend_task", "", "plan-1", res)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ct.MarshalJSON()
	if strings.Contains(string(b), "secret") || !strings.Contains(string(b), `"statusMessage":"[REDACTED]"`) || !strings.Contains(string(b), `"status":"working"`) {
		t.Fatalf("CreateTaskResult: %s", b)
	}
}
