package mcpserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// problemWriter turns the plain-text HTTP errors of the MCP transport
// (wrong Accept or Content-Type, unknown session, bad method) into RFC 9457
// problem+json like every other error of the API (api/openapi.yaml, /mcp).
// JSON-RPC error responses, which the transport sends as application/json,
// pass unchanged: MCP clients read those.
type problemWriter struct {
	http.ResponseWriter
	status int          // a plain-text error's status, 0 otherwise
	body   bytes.Buffer // its text
	done   bool         // headers written
}

func (p *problemWriter) WriteHeader(status int) {
	if p.done {
		return
	}
	p.done = true
	if status >= 400 && strings.HasPrefix(p.Header().Get("Content-Type"), "text/plain") {
		p.status = status
		return
	}
	p.ResponseWriter.WriteHeader(status)
}

func (p *problemWriter) Write(b []byte) (int, error) {
	if !p.done {
		p.WriteHeader(http.StatusOK)
	}
	if p.status != 0 {
		if p.body.Len() < 4<<10 {
			p.body.Write(b)
		}
		return len(b), nil
	}
	return p.ResponseWriter.Write(b)
}

// Flush flushes a streamed (SSE) answer.
func (p *problemWriter) Flush() {
	if p.status == 0 {
		http.NewResponseController(p.ResponseWriter).Flush() //nolint:errcheck // best effort, like http.Flusher
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (p *problemWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// finish writes the problem document of a plain-text error.
func (p *problemWriter) finish() {
	if p.status == 0 {
		return
	}
	p.Header().Del("X-Content-Type-Options")
	status := p.status
	p.status = 0
	detail := strings.TrimSpace(p.body.String())
	writeProblemTo(p.ResponseWriter, status, detail)
}

// writeProblem answers an HTTP-level error as problem+json.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	if p, ok := w.(*problemWriter); ok {
		p.done = true
		w = p.ResponseWriter
	}
	writeProblemTo(w, status, detail)
}

func writeProblemTo(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Type      string `json:"type"`
		Title     string `json:"title"`
		Status    int    `json:"status"`
		Detail    string `json:"detail"`
		Instance  string `json:"instance"`
		RequestID string `json:"request_id,omitempty"`
	}{"about:blank", http.StatusText(status), status, detail, "/mcp", w.Header().Get("X-Request-Id")})
}
