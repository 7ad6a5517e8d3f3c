package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// client is the client a method handler's request came from (nil on an
// open service).
func client(req mcp.Request) *access.Client {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		c, _ := ex.TokenInfo.Extra[clientExtra].(*access.Client)
		return c
	}
	return nil
}

// user is who the request is made for (nil: none).
func user(req mcp.Request) *access.User {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		u, _ := ex.TokenInfo.Extra[userExtra].(*access.User)
		return u
	}
	return nil
}

// intercept keeps tools/list in step with the registry and answers every
// tools/call itself, so a tool missing from the list (unknown, or added by
// a reload not yet synced) gets the router's not_found result rather than
// a protocol error.
func (h *Handler) intercept(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := h.dispatch(ctx, next, method, req)
		var coded *jsonrpc.Error
		if err != nil && !errors.As(err, &coded) {
			// The SDK answers an error without a JSON-RPC code with code 0.
			err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
		}
		return res, err
	}
}

// dispatch is intercept's work.
func (h *Handler) dispatch(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	c := client(req)
	switch method {
	case "tools/list":
		return h.listTools(ctx, next, method, req, c)
	case "resources/read":
		// A backend's resource is read as the caller's user, as its
		// tools are called (docs/backend-auth.md).
		ctx = access.NewUserContext(access.NewContext(ctx, c), user(req))
		if r, ok := req.(*mcp.ReadResourceRequest); ok && r.Params != nil && strings.HasPrefix(r.Params.URI, toolrouter.SkillScheme) {
			if _, _, ok := toolrouter.ParseGatewaySkillURI(r.Params.URI); ok {
				return h.readSkillFile(ctx, req, r.Params.URI, c)
			}
		}
		return h.readResource(ctx, h.readListed(next, c), req, c)
	case "resources/list":
		return h.listResources(ctx, next, req, c)
	case "resources/templates/list":
		return h.listTemplates(ctx, next, req, c)
	case "prompts/list":
		return h.listPrompts(ctx, next, req, c)
	case "prompts/get":
		return h.getPrompt(access.NewUserContext(access.NewContext(ctx, c), user(req)), req, c)
	case "resources/directory/read":
		return h.readDirectory(access.NewUserContext(access.NewContext(ctx, c), user(req)), req, c)
	case "skills/list":
		return h.listSkills(req, c)
	case "skills/get":
		return h.getSkill(req, c)
	case "initialize", "server/discover":
		res, err := next(ctx, method, req)
		h.instruct(res)
		return res, err
	case "tools/call":
		if r, ok := req.(*mcp.CallToolRequest); ok {
			if err := h.takeCall(ctx, c, req); err != nil {
				return nil, err
			}
			if p := postOf(req); p != nil && p.slots != nil {
				// A call of a JSON-RPC batch waits for one of the
				// batch's slots (Deps.BatchConcurrency).
				select {
				case p.slots <- struct{}{}:
					defer func() { <-p.slots }()
				case <-ctx.Done():
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "request cancelled"}
				}
			}
			h.inflight.Add(1)
			defer h.inflight.Add(-1)
			return h.call(access.NewUserContext(access.NewContext(ctx, c), user(req)), r)
		}
	}
	return next(ctx, method, req)
}

