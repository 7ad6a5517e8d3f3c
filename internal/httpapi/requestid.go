package httpapi

import (
	"net/http"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/randid"
)

// requestID takes the request id from X-Request-Id (or makes one), echoes it
// in the response and gives the request's context a logger carrying it
// (made when first asked for: most requests log nothing) and the request's
// state (limiter of log lines, see reqState).
func requestID(base zerolog.Logger, lim *logLimiter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get("X-Request-Id")
			if !validRequestID(id) {
				id = randid.Hex(12)
			}
			st := stateOf(r) // made by entry, ahead of chi
			fresh := st == nil
			if fresh {
				st = &reqState{Context: r.Context()}
			}
			st.lim, st.base = lim, &base
			st.id[0] = id
			w.Header()["X-Request-Id"] = st.id[:] // as Header.Set, without a slice of its own
			if fresh {
				r = r.WithContext(st)
			}
			next.ServeHTTP(w, r)
		})
	}
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}
