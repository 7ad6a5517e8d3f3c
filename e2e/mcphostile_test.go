package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Issue 21: /mcp under hostile clients, through the real binary.

// mcpRaw is an answer of /mcp: the status, the headers and the body (the
// data of the last event of an SSE answer).
type mcpRaw struct {
	Status int
	Header http.Header
	Body   []byte
}

// rpc decodes the answer as one JSON-RPC response.
func (r mcpRaw) rpc(t *testing.T) (result map[string]any, code int, message string) {
	t.Helper()
	var m struct {
		Result map[string]any `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("not a JSON-RPC response (%d): %s", r.Status, r.Body)
	}
	if m.Error != nil {
		return nil, m.Error.Code, m.Error.Message
	}
	return m.Result, 0, ""
}

// mcpPost posts body to url's /mcp in session tok (none when ""), with
// extra header pairs.
func mcpPost(t *testing.T, url, tok, body string, header ...string) mcpRaw {
	t.Helper()
	return mcpSend(t, http.MethodPost, url, tok, body, header...)
}

func mcpSend(t *testing.T, method, url, tok, body string, header ...string) mcpRaw {
	t.Helper()
	req, err := http.NewRequest(method, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if tok != "" {
		req.Header.Set("Mcp-Session-Id", tok)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && len(bytes.TrimSpace(d)) > 0 {
				last = d
			}
		}
		b = last
	}
	return mcpRaw{resp.StatusCode, resp.Header, b}
}

// mcpSession opens a session of protocol version (2025-03-26 or later,
// before 2026-07-28) with raw requests and returns its token.
func mcpSession(t *testing.T, url, version string, header ...string) string {
	t.Helper()
	r := mcpPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`, header...)
	tok := r.Header.Get("Mcp-Session-Id")
	if r.Status != http.StatusOK || tok == "" {
		t.Fatalf("initialize: %d %s", r.Status, r.Body)
	}
	if r := mcpPost(t, url, tok, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, append([]string{"Mcp-Protocol-Version", version}, header...)...); r.Status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", r.Status, r.Body)
	}
	return tok
}

// TestMCPPlanIDControlCharacters (issue 21 finding 12): a tools/call whose
// _meta.toolrouter/plan_id holds a control character is refused as invalid
// params naming the field, before any sequence is taken, as on /route.
func TestMCPPlanIDControlCharacters(t *testing.T) {
	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr))
	tok := mcpSession(t, rt.URL(), "2025-11-25")
	for _, plan := range []string{"a\nb", "a\x00b", "a\x7fb", "a\rX-Injected: 1"} {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
			"params": map[string]any{"name": "test/echo", "arguments": map[string]any{}, "_meta": map[string]any{"toolrouter/plan_id": plan}}})
		r := mcpPost(t, rt.URL(), tok, string(body))
		res, code, msg := r.rpc(t)
		if code != -32602 || !strings.Contains(msg, "toolrouter/plan_id") {
			t.Errorf("plan_id %q: code %d %q, result %v; want invalid params naming the field", plan, code, msg, res)
		}
	}
	// No sequence of the plan was taken: its first call is sequence 0.
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test/echo","arguments":{},"_meta":{"toolrouter/plan_id":"a"}}}`
	res, code, msg := mcpPost(t, rt.URL(), tok, body).rpc(t)
	if meta, _ := res["_meta"].(map[string]any); code != 0 || meta["toolrouter/sequence"] != float64(0) {
		t.Errorf("a valid plan id: %v (%d %s), want sequence 0", res, code, msg)
	}
}
