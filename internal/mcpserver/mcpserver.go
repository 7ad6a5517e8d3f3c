// Package mcpserver serves the registry as an MCP server over streamable
// HTTP (CONTRACT §5, "/mcp"): tools/list lists every registry tool under its
// MCP-safe name, and tools/call routes the call through the same router as
// POST /route, so ids, sequences, argument validation and error
// classification are the same.
//
// One endpoint speaks both eras of the protocol (README, "MCP"): a client
// that sends initialize (2025-03-26 to 2025-11-25) gets a session; a
// request that carries the 2026-07-28 per-request metadata (the
// MCP-Protocol-Version header, or the protocol version in params._meta) is
// served statelessly, as that revision asks: server/discover, no session
// id, list results with ttlMs and cacheScope, the Mcp-Method/Mcp-Name
// header checks, and removed methods answered "method not found".
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Keys of the _meta objects this server reads and writes.
const (
	// MetaPlanID in a tools/call's params._meta names the plan the call
	// belongs to (a string of 1 to 256 characters); without it the call
	// belongs to the plan "mcp-" + the MCP session id. Results carry it too.
	MetaPlanID = "toolrouter/plan_id"
	// MetaToolCallID is the result's stable tool_call_id.
	MetaToolCallID = "toolrouter/tool_call_id"
	// MetaSequence is the result's sequence within its plan.
	MetaSequence = "toolrouter/sequence"
	// MetaToolName is the canonical name of the tool that was called (in a
	// result), or of the tool an MCP name stands for (in tools/list).
	MetaToolName = "toolrouter/tool_name"
	// MetaErrorCategory is the error_category of a failed call.
	MetaErrorCategory = "toolrouter/error_category"
	// MetaValidationPassed is a validation tool's verdict.
	MetaValidationPassed = "toolrouter/validation_passed"
	// MetaApprovalID and MetaStatus mark a call that awaits approval.
	MetaApprovalID = "toolrouter/approval_id"
	MetaStatus     = "toolrouter/status"
)

// maxPlanID is the longest plan id accepted, as for POST /route.
const maxPlanID = 256

// Router routes tool calls (implemented by router.Router).
type Router interface {
	Route(ctx context.Context, planID string, payload any, meta map[string]any) (*toolrouter.Result, error)
}

// Tools lists the registry in force.
type Tools interface {
	Tools() []*toolrouter.Tool
}

// Limiter counts n tool calls of a client against its rate limit
// (access.Window).
type Limiter interface {
	Take(ctx context.Context, c *access.Client, n int) (access.Verdict, error)
}

// Deps are everything the MCP server needs.
type Deps struct {
	Router Router
	Tools  func() Tools // the registry in force (a reload may swap it)
	Logger zerolog.Logger
	// PlanID picks the plan a tools/call is routed under from the MCP
	// session id ("" when there is none) and the call's _meta; an error is
	// answered as invalid params. Nil means DefaultPlanID.
	PlanID func(sessionID string, meta map[string]any) (string, error)
	// Version is reported as serverInfo.version; empty means the module's
	// build version.
	Version string
	// SessionTimeout closes sessions idle for that long (default 10 min).
	SessionTimeout time.Duration
	// MaxSessions bounds the open sessions of each client, and of the
	// open service (default 1000); a new session beyond it is answered 503
	// with Retry-After, so no caller can pile up sessions until memory
	// runs out, nor lock other clients out.
	MaxSessions int
	// MaxBodyBytes bounds a request body (default 4 MiB).
	MaxBodyBytes int64
	// Limiter, when set, enforces the clients' rate limits on tools/call:
	// a request over the limit is answered HTTP 429 with a JSON-RPC error
	// and no tool is called.
	Limiter Limiter
	// Tracing, when set, wraps every request received (telemetry.Telemetry.MCPServer).
	Tracing mcp.Middleware
	// ListTTL is the ttlMs hint of tools/list results under 2026-07-28
	// (default 5s): how long a client may keep a list before asking again.
	ListTTL time.Duration
}

