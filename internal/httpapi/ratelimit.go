package httpapi

import (
	"net/http"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// rateLimit counts the tool calls of a request (calls reads them)
// against the rate limit of its client; over it the answer is 429 with
// Retry-After and the RateLimit-Policy / RateLimit fields, and no tool is
// called (api/openapi.yaml, response TooManyRequests). The calls' tool
// names are read for the refusal's audit record only.
func rateLimit(l Limiter, entry string, views func() *vserver.Set, calls func(*http.Request) []any) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if l == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := access.FromContext(r.Context())
			payloads := calls(r)
			v, err := l.Take(r.Context(), c, toolrouter.Calls{N: len(payloads), Entry: entry, View: callView(views, r),
				Names: func() []string { return toolNames(payloads) }})
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

// batchCalls is the tool calls of a POST /route/batch body: its
// tool_calls, or the calls of its message (a turn that does not split is
// refused by the handler, so it counts none).
func batchCalls(r *http.Request) []any {
	b := batchBody(r)
	if b.Message != nil {
		if turn, err := format.SplitTurn(b.Message); err == nil {
			return turn.Calls
		}
		return nil
	}
	return b.ToolCalls
}

// oneCall is the tool call of a POST /route body.
func oneCall(r *http.Request) []any { return []any{routeBody(r).ToolCall} }

// toolNames is the tool names of payloads (those that name one).
func toolNames(payloads []any) []string {
	var names []string
	for _, p := range payloads {
		if call, err := format.Normalize(p); err == nil {
			names = append(names, call.ToolName)
		}
	}
	return names
}