// call routes one tools/call: a CallToolResult, or a CreateTaskResult
// (tasks.go).
func (h *Handler) call(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	p := req.Params
	// The session's token (session.go), the same on every replica.
	sessionID := ""
	if ex := req.GetExtra(); ex != nil && ex.Header != nil {
		sessionID = ex.Header.Get(sessionHeader)
	}
	planID, err := h.d.PlanID(sessionID, p.Meta)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: toolrouter.ErrorMessage(err)}
	}
	var args any = map[string]any{}
	if len(bytes.TrimSpace(p.Arguments)) > 0 && !bytes.Equal(bytes.TrimSpace(p.Arguments), []byte("null")) {
		if err := json.Unmarshal(p.Arguments, &args); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "arguments: not valid JSON: " + err.Error()}
		}
	}
	// The call itself, in the mcp format: the pipeline resolves the MCP
	// name (or the canonical one) and validates the arguments.
	cr := &toolrouter.CallRequest{PlanID: planID, Call: toolrouter.Call{Format: toolrouter.FormatMCP, ToolName: p.Name}, Entry: toolrouter.EntryMCP}
	cr.Call.Arguments, cr.Unreadable = callArguments(p.Name, args)
	// A request of the fast path (fastcall.go) has no session: its _meta
	// says its protocol version, which the fast path took only when it
	// was 2026-07-28.
	modern := modernSession(req.Session) || (req.Session == nil && metaVersion(p.Meta) >= modernVersion)
	clientName := ""
	if c := access.FromContext(ctx); c != nil {
		clientName = c.Name
	}
	rl := relay(ctx, req, modern)
	caps := clientCapabilities(p.Meta) // encoded once for the three that read it
	if modern {
		// The caller's capabilities as they are, the tasks extension
		// included: a backend may answer with its own task, relayed
		// (taskrelay.go).
		rl.ClientCapabilities = caps
	}
	if p.RequestState != "" {
		if rl.RequestState, err = h.unwrapState(ctx, p.RequestState, p.Name, clientName); err != nil {
			return nil, h.stateError(err)
		}
	}
	if p.InputResponses != nil {
		if rl.InputResponses, err = json.Marshal(p.InputResponses); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inputResponses: " + err.Error()}
		}
	}
	cr.Relay = rl
	if task, err := h.asTask(modern, caps, p.Name); err != nil {
		return nil, err
	} else if task {
		return h.startTask(ctx, cr)
	}
	res, err := h.d.Router.Do(ctx, cr)
	if err != nil {
		if toolrouter.ErrorCode(err) == toolrouter.EINVALID {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: toolrouter.ErrorMessage(err)}
		}
		h.d.Logger.Error().Err(err).Str("plan_id", planID).Str("tool", p.Name).Msg("route MCP tools/call")
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	if res.BackendTask != nil {
		if !modern || !declaresTasks(caps) {
			// The extension forbids it; the backend was not told the
			// caller takes tasks (it never is, then).
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the MCP server answered with a task, which the client did not declare it takes"}
		}
		inner := ""
		if p.Name == toolrouter.CallToolName {
			// (As sent: resolving it rewrote cr.Call to the tool it calls.)
			if m, ok := args.(map[string]any); ok {
				inner, _ = m["name"].(string)
			}
		}
		ct, err := h.relayedCreate(ctx, p.Name, inner, planID, res)
		if err != nil {
			return nil, h.stateError(err)
		}
		return ct, nil
	}
	if err := connectError(req, caps, res); err != nil {
		return nil, err
	}
	if e := protocolError(res); e != nil {
		return nil, e
	}
	out := result(res)
	if out.NeedsInput() {
		if modern {
			// Relayed as the backend sent it, with a requestState that
			// brings the retry back to it (mrtr.go).
			if out.RequestState, err = h.wrapState(ctx, p.Name, clientName, out.RequestState); err != nil {
				return nil, h.stateError(err)
			}
			return out, nil
		}
		// An older client cannot answer it: the call failed.
		failed := *res
		failed.MCPResult = nil
		out = result(&failed)
	}
	return withResultType(out, modern, h.complete), nil
}

// metaLogLevel is the _meta key of a 2026-07-28 request's log level
// (mcp.MetaKeyLogLevel, deprecated with logging by SEP-2577 and still in
// force).
const metaLogLevel = "io.modelcontextprotocol/logLevel"

// metaVersion is the protocol version a request's _meta names ("" when
// none, or not a date).
func metaVersion(meta mcp.Meta) string {
	v, _ := meta[metaProtocolVersion].(string)
	if !isDate(v) {
		return ""
	}
	return v
}

// stateError is the JSON-RPC error of a requestState that could not be
// wrapped or unwrapped: as it is when it says why, else (the state key
// could not be read from the store) an internal error, logged.
func (h *Handler) stateError(err error) error {
	var coded *jsonrpc.Error
	if errors.As(err, &coded) {
		return err
	}
	h.lim.Event(&h.d.Logger, zerolog.ErrorLevel, "MCP requestState").Err(err).Msg("MCP requestState")
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: the state key is unavailable; retry later"}
}

// relay passes what a backend sends about the call on to the caller:
// progress under the caller's progress token (when it sent one), log
// messages through its session, which filters them by the caller's level.
//
// Under 2026-07-28 the level is the request's (_meta logLevel): a request
// without one gets no log message, so none is asked of the backend either
// (a backend asked for logs is asked for every level; issue 37).
func relay(ctx context.Context, req *mcp.CallToolRequest, modern bool) *toolrouter.Relay {
	ss := req.Session
	if ss == nil {
		return &toolrouter.Relay{}
	}
	r := &toolrouter.Relay{}
	if _, level := req.Params.Meta[metaLogLevel]; level || !modern {
		r.Log = func(level, logger string, data json.RawMessage) {
			var v any
			if json.Unmarshal(data, &v) != nil {
				v = string(data)
			}
			//lint:ignore SA1019 logging is deprecated by 2026-07-28 (SEP-2577) but in force for the revisions up to 2025-11-25 that this server still serves
			_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(level), Logger: logger, Data: v})
		}
	}
	if token := req.Params.GetProgressToken(); token != nil {
		r.Progress = func(progress, total float64, message string) {
			_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Total: total, Message: message})
		}
	}
	return r
}

