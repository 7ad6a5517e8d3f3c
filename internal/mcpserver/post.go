package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// post is what ServeHTTP learnt of a POST before the SDK reads it, handed
// to the method handlers through TokenInfo.Extra (postExtra).
type post struct {
	// prepaid counts the tools/call of the request that admit already took
	// from the client's rate limit.
	prepaid atomic.Int64
	// slots, for a JSON-RPC batch, bounds the tools/call of the request
	// running at once (Deps.BatchConcurrency); nil otherwise.
	slots chan struct{}
}

// postExtra is the TokenInfo.Extra key of the request's *post.
const postExtra = "toolrouter/post"

// postOf is the *post of a method handler's request (nil when none).
func postOf(req mcp.Request) *post {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		p, _ := ex.TokenInfo.Extra[postExtra].(*post)
		return p
	}
	return nil
}

// readBody reads a POST body (bounded by MaxBodyBytes) and puts it back
// for the SDK; nil for other methods.
func (h *Handler) readBody(r *http.Request) ([]byte, error) {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, h.d.MaxBodyBytes))
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// decodeMessages decodes a POST body as the SDK's streamable transport
// does: a batch array of messages, else one message, each with the SDK's
// own decoder (keys matched exactly). A body it cannot decode is nil: the
// SDK refuses it too.
func decodeMessages(body []byte) (msgs []jsonrpc.Message, array bool) {
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) == nil {
		array = true
	} else {
		batch = []json.RawMessage{body}
	}
	msgs = make([]jsonrpc.Message, 0, len(batch))
	for _, raw := range batch {
		if m, err := jsonrpc.DecodeMessage(raw); err == nil {
			msgs = append(msgs, m)
		}
	}
	return msgs, array
}

// hasInitialize reports whether msgs hold an initialize request.
func hasInitialize(msgs []jsonrpc.Message) bool {
	for _, m := range msgs {
		if m, ok := m.(*jsonrpc.Request); ok && m.Method == "initialize" {
			return true
		}
	}
	return false
}

// batchesUntil is the first protocol revision without JSON-RPC batches.
const batchesUntil = "2025-06-18"

// checkBatch refuses a JSON-RPC batch (an array) that the session's
// protocol revision does not allow (2025-06-18 removed batching), or that
// holds more than MaxBatch messages, as POST /route/batch refuses more
// calls: HTTP 400 with one JSON-RPC invalid-request error. It reports
// whether it answered.
func (h *Handler) checkBatch(w http.ResponseWriter, r *http.Request, n int) bool {
	version := r.Header.Get("Mcp-Protocol-Version")
	if version == "" {
		version = h.sessionVersion(r.Header.Get(sessionIDHeader))
	}
	var msg string
	switch {
	case version >= batchesUntil:
		msg = fmt.Sprintf("JSON-RPC batches are not allowed in protocol %s (removed in %s): send one message per request", version, batchesUntil)
	case n > h.d.MaxBatch:
		msg = fmt.Sprintf("a JSON-RPC batch holds at most %d messages; this one holds %d", h.d.MaxBatch, n)
	default:
		return false
	}
	writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, msg)
	return true
}

// sessionVersion is the protocol revision the session (SDK id) of this
// replica negotiated; 2025-03-26, which the transport assumes of a request
// without the MCP-Protocol-Version header, when it is not held here.
func (h *Handler) sessionVersion(id string) string {
	if id != "" {
		for ss := range h.srv.Sessions() {
			if ip := ss.InitializeParams(); ss.ID() == id && ip != nil && ip.ProtocolVersion != "" {
				return ip.ProtocolVersion
			}
		}
	}
	return "2025-03-26"
}

// writeRPCError answers one JSON-RPC error (id null: it answers the whole
// request) with an HTTP status.
func writeRPCError(w http.ResponseWriter, status, code int, msg string) {
	if p, ok := w.(*problemWriter); ok {
		p.done = true
		w = p.ResponseWriter
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": msg}})
}
