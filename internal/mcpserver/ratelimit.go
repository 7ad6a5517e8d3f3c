package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
)

// admit counts the tools/call requests of a POST's messages (decoded as
// the SDK does: exact-case keys, batches) against the client's rate limit,
// and adds them to prepaid. Over the limit, it answers HTTP 429 with
// Retry-After, the RateLimit fields and a JSON-RPC error for each
// message, and returns false. intercept counts, where the SDK dispatches
// them, any call admit did not.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request, c *access.Client, msgs []jsonrpc.Message, prepaid *atomic.Int64) bool {
	calls := 0
	for _, m := range msgs {
		if m, ok := m.(*jsonrpc.Request); ok && m.Method == "tools/call" && m.IsCall() {
			calls++
		}
	}
	if calls == 0 {
		return true
	}
	v, err := h.d.Limiter.Take(r.Context(), c, calls)
	if err == nil && v.Allowed {
		prepaid.Add(int64(calls))
		return true
	}
	msg := "rate limiter unavailable; retry later"
	status := http.StatusServiceUnavailable
	if err == nil {
		msg, status = v.Message(c.Name), http.StatusTooManyRequests
		v.SetHeaders(w.Header())
	} else {
		h.d.Logger.Error().Err(err).Msg("rate limiter")
		w.Header().Set("Retry-After", "1")
	}
	var out []any
	for _, m := range msgs {
		if m, ok := m.(*jsonrpc.Request); ok && m.IsCall() {
			out = append(out, map[string]any{"jsonrpc": "2.0", "id": m.ID.Raw(),
				"error": map[string]any{"code": codeRateLimited, "message": msg}})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if len(out) == 1 {
		_ = json.NewEncoder(w).Encode(out[0])
	} else {
		_ = json.NewEncoder(w).Encode(out)
	}
	return false
}

// takeCall counts one tools/call of c against its rate limit where the
// SDK dispatches it: from what admit took for the request, else from the
// limiter. Over the limit it is the JSON-RPC rate-limit error.
func (h *Handler) takeCall(ctx context.Context, c *access.Client, req mcp.Request) error {
	if c == nil || h.d.Limiter == nil || c.Rate.IsZero() {
		return nil
	}
	if p := postOf(req); p != nil && p.prepaid.Add(-1) >= 0 {
		return nil
	}
	v, err := h.d.Limiter.Take(ctx, c, 1)
	switch {
	case err != nil:
		h.d.Logger.Error().Err(err).Msg("rate limiter")
		return &jsonrpc.Error{Code: codeRateLimited, Message: "rate limiter unavailable; retry later"}
	case !v.Allowed:
		return &jsonrpc.Error{Code: codeRateLimited, Message: v.Message(c.Name)}
	}
	return nil
}

// codeRateLimited is the JSON-RPC error code of a tools/call refused by
// the client's rate limit (in the implementation-defined server range).
const codeRateLimited = -32029
