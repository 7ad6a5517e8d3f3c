// Package mcpserver serves the registry as an MCP server over streamable
// HTTP (CONTRACT §5, "/mcp"): tools/list lists every registry tool under its
// MCP-safe name, and tools/call routes the call through the same router as
// POST /route, so ids, sequences, argument validation and error
// classification are the same.
//
// One endpoint speaks both eras of the protocol (docs/mcp.md "MCP both ways"): a client
// that sends initialize (2025-03-26 to 2025-11-25) gets a session; a
// request that carries the 2026-07-28 per-request metadata (the
// MCP-Protocol-Version header, or the protocol version in params._meta) is
// served statelessly, as that revision asks: server/discover, no session
// id, list results with ttlMs and cacheScope, the Mcp-Method/Mcp-Name
// header checks, and removed methods answered "method not found".
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/lograte"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Keys of the _meta objects this server reads and writes.
const (
	// MetaPlanID in a tools/call's params._meta names the plan the call
	// belongs to (a string of 1 to 256 characters, no control character);
	// without it the call belongs to the plan "mcp-" + the MCP session id.
	// Results carry it too.
	MetaPlanID = "toolrouter/plan_id"
	// MetaToolCallID is the result's stable tool_call_id.
	MetaToolCallID = "toolrouter/tool_call_id"
	// MetaTruncated is true on a result whose output was shaped to its
	// output budget; the whole output is at GET /results/{tool_call_id}.
	MetaTruncated = "toolrouter/truncated"
	// MetaCost is what the call cost, or that it is unpriced
	// (docs/costs.md); a backend may report its own cost under the same
	// key in its result's _meta, and that wins over the registry's price.
	MetaCost = "toolrouter/cost"
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

// Router routes tool calls (implemented by router.Router).
type Router interface {
	Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error)
}

// Tools lists the registry in force.
type Tools interface {
	Tools() []*toolrouter.Tool
}

// Limiter counts n tool calls of a client against its rate limit
// (access.Window).
type Limiter interface {
	Take(ctx context.Context, c *access.Client, calls toolrouter.Calls) (access.Verdict, error)
}

// Marks are small facts replicas share until they expire (store.Marks).
type Marks interface {
	PutMark(ctx context.Context, key, value string, expires time.Time) (string, error)
	GetMark(ctx context.Context, key string) (string, bool, error)
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
	// MaxBatch bounds the messages of a JSON-RPC batch, which only
	// sessions of protocol 2025-03-26 may send (default
	// toolrouter.MaxBatchCalls, as POST /route/batch); BatchConcurrency
	// bounds its tools/call running at once (default 16).
	MaxBatch, BatchConcurrency int
	// Limiter, when set, enforces the clients' rate limits on tools/call:
	// a request over the limit is answered HTTP 429 with a JSON-RPC error
	// and no tool is called.
	Limiter Limiter
	// Tracing, when set, wraps every request received (telemetry.Telemetry.MCPServer).
	Tracing mcp.Middleware
	// Visible, when set, decides which listed tools (by their
	// _meta["toolrouter/tool_name"]) a client sees, in place of its scope:
	// a virtual server's view (docs/mcp.md "Virtual servers and tool search").
	Visible func(c *access.Client, name string) bool
	// Marks remembers the sessions terminated (DELETE) for every replica
	// sharing it (store.Marks); nil: this replica's memory.
	Marks Marks
	// StateKey signs the requestStates of 2026-07-28 (TOOLROUTER_STATE_KEY;
	// replicas must share it); empty: a key generated once into Marks.
	StateKey string
	// EndedTTL is how long a terminated session is answered 404 (default
	// 24h); after it, its token is unknown, served like another replica's.
	EndedTTL time.Duration
	// Tasks, when set, runs the calls of tools of registry task optional
	// or required as tasks for clients of the tasks extension, and answers
	// tasks/get, tasks/update and tasks/cancel (tasks.go).
	Tasks Tasks
	// ListTTL is the ttlMs hint of tools/list results under 2026-07-28
	// (default 5s): how long a client may keep a list before asking again.
	ListTTL time.Duration
	// PageSize is the most items a page of tools/list holds (default
	// 1000); the list pages with one cursor across every backend
	// (page.go).
	PageSize int
	// Instructions, when set, is the server's instructions, returned at
	// initialize and server/discover (a virtual server's `instructions`);
	// read on each request, so a reload changes it.
	Instructions func() string
	// Resources, when set, reads the ui:// resources of MCP Apps tools
	// (apps.go) and the files of skills (skills.go).
	Resources Resources
	// Audit, when set, records every skill load (skills.go).
	Audit Auditor
	// Catalogs, when set, lists the MCP servers' resources, resource
	// templates and prompts, one list each across servers (catalog.go),
	// and gets their prompts; their resources are read with Resources.
	Catalogs Catalogs
	// Covers, when set, decides which names of the registry's namespace
	// that are no tools (a server's prompts and resources: catalog.go) a
	// client reaches, in place of its scope: a virtual server's `tools`
	// patterns and the client's scope.
	Covers func(c *access.Client, name string) bool
	// Directories, when set, relays resources/directory/read of dynamic
	// skills to their servers (directory.go).
	Directories Directories
}

