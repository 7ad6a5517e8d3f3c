package httpapi

import (
	"net/http"
	"runtime/debug"

	"github.com/rs/zerolog"
)

// recoverer turns a panic into a logged 500 problem instead of a dropped
// connection.
func recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				zerolog.Ctx(r.Context()).Error().Interface("panic", v).Bytes("stack", debug.Stack()).Msg("handler panicked")
				writeProblem(w, r, http.StatusInternalServerError, "", "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}
