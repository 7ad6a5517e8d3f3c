package toolrouter

import (
	"encoding/json"
	"time"
)

// TaskStatus is the state of a task (docs/mcp.md "Tasks"), the statuses of
// the MCP tasks extension (io.modelcontextprotocol/tasks, revision
// 2026-07-28): working and input_required may change, the other three are
// terminal.
type TaskStatus string

const (
	TaskWorking       TaskStatus = "working"
	TaskInputRequired TaskStatus = "input_required"
	TaskCompleted     TaskStatus = "completed"
	TaskFailed        TaskStatus = "failed"
	TaskCancelled     TaskStatus = "cancelled"
)

// Terminal reports whether s never changes again.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// TaskMode is a tool's registry key task.
type TaskMode string

const (
	// TaskUnset (the default): a call is a task only when the client of
	// /route asks (Prefer: respond-async, or its Prefer: wait runs out).
	TaskUnset TaskMode = ""
	// TaskForbidden: never a task.
	TaskForbidden TaskMode = "forbidden"
	// TaskOptional: as TaskUnset, and an /mcp client that declared the
	// tasks extension gets a task.
	TaskOptional TaskMode = "optional"
	// TaskRequired: always a task; an /mcp client must declare the
	// extension.
	TaskRequired TaskMode = "required"
)

// TaskProgress is the last progress a task's call reported.
type TaskProgress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// Task is a tool call toolrouterd runs in the background for a client that
// polls it (GET /tasks/{id}, or tasks/get on /mcp): a call of a tool marked
// task (registry key task), or a call a client asked to run asynchronously
// (Prefer: respond-async), or one that outlasted the caller's wait. It is
// kept in the store, so any replica answers a poll, and a restart keeps it.
type Task struct {
	TaskID string     `json:"task_id"`
	Status TaskStatus `json:"status"`
	// StatusMessage says why a task is in its status (a failure's reason,
	// the approval a held call waits for).
	StatusMessage string `json:"status_message,omitempty"`
	// Client owns the task: only it (or an admin) polls or cancels it.
	Client string `json:"-"`
	// Entry is where the call came in (EntryRoute, EntryMCP).
	Entry      string `json:"entry,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	PlanID     string `json:"plan_id,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ApprovalID names the approval a held call waits for (status
	// input_required).
	ApprovalID string        `json:"approval_id,omitempty"`
	Progress   *TaskProgress `json:"progress,omitempty"`
	// Result is the call's route result, once completed.
	Result *Result `json:"result,omitempty"`
	// Error is why a failed task failed.
	Error           string    `json:"error,omitempty"`
	CancelRequested bool      `json:"cancel_requested,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
	// TTLMillis is how long after its creation the task is kept (the
	// result retention); PollIntervalMillis the polling interval asked of
	// clients.
	TTLMillis          int64 `json:"ttl_ms"`
	PollIntervalMillis int64 `json:"poll_interval_ms"`
}

// BackendTask is a task an MCP backend created for a tools/call, or its
// state as a tasks/* request to it found it (docs/mcp.md "Tasks": a
// backend's own tasks, relayed). The /mcp endpoint hands its client a
// sealed id carrying where it lives; the backend's id never reaches the
// client.
type BackendTask struct {
	// Server is the MCP server that has it.
	Server string
	// ID is the backend's taskId; Session the backend session it lives in
	// (its Mcp-Session-Id; "" on a stateless server).
	ID      string
	Session string
	// Status and StatusMessage as the backend reported them; Status ""
	// for the answer of tasks/update and tasks/cancel (an
	// acknowledgement).
	Status        TaskStatus
	StatusMessage string
	// CreatedAt, LastUpdatedAt (as sent, ISO 8601), TTLMillis (nil:
	// unlimited) and PollIntervalMillis (0: none).
	CreatedAt          string
	LastUpdatedAt      string
	TTLMillis          *int64
	PollIntervalMillis int64
	// Error is a failed task's JSON-RPC error; InputRequests the
	// outstanding requests of an input_required one, both as sent.
	Error         json.RawMessage
	InputRequests json.RawMessage
	// RPCError is the JSON-RPC error the backend answered a tasks/*
	// request with (an unknown task), as sent; nil when it answered.
	RPCError json.RawMessage
}

// TaskState is what an unfinished or failed backend task's state carries
// to the client, as the Outcome.MCPResult (Result.MCPResult) of a TaskOp:
// there the pipeline's redaction reads it as it reads a call's result.
type TaskState struct {
	StatusMessage string          `json:"statusMessage,omitempty"`
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
	Error         json.RawMessage `json:"error,omitempty"`
}

// TaskOp, on a CallRequest, makes the call a tasks/* request to the
// backend task of the call's tool instead of a tools/call: the pipeline
// resolves the tool again (the caller's scopes and view, checked on every
// poll), skips what only a call's arguments concern (validation, before
// hooks, approval, spend), and the result of a completed task goes through
// every stage after the backend, as a synchronous call's result does.
type TaskOp struct {
	// Method is tasks/get, tasks/update or tasks/cancel.
	Method string
	// Server, ID and Session locate the backend task (BackendTask): a
	// tool that resolves to another server's is not sent it.
	Server  string
	ID      string
	Session string
	// InputResponses are a tasks/update's, as the client sent them.
	InputResponses json.RawMessage
}
