package httpapi

import (
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
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
	r.Use(requestID(d.Logger), accessLog(d.Metrics), recoverer, rejectEmptySegments, middleware.GetHead)
	r.NotFound(handleNotFound(r))
	r.MethodNotAllowed(handleMethodNotAllowed(r))

	// Unauthenticated operations endpoints.
	r.Get("/healthz", handleHealthz())
	r.Get("/readyz", handleReadyz(d.Store))
	r.Method(http.MethodGet, "/metrics", d.Metrics.Handler())
	r.Get("/openapi.yaml", handleSpec(d.Spec))

	r.Group(func(r chi.Router) {
		r.Use(auth(d.APIKeys), check.middleware)
		idem := idempotency(d.Keys, d.KeyTTL)
		r.With(idem).Post("/route", handleRoute(d.Router))
		r.With(idem).Post("/route/batch", handleBatch(d.Router))
		r.Get("/schemas/{provider}", handleSchemas(d.Tools))
		r.Post("/runs", handleStartRun(d.Runs))
		r.Get("/runs", handleListRuns(d.Runs))
		r.Get("/runs/{id}", handleGetRun(d.Runs))
	})
	if d.MCP != nil { // MCP streamable HTTP: authenticated, but not body-checked (the SDK reads the body and streams SSE)
		r.With(auth(d.APIKeys)).Handle("/mcp", d.MCP)
	}
	return r, nil
}
