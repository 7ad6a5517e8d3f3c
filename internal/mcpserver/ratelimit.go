package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
)

// admit counts the tools/call requests of a POST body against the
// client's rate limit, decoding the body as the SDK does (exact-case keys,
// batches), and adds them to prepaid. Over the limit, it answers HTTP 429
// with Retry-After, the RateLimit fields and a JSON-RPC error for each
// message, and returns false; otherwise the body is put back for the SDK
// to read. intercept counts, where the SDK dispatches them, any call
// admit did not.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request, c *access.Client, prepaid *atomic.Int64) bool {
	limit := h.d.MaxBodyBytes
	if limit <= 0 {
		limit = 4 << 20
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || int64(len(body)) > limit {
		return true // the SDK answers a body it cannot read
	}
	msgs := decodeMessages(body)
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

// decodeMessages decodes a POST body as the SDK's streamable transport
// does: a batch array of messages, else one message, each with the SDK's
// own decoder (keys matched exactly). A body it cannot decode is nil: the
// SDK refuses it too.
func decodeMessages(body []byte) []jsonrpc.Message {
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) != nil {
		batch = []json.RawMessage{body}
	}
	msgs := make([]jsonrpc.Message, 0, len(batch))
	for _, raw := range batch {
		if m, err := jsonrpc.DecodeMessage(raw); err == nil {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// prepaidKey is the request context key, and TokenInfo.Extra key, of the
// *atomic.Int64 counting the tools/call of a request that admit already
// took from the client's rate limit.
type prepaidKey struct{}

const prepaidExtra = "toolrouter/prepaid"

// takeCall counts one tools/call of c against its rate limit where the
// SDK dispatches it: from what admit took for the request, else from the
// limiter. Over the limit it is the JSON-RPC rate-limit error.
func (h *Handler) takeCall(ctx context.Context, c *access.Client, req mcp.Request) error {
	if c == nil || h.d.Limiter == nil || c.Rate.IsZero() {
		return nil
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		if p, _ := ex.TokenInfo.Extra[prepaidExtra].(*atomic.Int64); p != nil && p.Add(-1) >= 0 {
			return nil
		}
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
