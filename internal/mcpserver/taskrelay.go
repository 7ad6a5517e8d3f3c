package mcpserver

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// A backend's own tasks, relayed (docs/mcp.md "Tasks"; the extension as
// published for 2026-07-28, modelcontextprotocol/ext-tasks
// specification/2026-07-28/tasks.md). A client that declares the tasks
// extension has it relayed to the backend; a backend answering its
// tools/call with a CreateTaskResult gets the client a task id of
// toolrouterd's: the backend's task id and where it lives (the MCP server,
// its session, the tool called), with the client and the user it was
// issued to, sealed with AES-256-GCM under a key derived from the state key
// that signs input_required requestStates (mrtr.go: Deps.StateKey, or the
// one generated into the store, so every replica opens what any sealed).
// No client can read, forge or redirect one; a tasks/* request carrying
// one goes from whichever replica takes it to that backend, through the
// pipeline again (the tool resolved in the caller's view and scopes on
// every poll, the backend credential of the caller, the circuit), and a
// completed task's result through the stages after the backend as a
// synchronous call's result, audited. Nothing is stored: the task lives
// on the backend, and outlives the client's connection and any replica.

// sealedTaskPrefix marks a task id toolrouterd sealed for a backend task
// (toolrouterd's own tasks are "task_…").
const sealedTaskPrefix = "trt1."

// relayedTask is what a sealed task id carries.
type relayedTask struct {
	Server  string `json:"s"`           // the MCP server of the task
	Tool    string `json:"t"`           // the name the client called
	Inner   string `json:"a,omitempty"` // call_tool's: the tool it called
	ID      string `json:"i"`           // the backend's taskId
	Session string `json:"n,omitempty"` // the backend session, if any
	Client  string `json:"c,omitempty"` // the client it was issued to
	User    string `json:"u,omitempty"` // the user it was issued for
	Plan    string `json:"p,omitempty"` // the plan of the call
}

// taskAEAD is the cipher sealing task ids: AES-256-GCM under
// HMAC-SHA256(state key, label), so the state key is never used as is
// for two purposes.
func taskAEAD(stateKey []byte) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, stateKey)
	m.Write([]byte("toolrouterd relayed task id v1"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("task id cipher: %w", err)
	}
	return cipher.NewGCM(block)
}

// sealTask is the task id of t for the client.
func sealTask(stateKey []byte, t relayedTask) (string, error) {
	aead, err := taskAEAD(stateKey)
	if err != nil {
		return "", err
	}
	plain, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("seal task id: %w", err)
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	sealed := aead.Seal(nonce, nonce, plain, []byte(sealedTaskPrefix))
	return sealedTaskPrefix + base64.RawURLEncoding.EncodeToString(sealed), nil
}

// errNotSealed is the error of a task id that is not one toolrouterd
// sealed (or one altered).
var errNotSealed = errors.New("not a task id toolrouterd sealed")

// openTask is what the sealed task id tok carries.
func openTask(stateKey []byte, tok string) (relayedTask, error) {
	var t relayedTask
	rest, ok := strings.CutPrefix(tok, sealedTaskPrefix)
	if !ok {
		return t, errNotSealed
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return t, errNotSealed
	}
	aead, err := taskAEAD(stateKey)
	if err != nil {
		return t, err
	}
	if len(raw) < aead.NonceSize() {
		return t, errNotSealed
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(sealedTaskPrefix))
	if err != nil || json.Unmarshal(plain, &t) != nil || t.ID == "" || t.Tool == "" || t.Server == "" {
		return relayedTask{}, errNotSealed
	}
	return t, nil
}

// isRelayedTask reports whether id is a sealed backend task's.
func isRelayedTask(id string) bool { return strings.HasPrefix(id, sealedTaskPrefix) }

// callerOf is the client and user names of the caller in ctx.
func callerOf(ctx context.Context) (client, user string) {
	if c := access.FromContext(ctx); c != nil {
		client = c.Name
	}
	if u := access.UserFromContext(ctx); u != nil {
		user = u.Subject
	}
	return client, user
}

// relayedCreate is the CreateTaskResult of a tools/call the backend
// answered with task bt: its seed state, under a sealed id.
func (h *Handler) relayedCreate(ctx context.Context, tool, inner, planID string, res *toolrouter.Result) (*createTaskResult, error) {
	bt := redactedState(res)
	client, user := callerOf(ctx)
	key, err := h.stateKey(ctx)
	if err != nil {
		return nil, err
	}
	id, err := sealTask(key, relayedTask{Server: bt.Server, Tool: tool, Inner: inner, ID: bt.ID, Session: bt.Session, Client: client, User: user, Plan: planID})
	if err != nil {
		return nil, err
	}
	return &createTaskResult{CallToolResult: &mcp.CallToolResult{}, task: relayedWire(id, bt, "task")}, nil
}

