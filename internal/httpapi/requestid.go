package httpapi

import (
	"context"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/randid"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// requestID takes the request id from X-Request-Id (or makes one), echoes it
// in the response and gives the request's context its state (see reqState)
// and a logger carrying the id.
func requestID(base zerolog.Logger, lim *logLimiter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get("X-Request-Id")
			if !validRequestID(id) {
				id = randid.Hex(12)
			}
			st := &reqState{lim: lim, logger: base.With().Str("request_id", id).Logger()}
			st.log = &st.logger // the logger lives in the state: no allocation of its own
			st.id[0] = id
			w.Header()["X-Request-Id"] = st.id[:] // as Header.Set, without a slice of its own
			ctx := toolrouter.WithRequestID(context.WithValue(r.Context(), stateKey{}, st), id)
			next.ServeHTTP(w, r.WithContext(st.logger.WithContext(ctx)))
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