// DefaultPlanID is the default plan-id policy: the _meta's
// "toolrouter/plan_id" when the client sent one, else "mcp-" + the session
// id's digest (SessionPlanID), so a session's calls get consecutive
// sequences and stable ids.
func DefaultPlanID(sessionID string, meta map[string]any) (string, error) {
	if v, ok := meta[MetaPlanID]; ok {
		s, _ := v.(string)
		if s == "" || len(s) > maxPlanID {
			return "", toolrouter.Invalid("_meta."+MetaPlanID, "_meta.%s must be a string of 1 to %d characters", MetaPlanID, maxPlanID)
		}
		return s, nil
	}
	if sessionID == "" {
		return "mcp", nil
	}
	return SessionPlanID(sessionID), nil
}

// SessionPlanID is the plan of a session's calls that name none: "mcp-"
// and 24 hex digits of the SHA-256 of the session id, so the session id,
// which is the session's only credential besides the client's own, never
// reaches a tool (as a plan_id) or a log.
func SessionPlanID(sessionID string) string {
	return "mcp-" + toolrouter.ShortDigest(sessionID)
}

// Handler is the /mcp endpoint.
type Handler struct {
	d      Deps
	srv    *mcp.Server
	http   *mcp.StreamableHTTPHandler // sessions: 2025-03-26 to 2025-11-25
	modern *mcp.StreamableHTTPHandler // stateless: 2026-07-28
	// shared serves, statelessly, the requests of sessions another
	// replica opened (session.go).
	shared *mcp.StreamableHTTPHandler

	mu       sync.Mutex
	last     []*toolrouter.Tool // the registry's tools at the last sync
	exported map[string]string  // MCP name → JSON of its definition

	inflight atomic.Int64 // tools/call requests being answered

	// withClient hands the client that the HTTP edge authenticated (in the
	// request context) to the MCP method handlers, which see the request
	// only through RequestExtra.TokenInfo.
	withClient func(http.Handler) http.Handler

	owners sessionOwners // session.go
}

// clientExtra is the TokenInfo.Extra key of the request's *access.Client.
const clientExtra = "toolrouter/client"

var _ http.Handler = (*Handler)(nil)

// New returns the MCP server handler, its tool list synced with the
// registry in force.
func New(d Deps) *Handler {
	if d.PlanID == nil {
		d.PlanID = DefaultPlanID
	}
	if d.Version == "" {
		d.Version = buildVersion()
	}
	if d.SessionTimeout <= 0 {
		d.SessionTimeout = 10 * time.Minute
	}
	if d.MaxSessions <= 0 {
		d.MaxSessions = 1000
	}
	if d.MaxBodyBytes <= 0 {
		d.MaxBodyBytes = 4 << 20
	}
	if d.ListTTL <= 0 {
		d.ListTTL = 5 * time.Second
	}
	d.Logger = d.Logger.With().Str("component", "mcpserver").Logger()
	slogger := slog.New(quieter{zerolog.NewSlogHandler(d.Logger)})
	h := &Handler{d: d}
	h.withClient = auth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		c := access.FromContext(r.Context())
		// UserID binds a session to its client in the SDK too.
		return &auth.TokenInfo{UserID: c.LabelName(), Extra: map[string]any{
			clientExtra: c, prepaidExtra: r.Context().Value(prepaidKey{})}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	h.srv = mcp.NewServer(&mcp.Implementation{Name: "toolrouterd", Version: d.Version}, &mcp.ServerOptions{
		Logger: slogger,
		// Advertise tools (and list_changed) even while the registry is empty,
		// and logging: a backend's log messages reach the caller.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Logging: &mcp.LoggingCapabilities{}},
		// A list may change with a registry reload, and what a caller may
		// see is the caller's: cache it briefly, and privately.
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.TTLMs = int(d.ListTTL / time.Millisecond)
			c.CacheScope = "private"
		},
	})
	h.srv.AddReceivingMiddleware(h.intercept)
	if d.Tracing != nil { // added last: the outermost, so its span covers the call
		h.srv.AddReceivingMiddleware(d.Tracing)
	}
	get := func(*http.Request) *mcp.Server { return h.srv }
	// Origin and Host are checked by httpapi for every route (README,
	// "Security"), with the operator's allowed origins.
	h.http = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Logger:                     slogger,
		SessionTimeout:             d.SessionTimeout,
		MaxRequestBodyBytes:        d.MaxBodyBytes,
		DisableLocalhostProtection: true,
	})
	stateless := &mcp.StreamableHTTPOptions{
		Logger:                     slogger,
		Stateless:                  true,
		MaxRequestBodyBytes:        d.MaxBodyBytes,
		DisableLocalhostProtection: true,
	}
	h.modern = mcp.NewStreamableHTTPHandler(get, stateless)
	h.shared = mcp.NewStreamableHTTPHandler(get, stateless)
	h.Sync()
	return h
}

