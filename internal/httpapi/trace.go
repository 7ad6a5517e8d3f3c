package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/toolrouterd/toolrouterd/internal/telemetry"
)

// tracing opens a SERVER span per request, named after the route template
// that matched, continuing the caller's traceparent; log lines of the
// request carry its trace_id and span_id. Without tracing it is a no-op.
func tracing(t *telemetry.Telemetry) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if !t.Enabled() {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, end := t.StartHTTPServer(r)
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			// chi fills the route context (shared with r) as it routes.
			defer func() {
				route := ""
				if rc := chi.RouteContext(r.Context()); rc != nil {
					route = rc.RoutePattern()
				}
				status := ww.Status()
				if status == 0 {
					status = http.StatusOK
				}
				end(route, status)
			}()
			next.ServeHTTP(ww, r.WithContext(ctx))
		})
	}
}
