package httpapi

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

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
