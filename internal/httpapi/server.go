// Package httpapi is toolrouterd's HTTP edge: routes, handlers, middleware,
// JSON and problem+json encoding, SSE.
package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/telemetry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// Router routes tool calls (implemented by router.Router).
type Router interface {
	Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error)
	Batch(ctx context.Context, planID string, reqs []*toolrouter.CallRequest) ([]*toolrouter.Result, error)
}

// Tools lists the registry in force.
type Tools interface {
	Tools() []*toolrouter.Tool
}

// Authenticator resolves a request's credentials to a client
// (access.Authenticator); nil client and nil error is an open service.
type Authenticator interface {
	Authenticate(ctx context.Context, r *http.Request) (*access.Client, error)
}

// Limiter counts the tool calls of a request of a client against its
// rate limit (audit.Limiter).
type Limiter interface {
	Take(ctx context.Context, c *access.Client, calls toolrouter.Calls) (access.Verdict, error)
}

// Pinger reports whether a dependency is reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Circuits lists the backends' circuits that are not closed
// (circuit.Breakers), for the checks of /readyz.
type Circuits interface {
	Checks() map[string]string
}

// Metrics records HTTP traffic.
type Metrics interface {
	HTTPRequest(route, method string, status int, d time.Duration)
	InFlight(delta float64)
	Handler() http.Handler
}

// Deps are everything the HTTP API needs.
type Deps struct {
	Logger    zerolog.Logger
	Router    Router
	Tools     func() Tools
	Readiness Pinger // the store, which GET /readyz asks
	Metrics   Metrics
	Runs      Runs
	Circuits  Circuits // the backends' circuit breakers, for /readyz; nil: none
	// Approvals decides held calls and shows results; nil leaves
	// /approvals and /results unmounted.
	Approvals Approvals
	// Tasks runs calls as tasks (POST /route with Prefer: respond-async or
	// wait, tools of task: required; GET /tasks/{id}); nil leaves /tasks
	// unmounted and /route synchronous.
	Tasks    Tasks
	Keys     Keys          // Idempotency-Key storage
	Audit    AuditLog      // GET /audit
	Usage    Usage         // GET /usage and the costs of GET /audit; nil: /usage is 503
	KeyTTL   time.Duration // how long an answered key is replayed
	KeyLease time.Duration // how long a claimed key outlives its request's last renewal (default keyLease)
	// Auth authenticates every request but the operations endpoints; nil
	// leaves the service open.
	Auth Authenticator
	// JWTIssuer, when set, turns on the RFC 9728 metadata of
	// /.well-known/oauth-protected-resource naming it.
	JWTIssuer string
	// Limiter enforces the clients' rate limits; nil means none.
	Limiter      Limiter
	MaxBodyBytes int64
	// BodyReadTimeout bounds how long a request body may take to arrive
	// (default 60s); a slower one is 408.
	BodyReadTimeout time.Duration
	Spec            []byte               // the OpenAPI document, served as-is and enforced
	MCP             http.Handler         // the /mcp MCP server (mcpserver.Handler); nil leaves /mcp unmounted
	Tracer          *telemetry.Telemetry // nil: no spans
	// WriteTimeout bounds the writing of a response from its first byte
	// (default 30s); streams extend their own deadline per event.
	WriteTimeout time.Duration
	// Views are the virtual servers of the registry in force (docs/mcp.md
	// "Virtual servers and tool search"); nil: none.
	Views func() *vserver.Set
	// VirtualMCP is the MCP endpoint of a virtual server, /mcp/{server};
	// nil leaves it unmounted.
	VirtualMCP func(server string) http.Handler
	// Now is the clock of the log rate limits; nil means time.Now.
	Now func() time.Time
	// AllowedOrigins are TOOLROUTER_ALLOWED_ORIGINS (see checkOrigin).
	AllowedOrigins []string
	// Connections are the users' oauth connections; nil leaves
	// /connections, /connect and /oauth/callback unmounted.
	Connections Connections
}

// NewServer returns the service's HTTP handler. Every dependency but MCP
// is required: a missing one is an error naming it, not a panic on the
// first request that needs it.
func NewServer(d Deps) (http.Handler, error) {
	for _, dep := range []struct {
		name    string
		missing bool
	}{
		{"Router", d.Router == nil}, {"Tools", d.Tools == nil}, {"Readiness", d.Readiness == nil},
		{"Metrics", d.Metrics == nil}, {"Runs", d.Runs == nil}, {"Keys", d.Keys == nil}, {"Audit", d.Audit == nil}, {"Spec", len(d.Spec) == 0},
	} {
		if dep.missing {
			return nil, fmt.Errorf("httpapi.NewServer: Deps.%s is required", dep.name)
		}
	}
	doc, err := loadSpec(d.Spec)
	if err != nil {
		return nil, fmt.Errorf("load OpenAPI spec: %w", err)
	}
	if d.KeyLease <= 0 {
		d.KeyLease = keyLease
	}
	if d.KeyTTL <= 0 {
		d.KeyTTL = 24 * time.Hour
	}
	if d.MaxBodyBytes <= 0 {
		d.MaxBodyBytes = 4 << 20
	}
	if d.WriteTimeout <= 0 {
		d.WriteTimeout = 30 * time.Second
	}
	if d.BodyReadTimeout <= 0 {
		d.BodyReadTimeout = 60 * time.Second
	}
	return routes(d, doc)
}

func loadSpec(spec []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(spec)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, err
	}
	doc.Servers = nil // match on path only, whatever Host the gateway forwards
	return doc, nil
}
