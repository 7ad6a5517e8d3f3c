package httpapi

import (
	"net/http"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// entryPoint names the entry point of the tool calls of a route for
// their audit records (docs/security.md "Audit trail").
func entryPoint(e string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if toolrouter.EntryPoint(r.Context()) == e {
				// Already so (EntryRoute is the default): spare POST
				// /route a context and a request copy (issue 10).
				next.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r.WithContext(toolrouter.WithEntryPoint(r.Context(), e)))
		})
	}
}
