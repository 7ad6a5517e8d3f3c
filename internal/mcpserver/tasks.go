package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Tasks on /mcp (docs/mcp.md "Tasks"): the MCP tasks extension,
// io.modelcontextprotocol/tasks, as published for protocol 2026-07-28
// (modelcontextprotocol/ext-tasks, specification/2026-07-28/tasks.md). A
// client that declares the extension in a tools/call's per-request
// capabilities may get a CreateTaskResult (resultType "task") instead of
// the CallToolResult; it polls tasks/get, answers tasks/update, and sends
// tasks/cancel, on any replica. toolrouterd decides, per tool (registry
// key task): optional and required tools run as toolrouterd tasks for a
// declaring client; a required tool called by a client that did not
// declare the extension is refused with -32021.
//
// The go-sdk (v1.8.0) has no tasks support: it answers methods it does not
// know "method not found" before any middleware sees them, and its
// CallToolResult cannot carry a task. So the tasks/* requests are answered
// here, before the SDK reads the request, and a CreateTaskResult is the
// CallToolResult type with its own JSON.

// TasksExtension is the extension's identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

// codeMissingCapability is MISSING_REQUIRED_CLIENT_CAPABILITY (2026-07-28).
const codeMissingCapability = -32021

// Tasks runs calls as tasks (task.Runner).
type Tasks interface {
	Start(ctx context.Context, cr *toolrouter.CallRequest) (*toolrouter.Task, <-chan struct{}, error)
	Get(ctx context.Context, id string) (*toolrouter.Task, error)
	Cancel(ctx context.Context, id string) (*toolrouter.Task, error)
}

// declaresTasks reports whether a request's clientCapabilities (raw JSON)
// declare the tasks extension.
func declaresTasks(caps json.RawMessage) bool {
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	// caps is encoding/json's (clientCapabilities), which writes the key
	// as it is: without its text it cannot be there (no decode per call).
	if !bytes.Contains(caps, []byte(TasksExtension)) || json.Unmarshal(caps, &c) != nil {
		return false
	}
	_, ok := c.Extensions[TasksExtension]
	return ok
}

// backendCapabilities are the caller's capabilities as the backend of a
// call toolrouterd runs as its own task gets them: without the tasks
// extension, since the task is toolrouterd's (the backend answers the
// call itself, or, needing a task, refuses it with -32021). A call that is
// not toolrouterd's task relays them whole (taskrelay.go).
func backendCapabilities(caps json.RawMessage) json.RawMessage {
	if !declaresTasks(caps) {
		return caps
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(caps, &c) != nil {
		return caps
	}
	var ext map[string]json.RawMessage
	if json.Unmarshal(c["extensions"], &ext) != nil {
		return caps
	}
	delete(ext, TasksExtension)
	if len(ext) == 0 {
		delete(c, "extensions")
	} else {
		c["extensions"], _ = json.Marshal(ext)
	}
	out, err := json.Marshal(c)
	if err != nil {
		return caps
	}
	return out
}

// missingTasks is the -32021 error naming the tasks extension.
func missingTasks(why string) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: codeMissingCapability, Message: "Missing required client capability: " + why, Data: data}
}

// taskMode is the registry key task of the tool an MCP name calls (unset
// when none is listed under it).
func (h *Handler) taskMode(name string) toolrouter.TaskMode {
	for _, t := range h.d.Tools().Tools() {
		if t.Task != toolrouter.TaskUnset && toolrouter.ExportName(toolrouter.FormatMCP, t.Name) == name {
			return t.Task
		}
	}
	return toolrouter.TaskUnset
}

// asTask decides whether a tools/call runs as a task: ok when it does
// (the call of a declaring client to an optional or required tool), an
// error when it must but cannot (a required tool, a client that did not
// declare the extension).
func (h *Handler) asTask(modern bool, caps json.RawMessage, name string) (bool, error) {
	if h.d.Tasks == nil {
		return false, nil
	}
	mode := h.taskMode(name)
	if mode != toolrouter.TaskOptional && mode != toolrouter.TaskRequired {
		return false, nil
	}
	if modern && declaresTasks(caps) {
		return true, nil
	}
	if mode == toolrouter.TaskRequired {
		return false, missingTasks("the tool " + name + " runs only as a task: declare the " + TasksExtension + " extension in the request's clientCapabilities (protocol " + modernVersion + ")")
	}
	return false, nil
}

// startTask starts cr as a task and answers the CreateTaskResult.
func (h *Handler) startTask(ctx context.Context, cr *toolrouter.CallRequest) (mcp.Result, error) {
	// Progress and log notifications are not sent for tasks (the
	// extension): the request that started it ends now.
	if cr.Relay != nil {
		cr.Relay = &toolrouter.Relay{ClientCapabilities: backendCapabilities(cr.Relay.ClientCapabilities)}
	}
	t, _, err := h.d.Tasks.Start(ctx, cr)
	if err != nil {
		h.d.Logger.Error().Err(err).Str("tool", cr.Call.ToolName).Msg("start MCP task")
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: the task could not be created"}
	}
	return &createTaskResult{CallToolResult: &mcp.CallToolResult{}, task: h.wireTask(t, "task")}, nil
}

// createTaskResult is a tools/call's CreateTaskResult: the SDK's Result
// interface (through the embedded CallToolResult, never sent), with the
// task as its JSON.
type createTaskResult struct {
	*mcp.CallToolResult
	task map[string]any
}

func (c *createTaskResult) MarshalJSON() ([]byte, error) { return json.Marshal(c.task) }

