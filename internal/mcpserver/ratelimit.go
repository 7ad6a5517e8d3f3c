package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// admit counts the tools/call requests of a POST's messages (decoded as
// the SDK does: exact-case keys, batches) against the client's rate limit,
// and adds them to prepaid. Over the limit, it answers HTTP 429 with
// Retry-After, the RateLimit fields and one JSON-RPC error (the message's
// id; null for a batch: a refusal costs little however many calls it
// held), and returns false. intercept counts, where the SDK dispatches
// them, any call admit did not.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request, c *access.Client, msgs []jsonrpc.Message, array bool, prepaid *atomic.Int64) bool {
	var calls []*jsonrpc.Request
	for _, m := range msgs {
		if m, ok := m.(*jsonrpc.Request); ok && m.Method == "tools/call" && m.IsCall() {
			calls = append(calls, m)
		}
	}
	if len(calls) == 0 {
		return true
	}
	var id any
	if !array {
		id = calls[0].ID.Raw()
	}
	return h.admitCalls(w, r, c, len(calls), id, func() []string { return callNames(calls) }, prepaid)
}

// admitCalls is admit's work for n tools/call of a request, the JSON-RPC
// id of its error (nil for a batch) and their names (for the refusal
// record); the fast path (fastcall.go) calls it for its one call.
func (h *Handler) admitCalls(w http.ResponseWriter, r *http.Request, c *access.Client, n int, id any, names func() []string, prepaid *atomic.Int64) bool {
	v, err := h.d.Limiter.Take(r.Context(), c, toolrouter.Calls{N: n, Entry: toolrouter.EntryMCP, Names: names})
	if err == nil && v.Allowed {
		prepaid.Add(int64(n))
		return true
	}
	var jerr *jsonrpc.Error
	status := http.StatusServiceUnavailable
	if err == nil {
		jerr, status = rateLimited(v, c.Name, n), http.StatusTooManyRequests
		v.SetHeaders(w.Header())
	} else {
		h.lim.Event(&h.d.Logger, zerolog.ErrorLevel, "rate limiter").Err(err).Msg("rate limiter")
		w.Header().Set("Retry-After", "1")
		jerr = limiterDown(n)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": jerr.Code, "message": jerr.Message, "data": jerr.Data}})
	return false
}

// rateLimited is the JSON-RPC error of calls refused by a client's rate
// limit, as SEP-3304 ("Standardizing Rate-Limiting Errors", PR #3304,
// draft of 2026-08-25) writes it: code -32023 (RateLimited) and
// data.retryAfterMs, consistent with the Retry-After field sent with it
// (the whole seconds until the window resets, at least one). limit and
// remaining are left out (the SEP allows it): the RateLimit fields carry
// the quota already. data.calls is toolrouterd's: how many calls the
// refusal held.
func rateLimited(v access.Verdict, client string, calls int) *jsonrpc.Error {
	secs := max(int64((v.Reset+time.Second-1)/time.Second), 1)
	data, _ := json.Marshal(map[string]any{"retryAfterMs": secs * 1000, "calls": calls})
	return &jsonrpc.Error{Code: codeRateLimited, Message: v.Message(client), Data: data}
}

// limiterDown is the JSON-RPC error of calls that could not be counted (the
// limiter's store failed): a transient server fault, not the client's
// rate. The spec's published codes have none for it (the error registry
// draft's Unavailable, -32024, is a placeholder until accepted), so it is
// InternalError (-32603) with retryAfterMs, answered 503 with Retry-After.
func limiterDown(calls int) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"retryAfterMs": 1000, "calls": calls})
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "rate limiter unavailable; retry later", Data: data}
}

// callNames is the tool names of tools/call requests, as sent (the
// Limiter's refusal record resolves them).
func callNames(calls []*jsonrpc.Request) []string {
	var names []string
	for _, m := range calls {
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.Name != "" {
			names = append(names, p.Name)
		}
	}
	return names
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
	calls := toolrouter.Calls{N: 1, Entry: toolrouter.EntryMCP}
	if r, ok := req.(*mcp.CallToolRequest); ok {
		calls.Names = func() []string { return []string{r.Params.Name} }
	}
	v, err := h.d.Limiter.Take(ctx, c, calls)
	switch {
	case err != nil:
		h.lim.Event(&h.d.Logger, zerolog.ErrorLevel, "rate limiter").Err(err).Msg("rate limiter")
		return limiterDown(1)
	case !v.Allowed:
		return rateLimited(v, c.Name, 1)
	}
	return nil
}

// codeRateLimited is the JSON-RPC error code of a tools/call refused by
// the client's rate limit: RateLimited of SEP-3304, in the range the
// specification reserves for itself (-32020 to -32099, 2026-07-28 "Error
// Codes").
const codeRateLimited = -32023
