package httpapi

import (
	"net/http"
	"strings"
)

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
