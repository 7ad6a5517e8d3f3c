package httpapi

import (
	"net/http"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/toolrouterd/toolrouterd/internal/console"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// routes is the whole API at a glance.
func routes(d Deps, doc *openapi3.T) (http.Handler, error) {
	check, err := newRequestChecker(doc, d.MaxBodyBytes, d.BodyReadTimeout)
	if err != nil {
		return nil, err
	}
	r := chi.NewRouter()
	r.Use(expectContinue(d.MaxBodyBytes, d.BodyReadTimeout)) // first: it needs net/http's own ResponseWriter
	// GetHead answers HEAD on every GET route (load balancers and uptime
	// checkers send HEAD /healthz); net/http drops the body.
	lim := newLogLimiter(d.Now)
	r.Use(tracing(d.Tracer), accessLog(d.Metrics, lim), writeDeadline(d.WriteTimeout), recoverer, checkOrigin(d.AllowedOrigins, openService(d.Auth)), rejectEmptySegments, middleware.GetHead)
	r.NotFound(handleNotFound(r))
	public := map[string]bool{"/": true, "/healthz": true, "/readyz": true, "/metrics": true, "/openapi.yaml": true,
		"/.well-known/oauth-protected-resource": true, "/.well-known/oauth-protected-resource/mcp": true,
		"/oauth/callback": true}
	for _, p := range console.Paths() {
		public[p] = true
	}
	r.MethodNotAllowed(handleMethodNotAllowed(r, public, authenticate(d.Auth, d.JWTIssuer)))

	// Unauthenticated operations endpoints.
	r.Get("/", handleIndex())
	r.Get("/healthz", handleHealthz())
	r.Get("/readyz", handleReadyz(d.Readiness, d.Circuits))
	r.Method(http.MethodGet, "/metrics", d.Metrics.Handler())
	r.Get("/openapi.yaml", handleSpec(d.Spec))
	// RFC 9728 protected resource metadata (404 unless JWT is on).
	r.Get("/.well-known/oauth-protected-resource", handleResourceMetadata(d.JWTIssuer, ""))
	r.Get("/.well-known/oauth-protected-resource/mcp", handleResourceMetadata(d.JWTIssuer, "/mcp"))
	// The oauth connect URLs and callback (docs/backend-auth.md "oauth"):
	// opened in the user's browser, unauthenticated (the state is the
	// link: single-use, expiring, bound to its user).
	r.Get("/connect/{state}", func(w http.ResponseWriter, r *http.Request) {
		if d.Connections == nil {
			oauthOff(w, r)
			return
		}
		d.Connections.ServeConnect(w, r, chi.URLParam(r, "state"))
	})
	r.Get("/oauth/callback", func(w http.ResponseWriter, r *http.Request) {
		if d.Connections == nil {
			oauthOff(w, r)
			return
		}
		d.Connections.ServeCallback(w, r)
	})
	// The console (docs/approvals.md "Console"): static files holding no data; the
	// page calls the API below with the key its user enters.
	ui := console.Handler(handleNotFound(r))
	r.Get("/ui", ui.ServeHTTP)
	r.Get("/ui/", ui.ServeHTTP)
	r.Get("/ui/{file}", ui.ServeHTTP)

	r.Group(func(r chi.Router) {
		r.Use(authenticate(d.Auth, d.JWTIssuer), check.middleware)
		idem := idempotency(d.Keys, d.KeyTTL, d.KeyLease)
		view := checkView(d.Views) // ?server=: names resolve within a virtual server
		r.With(view, idem, rateLimit(d.Limiter, toolrouter.EntryRoute, d.Views, oneCall)).Post("/route", handleRoute(d.Router, d.Approvals, d.Views, d.Tasks, d.Tools))
		r.With(view, idem, rateLimit(d.Limiter, toolrouter.EntryRouteBatch, d.Views, batchCalls)).Post("/route/batch", handleBatch(d.Router, d.Views))
		r.With(view).Get("/schemas/{provider}", handleSchemas(d.Tools, d.Views))
		r.Post("/runs", handleStartRun(d.Runs))
		r.Get("/runs", handleListRuns(d.Runs))
		r.Get("/runs/{id}", handleGetRun(d.Runs))
		r.Post("/runs/{id}/cancel", handleCancelRun(d.Runs))
		r.Get("/audit", handleAudit(d.Audit, d.Usage))
		r.Get("/connections", handleListConnections(d.Connections))
		r.Delete("/connections/{backend}", handleDeleteConnection(d.Connections))
		if d.Tasks != nil {
			r.Get("/tasks/{id}", handleGetTask(d.Tasks))
			r.Post("/tasks/{id}/cancel", handleCancelTask(d.Tasks))
		}
		r.Get("/usage", handleUsage(d.Usage, time.Now))
		if d.Approvals != nil {
			r.Get("/results/{tool_call_id}", handleGetResult(d.Approvals))
			r.Get("/approvals", handleListApprovals(d.Approvals))
			r.Get("/approvals/{id}", handleGetApproval(d.Approvals))
			r.Post("/approvals/{id}", handleDecide(d.Approvals))
		}
	})
	if d.MCP != nil { // MCP streamable HTTP: authenticated, but not body-checked (the SDK reads the body and streams SSE)
		r.With(authenticate(d.Auth, d.JWTIssuer), problemErrors).Handle("/mcp", d.MCP)
	}
	if d.VirtualMCP != nil && d.Views != nil {
		r.With(authenticate(d.Auth, d.JWTIssuer), problemErrors).Handle("/mcp/{server}", handleVirtualMCP(d.Views, d.VirtualMCP))
	}
	return requestID(d.Logger, lim)(r), nil // in front of the router: see requestID
}