// ServeHTTP serves the MCP streamable HTTP transport (POST, GET, DELETE).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = r.WithContext(toolrouter.WithEntryPoint(r.Context(), toolrouter.EntryMCP))
	w = &problemWriter{ResponseWriter: w}
	defer w.(*problemWriter).finish()
	modern, err := h.isModern(r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit))
			return
		}
		writeProblem(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	c := access.FromContext(r.Context())
	var next http.Handler = h.modern // stateless: no session to count
	if !modern {
		name := ""
		if c != nil {
			name = c.Name
		}
		// A new session is held to the cap: the client's own, or the
		// service's on an open service.
		if r.Method == http.MethodPost && r.Header.Get(sessionIDHeader) == "" &&
			(c == nil && h.sessions() >= h.d.MaxSessions || c != nil && h.openSessions(c.Name) >= h.d.MaxSessions) {
			w.Header().Set("Retry-After", "5")
			writeProblem(w, http.StatusServiceUnavailable, "too many MCP sessions open; retry later")
			return
		}
		if w, r, next = h.routeSession(w, r, name); next == nil {
			return
		}
	} else {
		r = r.Clone(r.Context())
		r.Header.Del(sessionHeader)
	}
	if c == nil { // an open service
		next.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost && h.d.Limiter != nil && !c.Rate.IsZero() {
		prepaid := new(atomic.Int64)
		if !h.admit(w, r, c, prepaid) {
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), prepaidKey{}, prepaid))
	}
	h.withClient(next).ServeHTTP(w, r)
}