// wireTask is a task as the extension's Task (DetailedTask for tasks/get:
// with result, error or inputRequests), under resultType.
func (h *Handler) wireTask(t *toolrouter.Task, resultType string) map[string]any {
	m := map[string]any{
		"resultType":    resultType,
		"taskId":        t.TaskID,
		"status":        string(t.Status),
		"createdAt":     t.CreatedAt.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt": t.UpdatedAt.UTC().Format(time.RFC3339Nano),
		"ttlMs":         t.TTLMillis,
	}
	if t.TTLMillis <= 0 {
		m["ttlMs"] = nil // unlimited
	}
	if t.PollIntervalMillis > 0 {
		m["pollIntervalMs"] = t.PollIntervalMillis
	}
	msg := t.StatusMessage
	if msg == "" && t.Progress != nil {
		msg = t.Progress.Message
	}
	if msg != "" {
		m["statusMessage"] = msg
	}
	if resultType == "task" {
		return m // the seed state only
	}
	switch t.Status {
	case toolrouter.TaskCompleted:
		res := t.Result
		if res == nil {
			res = &toolrouter.Result{Success: true}
		}
		if e := protocolError(res); e != nil {
			// What the call would have answered is a JSON-RPC error: the
			// task failed with it (the extension's failed status).
			m["status"], m["error"] = string(toolrouter.TaskFailed), e
			if _, ok := m["statusMessage"]; !ok {
				m["statusMessage"] = e.Message
			}
			break
		}
		m["result"] = withResultType(result(res), true, h.complete)
	case toolrouter.TaskFailed:
		m["error"] = map[string]any{"code": jsonrpc.CodeInternalError, "message": t.Error}
	case toolrouter.TaskInputRequired:
		// A held call waits for an approver, not for the client: nothing
		// is outstanding for it to answer (statusMessage names the
		// approval).
		m["inputRequests"] = map[string]any{}
	}
	return m
}

// taskMethods are the methods of the extension answered here.
var taskMethods = map[string]bool{"tasks/get": true, "tasks/update": true, "tasks/cancel": true}

// serveTaskMethod answers a POST holding one tasks/* request (2026-07-28,
// stateless) and reports whether it did.
func (h *Handler) serveTaskMethod(w http.ResponseWriter, r *http.Request, msgs []jsonrpc.Message, array bool) bool {
	if r.Method != http.MethodPost || array || len(msgs) != 1 {
		return false
	}
	req, ok := msgs[0].(*jsonrpc.Request)
	if !ok || !taskMethods[req.Method] || !req.IsCall() {
		return false
	}
	var p struct {
		TaskID string   `json:"taskId"`
		Meta   mcp.Meta `json:"_meta"`
	}
	answerStatus := http.StatusOK
	answer := func(res any, rpcErr *jsonrpc.Error) {
		if pw, ok := w.(*problemWriter); ok {
			pw.done = true
			w = pw.ResponseWriter
		}
		body := map[string]any{"jsonrpc": "2.0", "id": req.ID.Raw()}
		if rpcErr != nil {
			e := map[string]any{"code": rpcErr.Code, "message": rpcErr.Message}
			if len(rpcErr.Data) > 0 {
				e["data"] = rpcErr.Data
			}
			body["error"] = e
		} else {
			body["result"] = res
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(answerStatus)
		_ = json.NewEncoder(w).Encode(body)
	}
	if json.Unmarshal(req.Params, &p) != nil || p.TaskID == "" {
		answer(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: req.Method + ": params.taskId is required"})
		return true
	}
	if n := r.Header.Get("Mcp-Name"); n != "" && n != p.TaskID {
		answerStatus = http.StatusBadRequest // HEADER_MISMATCH, as the SDK answers it for other methods
		answer(nil, &jsonrpc.Error{Code: -32020, Message: "Mcp-Name header does not match params.taskId"})
		return true
	}
	if !declaresTasks(clientCapabilities(p.Meta)) {
		answer(nil, missingTasks(req.Method+" needs the "+TasksExtension+" extension declared in the request's clientCapabilities"))
		return true
	}
	if isRelayedTask(p.TaskID) {
		// A backend's task (taskrelay.go).
		res, rpcErr := h.relayTaskMethod(r.Context(), req.Method, p.TaskID, req.Params, clientCapabilities(p.Meta))
		answer(res, rpcErr)
		return true
	}
	if h.d.Tasks == nil {
		answer(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"})
		return true
	}
	ctx := r.Context() // the client the edge authenticated: tasks are its own
	var (
		t   *toolrouter.Task
		err error
	)
	switch req.Method {
	case "tasks/get":
		t, err = h.d.Tasks.Get(ctx, p.TaskID)
	case "tasks/cancel":
		t, err = h.d.Tasks.Cancel(ctx, p.TaskID)
	case "tasks/update":
		// toolrouterd's tasks never ask the client for input (a held call
		// waits for an approver): responses are acknowledged and ignored,
		// as the extension asks of keys not outstanding.
		t, err = h.d.Tasks.Get(ctx, p.TaskID)
	}
	if err != nil {
		if toolrouter.ErrorCode(err) == toolrouter.ENOTFOUND {
			// Another client's task is a task that does not exist.
			answer(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"})
			return true
		}
		h.d.Logger.Error().Err(err).Str("method", req.Method).Msg("MCP task")
		answer(nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"})
		return true
	}
	if req.Method == "tasks/get" {
		answer(h.wireTask(t, "complete"), nil)
		return true
	}
	answer(map[string]any{"resultType": "complete"}, nil)
	return true
}