// Auditor records audit records (audit.Trail).
type Auditor interface {
	Record(ctx context.Context, recs ...toolrouter.AuditRecord)
}

// DefaultPlanID is the default plan-id policy: the _meta's
// "toolrouter/plan_id" when the client sent one, else "mcp-" + the session
// id's digest (SessionPlanID), so a session's calls get consecutive
// sequences and stable ids.
func DefaultPlanID(sessionID string, meta map[string]any) (string, error) {
	if v, ok := meta[MetaPlanID]; ok {
		s, _ := v.(string)
		if !toolrouter.ValidPlanID(s) {
			return "", toolrouter.Invalid("_meta."+MetaPlanID, "_meta.%s must be a string of 1 to %d characters without control characters", MetaPlanID, toolrouter.MaxPlanID)
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

	lim *lograte.Limiter // rate-limits error lines (a failing rate limiter or store)

	complete *mcp.CallToolResult // resultType "complete", nothing else (withResultType)

	keyMu sync.Mutex
	key   []byte // the state key once known (mrtr.go)

	// The tools/call fast path (fastcall.go): the receiving middleware it
	// runs a call through, the server it names in results, the listed
	// tools whose parameters map to headers (it leaves those to the SDK),
	// and how many requests it answered (tests).
	fastChain    mcp.MethodHandler
	impl         *mcp.Implementation
	paramHeaders map[string]bool // under mu, kept by Sync
	fastCalls    atomic.Int64
	// sdkCalls sends every request through the SDK: sdkServerOnly in
	// production (the build tag sdkmcpserver), set by tests.
	sdkCalls bool
}

// clientExtra is the TokenInfo.Extra key of the request's *access.Client.
const clientExtra = "toolrouter/client"

// userExtra is the TokenInfo.Extra key of the request's *access.User: who
// its calls are made for (docs/backend-auth.md), request by request, so
// two users may share a session of one client.
const userExtra = "toolrouter/user"

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
	if d.MaxBatch <= 0 {
		d.MaxBatch = toolrouter.MaxBatchCalls
	}
	if d.BatchConcurrency <= 0 {
		d.BatchConcurrency = 16
	}
	if d.Marks == nil {
		d.Marks = memory.New()
	}
	if d.EndedTTL <= 0 {
		d.EndedTTL = 24 * time.Hour
	}
	if d.ListTTL <= 0 {
		d.ListTTL = 5 * time.Second
	}
	if d.PageSize <= 0 {
		d.PageSize = mcp.DefaultPageSize
	}
	d.Logger = d.Logger.With().Str("component", "mcpserver").Logger()
	slogger := slog.New(quieter{zerolog.NewSlogHandler(d.Logger)})
	h := &Handler{d: d, lim: lograte.New(nil), sdkCalls: sdkServerOnly}
	//lint:ignore SA1019 logging is deprecated by 2026-07-28 (SEP-2577) but in force for the revisions up to 2025-11-25 that this server still serves
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Logging: &mcp.LoggingCapabilities{}}
	if d.Tasks != nil {
		// server/discover names the tasks extension (tasks.go).
		caps.Extensions = map[string]any{TasksExtension: map[string]any{}}
	}
	h.complete = completeResult()
	h.withClient = auth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		c := access.FromContext(r.Context())
		// UserID binds a session to its client in the SDK too.
		return &auth.TokenInfo{UserID: c.LabelName(), Extra: map[string]any{
			clientExtra: c, userExtra: access.UserFromContext(r.Context()), postExtra: r.Context().Value(postKey{})}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	h.impl = &mcp.Implementation{Name: "toolrouterd", Version: d.Version}
	h.srv = mcp.NewServer(h.impl, &mcp.ServerOptions{
		Logger: slogger,
		// tools/list is paged by intercept (page.go) after the client's
		// scope is applied; the SDK hands it the whole list.
		PageSize: math.MaxInt32,
		// Advertise tools (and list_changed) even while the registry is empty,
		// and logging: a backend's log messages reach the caller.
		Capabilities: caps,
		// A list may change with a registry reload, and what a caller may
		// see is the caller's: cache it briefly, and privately.
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.TTLMs = int(d.ListTTL / time.Millisecond)
			c.CacheScope = "private"
		},
	})
	h.addSkillMethods()
	h.addDirectoryMethod()
	h.srv.AddReceivingMiddleware(h.intercept)
	h.fastChain = h.intercept(unreachable)
	if d.Tracing != nil { // added last: the outermost, so its span covers the call
		h.srv.AddReceivingMiddleware(d.Tracing)
		h.fastChain = d.Tracing(h.fastChain)
	}
	get := func(*http.Request) *mcp.Server { return h.srv }
	// Origin and Host are checked by httpapi for every route (docs/security.md
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
	w = &problemWriter{ResponseWriter: w}
	defer w.(*problemWriter).finish()
	body, err := h.readBody(r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit))
			return
		}
		writeProblem(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	if h.serveFast(w, r, body) {
		return
	}
	msgs, array := decodeMessages(body)
	c := access.FromContext(r.Context())
	p := &post{}
	var next http.Handler = h.modern // stateless: no session to count
	if !h.isModern(r, body) {
		name := c.LabelName()
		reserved := false
		if r.Method == http.MethodPost && r.Header.Get(sessionIDHeader) == "" {
			// Only initialize opens a session; anything else needs one
			// (the SDK would answer a JSON-RPC error of code 0).
			if len(msgs) > 0 && !hasInitialize(msgs) {
				writeProblem(w, http.StatusBadRequest, "Mcp-Session-Id header required: send initialize first (or use protocol "+modernVersion+", which has no sessions)")
				return
			}
			// A new session is held to the cap: the client's own, or the
			// service's on an open service (name "").
			if !h.reserve(name, h.d.MaxSessions) {
				w.Header().Set("Retry-After", "5")
				writeProblem(w, http.StatusServiceUnavailable, "too many MCP sessions open; retry later")
				return
			}
			reserved = true
		}
		sw, r2, handler := h.routeSession(w, r, name)
		if handler == nil {
			if reserved {
				h.owners.release(name)
			}
			return
		}
		sw.reserved = reserved
		defer sw.end()
		w, r, next = sw, r2, handler
		if array && r.Method == http.MethodPost {
			if h.checkBatch(w, r, len(msgs)) {
				return
			}
			p.slots = make(chan struct{}, h.d.BatchConcurrency)
		}
	} else {
		r = r.Clone(r.Context())
		r.Header.Del(sessionHeader)
		if h.serveTaskMethod(w, r, msgs, array) {
			return
		}
	}
	if r.Method == http.MethodPost && c != nil && h.d.Limiter != nil && !c.Rate.IsZero() && !h.admit(w, r, c, msgs, array, &p.prepaid) {
		return
	}
	// The caller was authenticated at the edge: the SDK gets a placeholder
	// bearer token and the client (nil on an open service) in its
	// TokenInfo.
	r.Header.Set("Authorization", "Bearer -")
	h.withClient(next).ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), postKey{}, p)))
}

// visible reports whether client c sees the listed tool name.
func (h *Handler) visible(c *access.Client, name string) bool {
	if h.d.Visible != nil {
		return h.d.Visible(c, name)
	}
	return c.Allows(name)
}

// postKey is the request context key of its *post.
type postKey struct{}

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

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}
