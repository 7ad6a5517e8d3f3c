package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// A backend's own tasks (docs/mcp.md "Tasks"): the MCP tasks extension,
// io.modelcontextprotocol/tasks, as published for protocol 2026-07-28
// (modelcontextprotocol/ext-tasks, specification/2026-07-28/tasks.md,
// SEP-2663). A backend told that the caller declared the extension (the
// caller's clientCapabilities, relayed on a 2026-07-28 session) may answer
// tools/call with a CreateTaskResult (resultType "task"). The go-sdk
// (v1.8.0) client decodes that answer as a CallToolResult and drops its
// taskId, so the transport keeps the bytes of such a call's answer
// (taskCapture) and the task is read from them; the tasks/get,
// tasks/update and tasks/cancel requests that follow, which the SDK has no
// methods for, are sent here as JSON-RPC on the server's HTTP client (its
// headers, the call's credential, the circuit above).

// maxCapture bounds the answer bytes kept for a call that may become a
// task; a longer answer (a large result, streamed progress) is no
// CreateTaskResult, which is small.
const maxCapture = 256 << 10

// taskCapture keeps the body of a tools/call's answer, and the session it
// was sent in.
type taskCapture struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	sse      bool
	session  string
	overflow bool
}

type taskCaptureKey struct{}

func withTaskCapture(ctx context.Context, c *taskCapture) context.Context {
	return context.WithValue(ctx, taskCaptureKey{}, c)
}

func taskCaptureFrom(ctx context.Context) *taskCapture {
	c, _ := ctx.Value(taskCaptureKey{}).(*taskCapture)
	return c
}

// capture makes resp's body, as it is read, kept in c.
func (c *taskCapture) capture(r *http.Request, resp *http.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Reset()
	c.overflow = false
	c.session = r.Header.Get(sessionIDHeader)
	c.sse = isEventStream(resp.Header.Get("Content-Type"))
	resp.Body = &captureBody{ReadCloser: resp.Body, c: c}
}

type captureBody struct {
	io.ReadCloser
	c *taskCapture
}

func (b *captureBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.mu.Lock()
	if b.c.buf.Len()+n > maxCapture {
		b.c.overflow = true
	} else if !b.c.overflow {
		b.c.buf.Write(p[:n])
	}
	b.c.mu.Unlock()
	return n, err
}

// Ended passes on the body's ended (see fastcall.go).
func (b *captureBody) Ended() bool { return ended(b.ReadCloser) }

// task is the CreateTaskResult the captured answer holds; nil when it
// holds none.
func (c *taskCapture) task() *toolrouter.BackendTask {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.overflow || !bytes.Contains(c.buf.Bytes(), []byte(`"task"`)) {
		return nil
	}
	var msgs [][]byte
	if c.sse {
		p := sseParser{r: bufio.NewReader(bytes.NewReader(c.buf.Bytes()))}
		for {
			_, data, err := p.next()
			if err != nil {
				break
			}
			msgs = append(msgs, bytes.Clone(data))
		}
	} else {
		msgs = [][]byte{c.buf.Bytes()}
	}
	for _, m := range msgs {
		var msg struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(m, &msg) != nil || len(msg.Result) == 0 {
			continue
		}
		if t, _, err := decodeTask(msg.Result); err == nil && t.ID != "" && resultTypeOf(msg.Result) == "task" {
			t.Session = c.session
			return t
		}
	}
	return nil
}

func resultTypeOf(raw json.RawMessage) string {
	var r struct {
		ResultType string `json:"resultType"`
	}
	_ = json.Unmarshal(raw, &r)
	return r.ResultType
}

// wireTask is the extension's Task (DetailedTask) on the wire.
type wireTask struct {
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result"`
	Error          json.RawMessage `json:"error"`
	InputRequests  json.RawMessage `json:"inputRequests"`
}

// decodeTask reads a Task (a CreateTaskResult, a tasks/get result): the
// task, and a completed one's result.
func decodeTask(raw json.RawMessage) (*toolrouter.BackendTask, json.RawMessage, error) {
	var w wireTask
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, nil, fmt.Errorf("the task: %w", err)
	}
	switch st := toolrouter.TaskStatus(w.Status); st {
	case toolrouter.TaskWorking, toolrouter.TaskInputRequired, toolrouter.TaskCompleted, toolrouter.TaskFailed, toolrouter.TaskCancelled:
	default:
		return nil, nil, fmt.Errorf("the task has no known status (%q)", w.Status)
	}
	return &toolrouter.BackendTask{ID: w.TaskID, Status: toolrouter.TaskStatus(w.Status), StatusMessage: w.StatusMessage,
		CreatedAt: w.CreatedAt, LastUpdatedAt: w.LastUpdatedAt, TTLMillis: w.TTLMs, PollIntervalMillis: w.PollIntervalMs,
		Error: w.Error, InputRequests: w.InputRequests}, w.Result, nil
}