// admit counts the tools/call requests of a POST body against the
// client's rate limit, decoding the body as the SDK does (exact-case keys,
// batches), and adds them to prepaid. Over the limit, it answers HTTP 429
// with Retry-After, the RateLimit fields and a JSON-RPC error for each
// message, and returns false; otherwise the body is put back for the SDK
// to read. intercept counts, where the SDK dispatches them, any call
// admit did not.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request, c *access.Client, prepaid *atomic.Int64) bool {
	limit := h.d.MaxBodyBytes
	if limit <= 0 {
		limit = 4 << 20
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || int64(len(body)) > limit {
		return true // the SDK answers a body it cannot read
	}
	msgs := decodeMessages(body)
	calls := 0
	for _, m := range msgs {
		if m, ok := m.(*jsonrpc.Request); ok && m.Method == "tools/call" && m.IsCall() {
			calls++
		}
	}
	if calls == 0 {
		return true
	}
	v, err := h.d.Limiter.Take(r.Context(), c, calls)
	if err == nil && v.Allowed {
		prepaid.Add(int64(calls))
		return true
	}
	msg := "rate limiter unavailable; retry later"
	status := http.StatusServiceUnavailable
	if err == nil {
		msg, status = v.Message(c.Name), http.StatusTooManyRequests
		v.SetHeaders(w.Header())
	} else {
		h.d.Logger.Error().Err(err).Msg("rate limiter")
		w.Header().Set("Retry-After", "1")
	}
	var out []any
	for _, m := range msgs {
		if m, ok := m.(*jsonrpc.Request); ok && m.IsCall() {
			out = append(out, map[string]any{"jsonrpc": "2.0", "id": m.ID.Raw(),
				"error": map[string]any{"code": codeRateLimited, "message": msg}})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if len(out) == 1 {
		_ = json.NewEncoder(w).Encode(out[0])
	} else {
		_ = json.NewEncoder(w).Encode(out)
	}
	return false
}

// decodeMessages decodes a POST body as the SDK's streamable transport
// does: a batch array of messages, else one message, each with the SDK's
// own decoder (keys matched exactly). A body it cannot decode is nil: the
// SDK refuses it too.
func decodeMessages(body []byte) []jsonrpc.Message {
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) != nil {
		batch = []json.RawMessage{body}
	}
	msgs := make([]jsonrpc.Message, 0, len(batch))
	for _, raw := range batch {
		if m, err := jsonrpc.DecodeMessage(raw); err == nil {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// prepaidKey is the request context key, and TokenInfo.Extra key, of the
// *atomic.Int64 counting the tools/call of a request that admit already
// took from the client's rate limit.
type prepaidKey struct{}

const prepaidExtra = "toolrouter/prepaid"

// takeCall counts one tools/call of c against its rate limit where the
// SDK dispatches it: from what admit took for the request, else from the
// limiter. Over the limit it is the JSON-RPC rate-limit error.
func (h *Handler) takeCall(ctx context.Context, c *access.Client, req mcp.Request) error {
	if c == nil || h.d.Limiter == nil || c.Rate.IsZero() {
		return nil
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		if p, _ := ex.TokenInfo.Extra[prepaidExtra].(*atomic.Int64); p != nil && p.Add(-1) >= 0 {
			return nil
		}
	}
	v, err := h.d.Limiter.Take(ctx, c, 1)
	switch {
	case err != nil:
		h.d.Logger.Error().Err(err).Msg("rate limiter")
		return &jsonrpc.Error{Code: codeRateLimited, Message: "rate limiter unavailable; retry later"}
	case !v.Allowed:
		return &jsonrpc.Error{Code: codeRateLimited, Message: v.Message(c.Name)}
	}
	return nil
}

// codeRateLimited is the JSON-RPC error code of a tools/call refused by
// the client's rate limit (in the implementation-defined server range).
const codeRateLimited = -32029

// client is the client a method handler's request came from (nil on an
// open service).
func client(req mcp.Request) *access.Client {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		c, _ := ex.TokenInfo.Extra[clientExtra].(*access.Client)
		return c
	}
	return nil
}

// modernVersion is the first protocol revision without sessions.
const modernVersion = "2026-07-28"

// isModern reports whether r is a request of protocol 2026-07-28 or later,
// served statelessly: its MCP-Protocol-Version header says so, or (a
// request without the header, and without a session) the protocol version
// in its params._meta does; the stateless handler then checks the header
// against the body. Everything else (initialize, a session's requests,
// GET and DELETE of a session) is a session's. The body is read (bounded)
// and put back only when the header is absent.
func (h *Handler) isModern(r *http.Request) (bool, error) {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return isDate(v) && v >= modernVersion, nil
	}
	if r.Method != http.MethodPost || r.Header.Get(sessionIDHeader) != "" || r.Body == nil {
		return false, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, h.d.MaxBodyBytes))
	r.Body.Close()
	if err != nil {
		return false, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false, nil // a batch or not JSON: the session handler answers
	}
	v, _ := msg.Params.Meta[metaProtocolVersion].(string)
	return v != "", nil
}

// metaProtocolVersion is the _meta key of a 2026-07-28 request's protocol
// version.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// isDate reports whether v looks like a protocol version (YYYY-MM-DD), so
// that comparing it as a string orders it by date.
func isDate(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i, c := range v {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// sessions counts the open sessions.
func (h *Handler) sessions() int {
	n := 0
	for range h.srv.Sessions() {
		n++
	}
	return n
}

// Sync makes the server's tool list that of the registry in force. Tools
// whose definition changed are replaced, and connected sessions get
// notifications/tools/list_changed when anything changed. It is cheap when
// the registry did not change; tools/list calls it, and the owner of the
// registry should call it after a reload so sessions hear of the change.
func (h *Handler) Sync() {
	h.mu.Lock()
	defer h.mu.Unlock()
	tools := h.d.Tools().Tools()
	if h.exported != nil && slices.Equal(tools, h.last) {
		return // registries are immutable: same tools, same definitions
	}
	want := make([]*mcp.Tool, 0, len(tools))
	defs := make(map[string]string, len(tools))
	for _, t := range tools {
		mt := definition(t)
		if _, dup := defs[mt.Name]; dup {
			continue // the registry rejects colliding names; be safe anyway
		}
		b, err := json.Marshal(mt)
		if err != nil {
			h.d.Logger.Error().Err(err).Str("tool", t.Name).Msg("tool definition is not JSON; not listed")
			continue
		}
		defs[mt.Name] = string(b)
		want = append(want, mt)
	}
	var gone []string
	for name := range h.exported {
		if _, ok := defs[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		h.srv.RemoveTools(gone...)
	}
	for _, mt := range want {
		if h.exported[mt.Name] == defs[mt.Name] {
			continue
		}
		if err := h.addTool(mt); err != nil {
			h.d.Logger.Error().Err(err).Str("tool", mt.Name).Msg("tool not listed")
			delete(defs, mt.Name)
		}
	}
	h.exported, h.last = defs, tools
}

// addTool adds or replaces a tool, turning the SDK's panic on a schema it
// rejects into an error.
func (h *Handler) addTool(mt *mcp.Tool) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	// Calls never reach this handler (intercept answers them all); it is
	// there because the SDK wants one.
	h.srv.AddTool(mt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return h.call(ctx, req)
	})
	return nil
}

// Close waits for the tools/call requests in flight, then closes every MCP
// session, ending their open GET streams, which would otherwise keep a
// graceful HTTP shutdown waiting until its timeout. Register it with
// http.Server.RegisterOnShutdown.
func (h *Handler) Close() {
	// In-flight tools/call get a bounded time to answer; the HTTP server's
	// own shutdown timeout still governs the whole.
	for deadline := time.Now().Add(30 * time.Second); h.inflight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	for ss := range h.srv.Sessions() {
		_ = ss.Close()
	}
}

// definition is the MCP Tool of a registry tool.
func definition(t *toolrouter.Tool) *mcp.Tool {
	def := format.Definition(toolrouter.FormatMCP, t, 0)
	name, _ := def["name"].(string)
	mt := &mcp.Tool{
		Name:        name,
		Description: t.Description,
		InputSchema: def["inputSchema"],
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.ReadOnly, IdempotentHint: t.Idempotent},
		Meta:        mcp.Meta{MetaToolName: t.Name},
	}
	if name != t.Name {
		mt.Title = t.Name
	}
	// An output schema is advertised only when outputs are checked
	// against it (MCP clients reject results that do not match).
	if out, ok := def["outputSchema"]; ok && t.ValidateOutput != nil {
		mt.OutputSchema = out
	}
	return mt
}

// intercept keeps tools/list in step with the registry and answers every
// tools/call itself, so a tool missing from the list (unknown, or added by
// a reload not yet synced) gets the router's not_found result rather than
// a protocol error.
func (h *Handler) intercept(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		c := client(req)
		switch method {
		case "tools/list":
			h.Sync()
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && c != nil {
				// The client sees only its tools.
				kept := lr.Tools[:0:0]
				for _, t := range lr.Tools {
					if name, _ := t.Meta[MetaToolName].(string); c.Allows(name) {
						kept = append(kept, t)
					}
				}
				lr.Tools = kept
			}
			return res, err
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok {
				if err := h.takeCall(ctx, c, req); err != nil {
					return nil, err
				}
				h.inflight.Add(1)
				defer h.inflight.Add(-1)
				return h.call(access.NewContext(ctx, c), r)
			}
		}
		return next(ctx, method, req)
	}
}

