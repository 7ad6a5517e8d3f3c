package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Backend tasks (protocol 2026-07-28, the tasks extension
// io.modelcontextprotocol/tasks as published: modelcontextprotocol/ext-tasks
// specification/2026-07-28/tasks.md). The tools backend_task and
// backend_ask run as the fixture's own tasks for a tools/call whose
// clientCapabilities declare the extension: the call is answered with a
// CreateTaskResult, tasks/get, tasks/update and tasks/cancel follow (the
// go-sdk has no tasks support, so these requests are answered here, before
// the SDK reads them). Without the extension declared they answer
// synchronously (the SDK's tools, counted by /control/calls).
//
//   - backend_task {ms, secret?}: works ms milliseconds, then completes
//     with "backend task done after N ms" (plus secret, to see it
//     redacted); tasks/cancel ends it cancelled at once.
//   - protocol_error_job: its work panics; the task ends failed with the
//     JSON-RPC internal error (-32603) the panic became, as the extension
//     asks of a protocol-level failure (the conformance suite's
//     tasks-lifecycle fixture of that name). Called without the extension,
//     it answers that error at once.
//   - backend_ask: input_required at once, asking (key "ask-1") for a
//     name by elicitation; tasks/update answering it completes it with
//     "Hello, NAME".
//   - confirm_delete {filename} and multi_input: the conformance suite's
//     tasks-mrtr-input fixtures: input_required asking for a confirmation
//     (one key), or a name and a confirmation (two keys, answerable one
//     tasks/update at a time); completed once every key is answered.
//   - test_tool_with_task: tasks-mrtr-composition's: a multi round-trip
//     request first (input_required asking for user_name, answered by the
//     SDK's tool), then, on the retry carrying the answer, a task whose
//     result greets that name.
//
// GET /control/tasks is every task: its tool, status and whether a
// tasks/cancel reached it.

const tasksExt = "io.modelcontextprotocol/tasks"

type fixtureTask struct {
	tool    string
	status  string
	created time.Time
	updated time.Time
	text    string
	err     map[string]any // a failed task's JSON-RPC error
	// pending are the outstanding inputRequests by key, answers the
	// responses so far; finish makes the result text once none is left.
	pending   map[string]any
	answers   map[string]json.RawMessage
	finish    func(answers map[string]json.RawMessage) string
	cancelled bool // a tasks/cancel reached it
	stop      chan struct{}
}

type backendTasks struct {
	mu    sync.Mutex
	tasks map[string]*fixtureTask
}

func newBackendTasks(srv *mcp.Server) *backendTasks {
	srv.AddTool(&mcp.Tool{Name: "backend_task", Description: "Works ms milliseconds as a task when the client takes tasks, else at once.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"number"},"secret":{"type":"string"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran without a task"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "backend_ask", Description: "Asks for a name as a task when the client takes tasks.", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran without a task"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "protocol_error_job", Description: "Panics into a protocol error (as a task when the client takes tasks).", InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tool panicked: protocol_error_job: boom"}
		})
	for _, name := range []string{"confirm_delete", "multi_input"} {
		srv.AddTool(&mcp.Tool{Name: name, Description: "Asks its client for input, as a task when the client takes tasks.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string"}}}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran without a task"}}}, nil
			})
	}
	srv.AddTool(&mcp.Tool{Name: "test_tool_with_task", Description: "Asks for user_name (input_required), then runs as a task.", InputSchema: noArgs},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if len(req.Params.InputResponses) > 0 {
				return nil, &jsonrpc.Error{Code: -32021, Message: "Missing required client capability: test_tool_with_task runs as a task"}
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"user_name": elicit("What is your name?", "name", "string")}}, nil
		})
	return &backendTasks{tasks: map[string]*fixtureTask{}}
}

func (b *backendTasks) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /control/tasks", func(w http.ResponseWriter, _ *http.Request) {
		b.mu.Lock()
		out := map[string]any{}
		for id, t := range b.tasks {
			out[id] = map[string]any{"tool": t.tool, "status": t.status, "cancelled": t.cancelled}
		}
		b.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}