// declaresTasks reports whether capabilities (a request's
// clientCapabilities) declare the tasks extension.
func declaresTasks(caps json.RawMessage) bool {
	if len(caps) == 0 || !bytes.Contains(caps, []byte(tasksExtension)) {
		return false
	}
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(caps, &c) != nil {
		return false
	}
	_, ok := c.Extensions[tasksExtension]
	return ok
}

const tasksExtension = "io.modelcontextprotocol/tasks"

// taskOp sends req's tasks/* request to the server and makes an outcome
// of the answer: for tasks/get, the task (Outcome.Task), and a completed
// one's CallToolResult as a call's outcome; for tasks/update and
// tasks/cancel, the acknowledgement (a Task with no Status). A JSON-RPC
// error answered (an unknown task) is Task.RPCError.
func (s *server) taskOp(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	op := req.TaskOp
	switch op.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return toolrouter.Failure(toolrouter.CategoryExecution, "%s is not a method of the tasks extension", op.Method)
	}
	if op.Server != s.name {
		// The name now calls another server's tool (a registry change):
		// the task's id is not sent there.
		return toolrouter.Failure(toolrouter.CategoryNotFound, "the task's MCP server %q no longer serves this tool", op.Server)
	}
	ctx, cancel := context.WithTimeout(withCredential(ctx, req.Credential), s.timeout())
	defer cancel()
	// The session says the protocol version: the user's for a call with
	// a backend credential (usersession.go), else the server's.
	var cs *mcp.ClientSession
	var err error
	if key := userKey(req.Credential); key != "" {
		cs, err = s.userSession(ctx, key, req.Credential)
	} else {
		cs, _, err = s.awaitSession(ctx, 0)
	}
	if err != nil {
		return s.unavailable(err)
	}
	version := cs.InitializeResult().ProtocolVersion
	caps := json.RawMessage(`{"extensions":{"` + tasksExtension + `":{}}}`)
	if req.Relay != nil && declaresTasks(req.Relay.ClientCapabilities) {
		caps = req.Relay.ClientCapabilities
	}
	params := map[string]any{"taskId": op.ID, "_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    version,
		mcp.MetaKeyClientInfo:         map[string]string{"name": "toolrouterd", "version": "1"},
		mcp.MetaKeyClientCapabilities: caps,
	}}
	if op.Method == "tasks/update" {
		responses := op.InputResponses
		if len(responses) == 0 {
			responses = json.RawMessage(`{}`)
		}
		params["inputResponses"] = responses
	}
	id := fastIDBase + s.callIDs.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": op.Method, "params": params})
	if err != nil {
		return toolrouter.Failure(toolrouter.CategoryParse, "%s: %v", op.Method, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return s.unavailable(err)
	}
	h := hreq.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Mcp-Protocol-Version", version)
	h.Set("Mcp-Method", op.Method)
	h.Set("Mcp-Name", op.ID) // the extension's routing header: the taskId
	if op.Session != "" {
		h.Set(sessionIDHeader, op.Session)
	}
	resp, err := s.http.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return toolrouter.Failure(toolrouter.CategoryTimeout, "MCP server %s: %s timed out", s.name, op.Method)
		}
		return s.unavailable(err)
	}
	msg, err := readAnswer(resp, strconv.AppendInt(nil, id, 10))
	if err != nil {
		return toolrouter.Failure(toolrouter.CategoryExecution, "MCP server %s: %s: %s", s.name, op.Method, s.scrub(err))
	}
	if msg.Error != nil {
		raw, _ := json.Marshal(msg.Error)
		return rpcErrorOutcome(op.ID, raw)
	}
	if op.Method != "tasks/get" {
		return toolrouter.Outcome{Answered: true, Output: json.RawMessage("null"), Task: &toolrouter.BackendTask{ID: op.ID}}
	}
	t, result, err := decodeTask(msg.Result)
	if err != nil {
		return toolrouter.Failure(toolrouter.CategoryParse, "MCP server %s: tasks/get: %v", s.name, err)
	}
	t.Server, t.ID, t.Session = s.name, op.ID, op.Session
	var out toolrouter.Outcome
	switch t.Status {
	case toolrouter.TaskCompleted:
		// The task's result is the call's: the outcome a synchronous call
		// answering it would have had.
		res := &mcp.CallToolResult{}
		if len(result) > 0 {
			if err := json.Unmarshal(result, res); err != nil {
				return toolrouter.Failure(toolrouter.CategoryParse, "MCP server %s: the completed task's result: %v", s.name, err)
			}
		}
		out = outcome(req.Tool, res)
		out.MCPResult = gatewayUIResult(s.name, out.MCPResult)
	case toolrouter.TaskFailed:
		var jerr jsonrpc.Error
		if json.Unmarshal(t.Error, &jerr) == nil && (jerr.Message != "" || jerr.Code != 0) {
			out = answeredError(&jerr)
		} else {
			out = toolrouter.Failure(toolrouter.CategoryExecution, "the MCP server's task failed")
		}
		out.MCPResult = stateCarrier(t)
	default:
		out = toolrouter.Outcome{Answered: true, Output: json.RawMessage("null"), MCPResult: stateCarrier(t)}
	}
	out.Attempts, out.Task = 1, t
	return out
}