// redactedState is res's backend task with an unfinished or failed
// task's statusMessage, inputRequests and error as the pipeline left them
// (redacted), from the TaskState it carries as MCPResult; a completed
// task's result is res's own.
func redactedState(res *toolrouter.Result) *toolrouter.BackendTask {
	bt := res.BackendTask
	if bt.Status == toolrouter.TaskCompleted || len(res.MCPResult) == 0 {
		return bt
	}
	var st toolrouter.TaskState
	if json.Unmarshal(res.MCPResult, &st) != nil {
		return bt
	}
	cp := *bt
	cp.StatusMessage, cp.InputRequests, cp.Error = st.StatusMessage, st.InputRequests, st.Error
	return &cp
}

// relayedWire is a backend task as the client gets it: the backend's
// fields, the sealed id.
func relayedWire(id string, bt *toolrouter.BackendTask, resultType string) map[string]any {
	m := map[string]any{"resultType": resultType, "taskId": id, "status": string(bt.Status),
		"createdAt": bt.CreatedAt, "lastUpdatedAt": bt.LastUpdatedAt, "ttlMs": bt.TTLMillis}
	if bt.TTLMillis == nil {
		m["ttlMs"] = nil
	}
	if bt.PollIntervalMillis > 0 {
		m["pollIntervalMs"] = bt.PollIntervalMillis
	}
	if bt.StatusMessage != "" {
		m["statusMessage"] = bt.StatusMessage
	}
	return m
}

// relayTaskMethod answers a tasks/* request for a sealed task id: the
// backend's answer, through the pipeline. It returns the result, or the
// JSON-RPC error to answer.
func (h *Handler) relayTaskMethod(ctx context.Context, method, id string, params json.RawMessage, caps json.RawMessage) (any, *jsonrpc.Error) {
	notFound := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	key, err := h.stateKey(ctx)
	if err != nil {
		h.d.Logger.Error().Err(err).Msg("relayed MCP task: the state key")
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: the state key is unavailable; retry later"}
	}
	rt, err := openTask(key, id)
	client, user := callerOf(ctx)
	if err != nil || rt.Client != client || rt.User != user {
		// Altered, forged, or another client's or user's: a task that
		// does not exist.
		return nil, notFound
	}
	op := &toolrouter.TaskOp{Method: method, ID: rt.ID, Session: rt.Session, Server: rt.Server}
	if method == "tasks/update" {
		var p struct {
			InputResponses json.RawMessage `json:"inputResponses"`
		}
		_ = json.Unmarshal(params, &p)
		op.InputResponses = p.InputResponses
	}
	args := map[string]any{}
	if rt.Inner != "" {
		args["name"] = rt.Inner // call_tool of a search view: resolved as it was
	}
	cr := &toolrouter.CallRequest{PlanID: rt.Plan, Call: toolrouter.Call{Format: toolrouter.FormatMCP, ToolName: rt.Tool, Arguments: args},
		Entry: toolrouter.EntryMCP, TaskOp: op, Relay: &toolrouter.Relay{ClientCapabilities: caps}}
	res, err := h.d.Router.Do(ctx, cr)
	if err != nil {
		h.d.Logger.Error().Err(err).Str("method", method).Msg("relayed MCP task")
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	bt := res.BackendTask
	if bt == nil {
		// The pipeline refused it (the tool is no longer the caller's to
		// call: out of its scopes or view) or the backend could not be
		// reached.
		if res.ErrorCategory != nil && (*res.ErrorCategory == toolrouter.CategoryNotFound || *res.ErrorCategory == toolrouter.CategoryPermission) {
			return nil, notFound
		}
		msg := "the MCP server of the task could not be reached"
		if res.Error != nil {
			msg = *res.Error
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
	}
	if len(bt.RPCError) > 0 {
		rpcErr := bt.RPCError
		var st toolrouter.TaskState
		if len(res.MCPResult) > 0 && json.Unmarshal(res.MCPResult, &st) == nil && len(st.Error) > 0 {
			rpcErr = st.Error // as the pipeline left it (redacted)
		}
		var e jsonrpc.Error
		if json.Unmarshal(rpcErr, &e) != nil || e.Code == 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the MCP server of the task answered an error"}
		}
		if e.Code == jsonrpc.CodeInvalidParams {
			return nil, notFound // the backend's not-found, in the same words
		}
		return nil, &e
	}
	if method != "tasks/get" {
		return map[string]any{"resultType": "complete"}, nil
	}
	bt = redactedState(res)
	m := relayedWire(id, bt, "complete")
	switch bt.Status {
	case toolrouter.TaskCompleted:
		// The result as the pipeline left it: what a synchronous call
		// answering it would have returned.
		m["result"] = withResultType(result(res), true, h.complete)
	case toolrouter.TaskFailed:
		e := bt.Error
		if len(e) == 0 {
			e, _ = json.Marshal(map[string]any{"code": jsonrpc.CodeInternalError, "message": bt.StatusMessage})
		}
		m["error"] = e
	case toolrouter.TaskInputRequired:
		ir := bt.InputRequests
		if len(ir) == 0 {
			ir = json.RawMessage(`{}`)
		}
		m["inputRequests"] = ir
	}
	return m, nil
}