// call routes one tools/call.
func (h *Handler) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
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
	// The call as an MCP client would send it to /route: the router detects
	// the mcp format, resolves the MCP name (or the canonical one) and
	// validates the arguments.
	payload := map[string]any{
		"jsonrpc": "2.0",
		"method":  "tools/call",
		"params":  map[string]any{"name": p.Name, "arguments": args},
	}
	modern := modernSession(req.Session)
	clientName := ""
	if c := access.FromContext(ctx); c != nil {
		clientName = c.Name
	}
	rl := relay(ctx, req)
	if modern {
		rl.ClientCapabilities = clientCapabilities(p.Meta)
	}
	if p.RequestState != "" {
		if rl.RequestState, err = unwrapState(p.RequestState, p.Name, clientName); err != nil {
			return nil, err
		}
	}
	if p.InputResponses != nil {
		if rl.InputResponses, err = json.Marshal(p.InputResponses); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inputResponses: " + err.Error()}
		}
	}
	res, err := h.d.Router.Route(toolrouter.WithRelay(ctx, rl), planID, payload, nil)
	if err != nil {
		if toolrouter.ErrorCode(err) == toolrouter.EINVALID {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: toolrouter.ErrorMessage(err)}
		}
		h.d.Logger.Error().Err(err).Str("plan_id", planID).Str("tool", p.Name).Msg("route MCP tools/call")
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	out := result(res)
	if out.NeedsInput() {
		if modern {
			// Relayed as the backend sent it, with a requestState that
			// brings the retry back to it (mrtr.go).
			out.RequestState = wrapState(p.Name, clientName, out.RequestState)
			return out, nil
		}
		// An older client cannot answer it: the call failed.
		failed := *res
		failed.MCPResult = nil
		out = result(&failed)
	}
	return withResultType(out, modern), nil
}