type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name           string                     `json:"name"`
		TaskID         string                     `json:"taskId"`
		Arguments      json.RawMessage            `json:"arguments"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		Meta           struct {
			Caps struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

// serve answers r when it is a request of a backend task, and reports
// whether it did; otherwise r's body is left for the SDK to read.
func (b *backendTasks) serve(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var req rpcRequest
	if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 {
		return false
	}
	_, declared := req.Params.Meta.Caps.Extensions[tasksExt]
	answer := func(status int, result any, code int, msg string) {
		m := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if msg != "" {
			m["error"] = map[string]any{"code": code, "message": msg}
		} else {
			m["result"] = result
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(m)
	}
	switch req.Method {
	case "tools/call":
		switch req.Params.Name {
		case "backend_task", "backend_ask", "protocol_error_job", "confirm_delete", "multi_input":
		case "test_tool_with_task":
			if len(req.Params.InputResponses) == 0 {
				return false // the first round: the SDK's tool asks
			}
		default:
			return false
		}
		if !declared {
			return false
		}
		var args struct {
			MS       int    `json:"ms"`
			Secret   string `json:"secret"`
			Filename string `json:"filename"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &args)
		if args.Filename != "" {
			args.Secret = args.Filename
		}
		if req.Params.Name == "test_tool_with_task" {
			args.Secret = acceptedText(req.Params.InputResponses["user_name"], "name")
		}
		id := b.start(req.Params.Name, args.MS, args.Secret)
		answer(http.StatusOK, b.wire(id, "task"), 0, "")
		return true
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return false
	}
	switch {
	case r.Header.Get("Mcp-Name") != req.Params.TaskID:
		answer(http.StatusBadRequest, nil, -32020, "Mcp-Name header does not match params.taskId")
		return true
	case !declared:
		answer(http.StatusOK, nil, -32021, "Missing required client capability")
		return true
	}
	b.mu.Lock()
	t := b.tasks[req.Params.TaskID]
	b.mu.Unlock()
	if t == nil {
		answer(http.StatusOK, nil, -32602, "Failed to retrieve task: Task not found")
		return true
	}
	switch req.Method {
	case "tasks/get":
		answer(http.StatusOK, b.wire(req.Params.TaskID, "complete"), 0, "")
	case "tasks/cancel":
		b.mu.Lock()
		t.cancelled = true
		if t.status == "working" || t.status == "input_required" {
			t.status, t.updated = "cancelled", time.Now()
			close(t.stop)
		}
		b.mu.Unlock()
		answer(http.StatusOK, map[string]any{"resultType": "complete"}, 0, "")
	case "tasks/update":
		b.mu.Lock()
		if t.status == "input_required" {
			// Responses to keys not outstanding are ignored, as the
			// extension asks.
			for k, raw := range req.Params.InputResponses {
				if _, ok := t.pending[k]; ok {
					delete(t.pending, k)
					t.answers[k] = raw
				}
			}
			if len(t.pending) == 0 {
				t.status, t.text, t.updated = "completed", t.finish(t.answers), time.Now()
			}
		}
		b.mu.Unlock()
		answer(http.StatusOK, map[string]any{"resultType": "complete"}, 0, "")
	}
	return true
}

// acceptedText is the string field of an accepted elicitation response
// (raw, as sent); "" when it is none.
func acceptedText(raw json.RawMessage, field string) string {
	var r struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Action != "accept" {
		return ""
	}
	s, _ := r.Content[field].(string)
	return s
}

// start creates a task of tool and returns its id.
func (b *backendTasks) start(tool string, ms int, secret string) string {
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	id := "fx-" + hex.EncodeToString(raw)
	now := time.Now()
	t := &fixtureTask{tool: tool, status: "working", created: now, updated: now, stop: make(chan struct{}), answers: map[string]json.RawMessage{}}
	switch tool {
	case "backend_ask":
		t.pending = map[string]any{"ask-1": elicit("Your name?", "name", "string")}
		t.finish = func(a map[string]json.RawMessage) string { return "Hello, " + acceptedText(a["ask-1"], "name") }
	case "confirm_delete":
		t.pending = map[string]any{"confirm": elicit("Delete "+secret+"?", "confirm", "boolean")}
		t.finish = func(map[string]json.RawMessage) string { return "deleted " + secret }
	case "multi_input":
		t.pending = map[string]any{"name": elicit("Your name?", "name", "string"), "confirm": elicit("Go ahead?", "confirm", "boolean")}
		t.finish = func(a map[string]json.RawMessage) string { return "got " + strconv.Itoa(len(a)) + " inputs" }
	case "test_tool_with_task":
		t.status, t.text = "completed", "Hello, "+secret+"!"
	}
	if t.pending != nil {
		t.status = "input_required"
	}
	b.mu.Lock()
	b.tasks[id] = t
	b.mu.Unlock()
	if tool == "protocol_error_job" {
		go func() {
			defer func() {
				if p := recover(); p != nil {
					b.mu.Lock()
					t.status, t.updated = "failed", time.Now()
					t.err = map[string]any{"code": jsonrpc.CodeInternalError, "message": fmt.Sprintf("tool panicked: %s: %v", tool, p)}
					b.mu.Unlock()
				}
			}()
			panic("boom")
		}()
	}
	if tool == "backend_task" {
		go func() {
			timer := time.NewTimer(time.Duration(ms) * time.Millisecond)
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-t.stop:
				return
			}
			b.mu.Lock()
			if t.status == "working" {
				t.status, t.updated = "completed", time.Now()
				t.text = "backend task done after " + strconv.Itoa(ms) + " ms" + secret
			}
			b.mu.Unlock()
		}()
	}
	return id
}

// wire is task id as the extension's Task (a DetailedTask for
// resultType complete).
func (b *backendTasks) wire(id, resultType string) map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tasks[id]
	m := map[string]any{"resultType": resultType, "taskId": id, "status": t.status,
		"createdAt": t.created.UTC().Format(time.RFC3339Nano), "lastUpdatedAt": t.updated.UTC().Format(time.RFC3339Nano),
		"ttlMs": 3600000, "pollIntervalMs": 50}
	if resultType == "task" {
		return m
	}
	switch t.status {
	case "completed":
		m["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": t.text}}, "isError": false}
	case "failed":
		m["error"], m["statusMessage"] = t.err, t.err["message"]
	case "input_required":
		reqs := map[string]any{}
		for k, p := range t.pending {
			reqs[k] = map[string]any{"method": "elicitation/create", "params": p}
		}
		m["inputRequests"] = reqs
	}
	return m
}
