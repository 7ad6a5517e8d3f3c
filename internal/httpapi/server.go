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

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Router routes tool calls (implemented by router.Router).
type Router interface {
	Route(ctx context.Context, planID string, payload any, meta map[string]any) (*toolrouter.Result, error)
	Stream(ctx context.Context, planID string, payload any, meta map[string]any, emit func(toolrouter.Update)) (*toolrouter.Result, error)
	Batch(ctx context.Context, planID string, payloads []any, meta map[string]any) ([]*toolrouter.Result, error)
}

// Tools lists the registry in force.
type Tools interface {
	Tools() []*toolrouter.Tool
}

// Pinger reports whether a dependency is reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Metrics records HTTP traffic.
type Metrics interface {
	HTTPRequest(route, method string, status int, d time.Duration)
	InFlight(delta float64)
	Handler() http.Handler
}

// Deps are everything the HTTP API needs.
type Deps struct {
	Logger       zerolog.Logger
	Router       Router
	Tools        func() Tools
	Store        Pinger
	Metrics      Metrics
	Runs         Runs
	Keys         Keys          // Idempotency-Key storage
	KeyTTL       time.Duration // how long an answered key is replayed
	APIKeys      []string
	MaxBodyBytes int64
	// BodyReadTimeout bounds how long a request body may take to arrive
	// (default 60s); a slower one is 408.
	BodyReadTimeout time.Duration
	Spec            []byte       // the OpenAPI document, served as-is and enforced
	MCP             http.Handler // the /mcp MCP server (mcpserver.Handler); nil leaves /mcp unmounted
	// AllowedOrigins are TOOLROUTER_ALLOWED_ORIGINS (see checkOrigin).
	AllowedOrigins []string
}

// NewServer returns the service's HTTP handler.
func NewServer(d Deps) (http.Handler, error) {
	doc, err := loadSpec(d.Spec)
	if err != nil {
		return nil, fmt.Errorf("load OpenAPI spec: %w", err)
	}
	if d.KeyTTL <= 0 {
		d.KeyTTL = 24 * time.Hour
	}
	if d.MaxBodyBytes <= 0 {
		d.MaxBodyBytes = 4 << 20
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