// createdTaskOutcome is the outcome of a tools/call the backend answered
// with task t (a CreateTaskResult): its state is carried as
// Outcome.MCPResult too, so that the pipeline's redaction reads its
// statusMessage before /mcp hands the client the task.
func createdTaskOutcome(t *toolrouter.BackendTask) toolrouter.Outcome {
	return toolrouter.Outcome{Answered: true, Output: json.RawMessage("null"), Task: t, MCPResult: stateCarrier(t)}
}

// rpcErrorOutcome is the outcome of a tasks/* request the backend
// answered with the JSON-RPC error raw: the error is the task's RPCError,
// and is carried as Outcome.MCPResult (TaskState.Error) too, so that the
// pipeline's redaction reads it as it reads a synchronous call's error
// text before /mcp passes it on.
func rpcErrorOutcome(id string, raw json.RawMessage) toolrouter.Outcome {
	out := toolrouter.Outcome{Answered: true, Output: json.RawMessage("null"), Task: &toolrouter.BackendTask{ID: id, RPCError: raw}}
	out.MCPResult = stateCarrier(&toolrouter.BackendTask{Error: raw})
	return out
}

// stateCarrier is what an unfinished or failed task's state carries from
// the backend to the client (its statusMessage, inputRequests, error) as
// Outcome.MCPResult, where redaction reads it as it reads a call's
// result (TaskState decodes it); nil when it carries nothing.
func stateCarrier(t *toolrouter.BackendTask) json.RawMessage {
	if t.StatusMessage == "" && len(t.InputRequests) == 0 && len(t.Error) == 0 {
		return nil
	}
	b, err := json.Marshal(toolrouter.TaskState{StatusMessage: t.StatusMessage, InputRequests: t.InputRequests, Error: t.Error})
	if err != nil {
		return nil
	}
	return b
}

// readAnswer reads the JSON-RPC response numbered want of a POST's
// answer, JSON or an event stream.
func readAnswer(resp *http.Response, want []byte) (*wireMessage, error) {
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var m wireMessage
		if json.Unmarshal(data, &m) == nil && m.Error != nil {
			return &m, nil
		}
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	match := func(data []byte) (*wireMessage, bool) {
		var m wireMessage
		if json.Unmarshal(data, &m) != nil || !bytes.Equal(m.ID, want) || m.Method != "" {
			return nil, false
		}
		return &m, true
	}
	switch mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); strings.ToLower(strings.TrimSpace(mt)) {
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxFastMessage+1))
		if err != nil {
			return nil, fmt.Errorf("read the answer: %w", err)
		}
		if m, ok := match(data); ok {
			return m, nil
		}
		return nil, errors.New("the answer is not the response to the request")
	case "text/event-stream":
		p := sseParser{r: bufio.NewReader(resp.Body)}
		for {
			_, data, err := p.next()
			if err != nil {
				return nil, fmt.Errorf("the stream ended without the response: %w", err)
			}
			if m, ok := match(data); ok {
				return m, nil
			}
		}
	default:
		return nil, fmt.Errorf("unsupported content type %q", resp.Header.Get("Content-Type"))
	}
}