// result is the CallToolResult of a route result. The CallToolResult of an
// MCP backend passes through as it came (every content block,
// structuredContent, isError, _meta), with toolrouter's keys added to its
// _meta. Otherwise a failure is isError with the error text, and a success
// is the output's JSON text, plus the output as structuredContent when it
// is an object (protocol versions up to 2025-11-25 require an object there).
func result(res *toolrouter.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{}
	if len(res.MCPResult) > 0 && !decodeResult(res.MCPResult, out) {
		out = &mcp.CallToolResult{}
	}
	passed := len(out.Content) > 0 || out.StructuredContent != nil || out.IsError
	if out.Meta == nil {
		out.Meta = mcp.Meta{}
	}
	out.Meta[MetaToolCallID] = res.ToolCallID
	out.Meta[MetaSequence] = res.Sequence
	out.Meta[MetaPlanID] = res.PlanID
	if res.ToolName != "" {
		out.Meta[MetaToolName] = res.ToolName
	}
	if res.Truncated { // shaped to its budget (docs/output-budgets.md "Output budgets")
		out.Meta[MetaTruncated] = true
	}
	if res.Cost != nil { // what the call cost (docs/costs.md)
		out.Meta[MetaCost] = res.Cost
	}
	if out.NeedsInput() {
		return out // the backend's input_required result, for call to relay
	}
	if res.Status == toolrouter.ResultAuthRequired && res.Error != nil {
		// A client without URL elicitation (connect.go): the URL in text.
		out.IsError = true
		out.Content = []mcp.Content{&mcp.TextContent{Text: *res.Error + ": " + res.ConnectURL}}
		out.Meta[MetaStatus] = res.Status
		return out
	}
	if res.Status == toolrouter.ResultAwaitingApproval {
		// docs/approvals.md "Approvals", /mcp: an error result the model and the
		// client can read, naming the approval and where the result will be.
		out.IsError = true
		out.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
			"awaiting approval: the call of %s was not run; an approver must approve %s (POST /approvals/%s); its result will be at GET /results/%s",
			res.ToolName, res.ApprovalID, res.ApprovalID, res.ToolCallID)}}
		out.Meta[MetaApprovalID] = res.ApprovalID
		out.Meta[MetaStatus] = res.Status
		return out
	}
	if passed {
		if !res.Success && res.ErrorCategory != nil {
			out.Meta[MetaErrorCategory] = string(*res.ErrorCategory)
		}
		return out
	}
	if !res.Success {
		msg := "tool call failed"
		if res.Error != nil && *res.Error != "" {
			msg = *res.Error
		}
		out.IsError = true
		out.Content = []mcp.Content{&mcp.TextContent{Text: msg}}
		if res.ErrorCategory != nil {
			out.Meta[MetaErrorCategory] = string(*res.ErrorCategory)
		}
		return out
	}
	if res.ValidationPassed != nil {
		out.Meta[MetaValidationPassed] = *res.ValidationPassed
	}
	raw := bytes.TrimSpace(res.Output)
	if len(raw) == 0 {
		raw = []byte("null")
	}
	text := string(raw)
	var str string
	if raw[0] == '"' && json.Unmarshal(raw, &str) == nil {
		text = str // a string output is its own text, not a JSON literal
	}
	out.Content = []mcp.Content{&mcp.TextContent{Text: text}}
	if raw[0] == '{' && json.Valid(raw) {
		out.StructuredContent = json.RawMessage(raw)
	}
	return out
}

// callArguments are the arguments of a tools/call of the tool name, as
// decoded from its params: an object, or the JSON text of one ("" and
// null are {}); anything else, or a blank name, makes the call unreadable
// (a parse failure, as /route answers the same call).
func callArguments(name string, args any) (map[string]any, error) {
	if strings.TrimSpace(name) == "" {
		return map[string]any{}, toolrouter.Invalid("tool_call", "parse error: tool call has an empty name")
	}
	m, err := format.DecodeArgs(args)
	if err != nil {
		return map[string]any{}, err
	}
	return m, nil
}

// codeBudget is the JSON-RPC error code of a tools/call refused by a spend
// limit (docs/costs.md "Spend limits"), in the implementation-defined
// server range next to the rate limit's.
const codeBudget = -32023

// protocolError is the JSON-RPC error a tools/call answers for res
// instead of a CallToolResult (a spend limit's refusal); nil when it
// answers the CallToolResult. A task of the call that ends with res ends
// failed with this error (tasks.go), as the extension asks.
func protocolError(res *toolrouter.Result) *jsonrpc.Error {
	if res.ErrorCategory != nil && *res.ErrorCategory == toolrouter.CategoryBudget {
		return budgetError(res)
	}
	return nil
}

// budgetError is the JSON-RPC error of a call a spend limit refused: its
// data says the category, when the limit resets and the seconds until
// then (as Retry-After would).
func budgetError(res *toolrouter.Result) *jsonrpc.Error {
	data := map[string]any{"category": string(toolrouter.CategoryBudget), "tool_call_id": res.ToolCallID}
	if !res.RetryAfter.IsZero() {
		data["resets_at"] = res.RetryAfter.UTC().Format(time.RFC3339)
		data["retry_after"] = retryAfterSeconds(res.RetryAfter)
	}
	b, _ := json.Marshal(data)
	msg := "spend limit reached"
	if res.Error != nil {
		msg = *res.Error
	}
	return &jsonrpc.Error{Code: codeBudget, Message: msg, Data: b}
}

// retryAfterSeconds is the whole seconds until t, at least 1.
func retryAfterSeconds(t time.Time) int64 {
	return max(1, int64(math.Ceil(time.Until(t).Seconds())))
}
