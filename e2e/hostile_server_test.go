package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// hostileMCP is an MCP server (streamable HTTP, raw JSON-RPC, one JSON
// answer per request) whose tools/list misbehaves on demand (issue 32):
//
//   - good: the tools ping and mutable (description desc);
//   - pages: pages of 5 tools of 20 KB each, each with a new nextCursor;
//   - huge: one answer of hugeBytes (a tool whose description is that long);
//   - churn: ping and 15 tools renamed on every tools/list.
//
// It sends no notification unless asked: a tools/call answered while
// notify is set comes as an event stream whose first event is
// notifications/tools/list_changed, so that toolrouterd rediscovers.
type hostileMCP struct {
	*httptest.Server
	mu     sync.Mutex
	mode   string
	desc   string
	notify bool
	// churning: every tools/list answer is an event stream that first
	// says the list changed (so toolrouterd lists again at once).
	churning  bool
	hugeBytes int
	round     int // tools/list answers of churn so far
	lists     int // tools/list requests
	calls     map[string]int
}

func startHostileMCP(t *testing.T) *hostileMCP {
	t.Helper()
	h := &hostileMCP{mode: "good", desc: "Echoes msg back.", calls: map[string]int{}}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	return h
}

// set changes the server's behaviour.
func (h *hostileMCP) set(f func(h *hostileMCP)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

func (h *hostileMCP) counts() (lists int, calls map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := map[string]int{}
	for k, v := range h.calls {
		c[k] = v
	}
	return h.lists, c
}

func (h *hostileMCP) serve(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		return
	case http.MethodPost:
	default:
		http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name   string `json:"name"`
			Cursor string `json:"cursor"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(msg.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Mcp-Session-Id", "hostile-session")
	answer := func(result any) {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
		_, _ = w.Write(b)
	}
	switch msg.Method {
	case "initialize":
		answer(map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{"listChanged": true}},
			"serverInfo": map[string]any{"name": "hostile", "version": "1"}})
	case "ping":
		answer(map[string]any{})
	case "tools/list":
		h.list(w, msg.ID, msg.Params.Cursor)
	case "tools/call":
		h.mu.Lock()
		h.calls[msg.Params.Name]++
		notify := h.notify
		h.mu.Unlock()
		result := map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}}
		if !notify {
			answer(result)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\ndata: %s\n\n", b)
	default:
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		_, _ = w.Write(b)
	}
}

func hostileTool(name, desc string) map[string]any {
	return map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"msg": map[string]any{"type": "string"}}}}
}

func (h *hostileMCP) list(w http.ResponseWriter, id json.RawMessage, cursor string) {
	h.mu.Lock()
	h.lists++
	mode, desc, huge, churning := h.mode, h.desc, h.hugeBytes, h.churning
	round := h.round
	if mode == "churn" {
		h.round++
	}
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	write := func(result map[string]any) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		_, _ = w.Write(b)
	}
	switch mode {
	case "good":
		write(map[string]any{"tools": []any{hostileTool("ping", "Answers ok."), hostileTool("mutable", desc)}})
	case "pages":
		n := 0
		fmt.Sscanf(cursor, "c%d", &n)
		tools := []any{}
		for i := range 5 {
			tools = append(tools, hostileTool(fmt.Sprintf("p%d_%d", n, i), strings.Repeat("x", 20000)))
		}
		write(map[string]any{"tools": tools, "nextCursor": fmt.Sprintf("c%d", n+1)})
	case "huge":
		// Written as it goes: the test process never holds it.
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"huge","inputSchema":{"type":"object"},"description":"`, id)
		chunk := []byte(strings.Repeat("h", 64<<10))
		for left := huge; left > 0; left -= len(chunk) {
			if _, err := w.Write(chunk[:min(len(chunk), left)]); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"}]}}`)
	case "churn":
		tools := []any{hostileTool("ping", "Answers ok.")}
		for i := range 15 {
			tools = append(tools, hostileTool(fmt.Sprintf("t%d_%d", round, i), "Renamed every round."))
		}
		if !churning {
			write(map[string]any{"tools": tools})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"tools": tools}})
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\ndata: %s\n\n", b)
	}
}