// modernSession reports whether ss serves protocol 2026-07-28 or later (a
// stateless request's session has no initialize parameters).
func modernSession(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip == nil || ip.ProtocolVersion == "" || ip.ProtocolVersion >= modernVersion
}

// withResultType gives res the resultType "complete" that 2026-07-28
// requires of every result, or none for older protocol versions (a
// backend's result may carry either). The SDK sets the field only for
// results of its own tool handlers, and keeps it unexported: it is set
// through the result's JSON.
func withResultType(res *mcp.CallToolResult, modern bool) *mcp.CallToolResult {
	raw, err := json.Marshal(res)
	if err != nil {
		return res
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return res
	}
	delete(m, "resultType")
	if modern {
		m["resultType"] = json.RawMessage(`"complete"`)
	}
	raw, err = json.Marshal(m)
	out := &mcp.CallToolResult{}
	if err != nil || json.Unmarshal(raw, out) != nil {
		return res
	}
	return out
}

// relay passes what a backend sends about the call on to the caller:
// progress under the caller's progress token (when it sent one), log
// messages through its session, which filters them by the caller's level.
func relay(ctx context.Context, req *mcp.CallToolRequest) *toolrouter.Relay {
	ss := req.Session
	if ss == nil {
		return &toolrouter.Relay{}
	}
	r := &toolrouter.Relay{
		Log: func(level, logger string, data json.RawMessage) {
			var v any
			if json.Unmarshal(data, &v) != nil {
				v = string(data)
			}
			_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(level), Logger: logger, Data: v})
		},
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
	if len(res.MCPResult) > 0 && json.Unmarshal(res.MCPResult, out) != nil {
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
	if out.NeedsInput() {
		return out // the backend's input_required result, for call to relay
	}
	if res.Status == toolrouter.ResultAwaitingApproval {
		// README "Approvals", /mcp: an error result the model and the
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

// quieter logs the SDK's info messages (a line per session connected,
// initialized, disconnected) at debug level; warnings and errors stay.
// It drops the session ids the SDK adds: a session id is a credential
// and is never written to logs (README "Clients").
type quieter struct{ slog.Handler }

func (q quieter) Enabled(ctx context.Context, l slog.Level) bool {
	return q.Handler.Enabled(ctx, demote(l))
}

func (q quieter) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, demote(r.Level), r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if !secretAttr(a) {
			out.AddAttrs(a)
		}
		return true
	})
	return q.Handler.Handle(ctx, out)
}

func (q quieter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quieter{q.Handler.WithAttrs(slices.DeleteFunc(slices.Clone(attrs), secretAttr))}
}

// secretAttr reports whether a log attribute holds a session id.
func secretAttr(a slog.Attr) bool {
	return a.Key == "session_id" || a.Key == "sessionID" || a.Key == "session"
}

func (q quieter) WithGroup(name string) slog.Handler { return quieter{q.Handler.WithGroup(name)} }

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}
