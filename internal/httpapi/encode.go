package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// encode writes v as JSON with the given status.
func encode(w http.ResponseWriter, r *http.Request, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		limitedLog(r, zerolog.WarnLevel, "write response").Str("error", clip(err.Error())).Msg("write response")
	}
}

// problem is an RFC 9457 problem document.
type problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance,omitempty"`
	Field     string `json:"field,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// writeProblem writes a problem+json response.
func writeProblem(w http.ResponseWriter, r *http.Request, status int, field, detail string) {
	p := problem{
		Type:      "about:blank",
		Title:     http.StatusText(status),
		Status:    status,
		Detail:    detail,
		Instance:  r.URL.Path,
		Field:     field,
		RequestID: w.Header().Get("X-Request-Id"),
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}

// statusOf maps application error codes to HTTP statuses: the one place
// where that happens.
func statusOf(code string) int {
	switch code {
	case toolrouter.EINVALID:
		return http.StatusBadRequest
	case toolrouter.ENOTFOUND:
		return http.StatusNotFound
	case toolrouter.ECONFLICT:
		return http.StatusConflict
	case toolrouter.EUNPROCESSABLE:
		return http.StatusUnprocessableEntity
	case toolrouter.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// statusClientClosed is what the access log and metrics record for a
// request whose client went away before the answer (nginx's 499): not a
// server error, and nobody reads it.
const statusClientClosed = 499

// writeError answers err: application errors with their message, anything
// else as "internal error" (logged with its details).
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := toolrouter.ErrorCode(err)
	status := statusOf(code)
	if status >= http.StatusInternalServerError && r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
		// The store gave up because the client hung up: not our failure.
		zerolog.Ctx(r.Context()).Debug().Str("error", clip(err.Error())).Msg("client went away")
		w.WriteHeader(statusClientClosed)
		return
	}
	switch status {
	case http.StatusInternalServerError:
		zerolog.Ctx(r.Context()).Error().Err(err).Msg("internal error")
	case http.StatusServiceUnavailable:
		limitedLog(r, zerolog.WarnLevel, "dependency unavailable").Str("error", clip(err.Error())).Msg("dependency unavailable")
		w.Header().Set("Retry-After", "1")
	}
	var field string
	var e *toolrouter.Error
	if errors.As(err, &e) {
		field = e.Field
	}
	writeProblem(w, r, status, field, toolrouter.ErrorMessage(err))
}

// routingPath is the path chi routes on: the escaped one when the request
// has it.
func routingPath(r *http.Request) string {
	if r.URL.RawPath != "" {
		return r.URL.RawPath
	}
	return r.URL.Path
}

// allowedMethods lists the methods mux routes for path, in a stable order
// (HEAD wherever GET is, OPTIONS everywhere: answered by
// handleMethodNotAllowed).
func allowedMethods(mux chi.Routes, path string) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if mux.Match(chi.NewRouteContext(), m, path) {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	if len(allow) > 0 {
		allow = append(allow, http.MethodOptions)
	}
	return allow
}

// handleNotFound answers paths no route has, pointing at the route a
// trailing slash hides (/route/ → /route).
func handleNotFound(mux chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		detail := "no route for " + r.Method + " " + r.URL.Path
		p := routingPath(r)
		if trimmed := strings.TrimRight(p, "/"); trimmed != p && trimmed != "" && len(allowedMethods(mux, trimmed)) > 0 {
			detail += " (without the trailing slash: " + strings.TrimRight(r.URL.Path, "/") + ")"
		}
		writeProblem(w, r, http.StatusNotFound, "", detail)
	}
}

// rejectEmptySegments answers 404 for a path with an empty segment
// (//route, /runs//): chi would route /runs// to /runs/{id} with the id
// "/", while no operation of the spec has such a path.
func rejectEmptySegments(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := routingPath(r); strings.Contains(p, "//") {
			clean := "/" + strings.Join(strings.FieldsFunc(r.URL.Path, func(c rune) bool { return c == '/' }), "/")
			writeProblem(w, r, http.StatusNotFound, "", "no route for "+r.Method+" "+r.URL.Path+" (empty path segment; did you mean "+clean+"?)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// handleMethodNotAllowed answers a method the path does not have with 405
// and the Allow header (RFC 9110 §15.5.6), and OPTIONS with 204 and Allow.
// OPTIONS on a path outside public needs what its other methods need:
// authenticate.
func handleMethodNotAllowed(mux chi.Routes, public map[string]bool, authenticate func(http.Handler) http.Handler) http.HandlerFunc {
	options := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", strings.Join(allowedMethods(mux, routingPath(r)), ", "))
		w.WriteHeader(http.StatusNoContent)
	})
	authOptions := authenticate(options)
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			if public[routingPath(r)] {
				options(w, r)
			} else {
				authOptions.ServeHTTP(w, r)
			}
			return
		}
		allow := strings.Join(allowedMethods(mux, routingPath(r)), ", ")
		w.Header().Set("Allow", allow)
		writeProblem(w, r, http.StatusMethodNotAllowed, "", "method "+r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+allow)
	}
}
