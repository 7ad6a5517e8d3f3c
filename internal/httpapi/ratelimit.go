package httpapi

import (
	"net/http"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// rateLimit counts the tool calls of a request (calls reads how many)
// against the rate limit of its client; over it the answer is 429 with
// Retry-After and the RateLimit-Policy / RateLimit fields, and no tool is
// called (api/openapi.yaml, response TooManyRequests).
func rateLimit(l Limiter, calls func(*http.Request) int) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if l == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := access.FromContext(r.Context())
			v, err := l.Take(r.Context(), c, calls(r))
			if err != nil {
				writeError(w, r, toolrouter.Unavailable("rate limiter", err))
				return
			}
			v.SetHeaders(w.Header())
			if !v.Allowed {
				writeProblem(w, r, http.StatusTooManyRequests, "", v.Message(c.LabelName()))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// batchCalls is the number of tool calls of a POST /route/batch body: its
// tool_calls, or the calls of its message (a turn that does not split is
// refused by the handler, so it counts none).
func batchCalls(r *http.Request) int {
	b := body(r)
	if msg, ok := b["message"]; ok {
		if turn, err := format.SplitTurn(msg); err == nil {
			return len(turn.Calls)
		}
		return 0
	}
	calls, _ := b["tool_calls"].([]any)
	return len(calls)
}

func oneCall(*http.Request) int { return 1 }
