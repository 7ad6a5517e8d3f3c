package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
)

// post sends one JSON-RPC message to /mcp with headers, and returns the
// status, the Content-Type and the body (the data of the last event of an
// SSE answer).
func post(t *testing.T, url, body string, headers map[string]string) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "text/event-stream") {
		var last []byte
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && len(bytes.TrimSpace(d)) > 0 {
				last = d
			}
		}
		b = last
	}
	if resp.Header.Get("Mcp-Session-Id") != "" && headers["Mcp-Protocol-Version"] == "2026-07-28" {
		t.Errorf("a 2026-07-28 request got a session id")
	}
	return resp.StatusCode, ct, b
}

// modern is a 2026-07-28 request of method with params (a JSON object
// without _meta), and its headers.
func modern(method, name, params string) (string, map[string]string) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	if params == "" || params == "{}" {
		params = "{" + meta + "}"
	} else {
		params = strings.TrimSuffix(params, "}") + "," + meta + "}"
	}
	h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`, h
}

type rpcReply struct {
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeReply(t *testing.T, b []byte) rpcReply {
	t.Helper()
	var r rpcReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("not a JSON-RPC reply: %s", b)
	}
	return r
}

// TestMCPServerModernClient: the SDK's client on 2026-07-28 works without
// a session, and tools/call goes through the router.
func TestMCPServerModernClient(t *testing.T) {
	e := newEnv(t)
	cs := connectVersion(t, e.url, nil, nil)
	if cs.ID() != "" {
		t.Errorf("session id %q under 2026-07-28", cs.ID())
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("protocol version %q", v)
	}
	if tools := listTools(t, cs); len(tools) != 5 {
		t.Errorf("listed %d tools, want 5", len(tools))
	}
	res := call(t, cs, mcpName("test/echo"), map[string]any{"msg": "hi"}, nil)
	if res.IsError || text(t, res) != `{"msg":"hi"}` || res.Meta[mcpserver.MetaPlanID] != "mcp" {
		t.Errorf("tools/call: isError %v, _meta %v", res.IsError, res.Meta)
	}
}

// TestMCPServerModernWire checks the 2026-07-28 rules on the wire:
// server/discover, cache hints on lists, header checks, removed methods,
// no GET stream; and that session clients still get sessions.
func TestMCPServerModernWire(t *testing.T) {
	e := newEnv(t)

	body, h := modern("server/discover", "", "{}")
	status, _, b := post(t, e.url, body, h)
	r := decodeReply(t, b)
	if status != 200 || r.Error != nil {
		t.Fatalf("server/discover: %d %s", status, b)
	}
	if vs, _ := r.Result["supportedVersions"].([]any); len(vs) == 0 {
		t.Errorf("server/discover lists no versions: %s", b)
	}

	body, h = modern("tools/list", "", "{}")
	status, _, b = post(t, e.url, body, h)
	r = decodeReply(t, b)
	if status != 200 || r.Result["ttlMs"] != float64(5000) || r.Result["cacheScope"] != "private" {
		t.Errorf("tools/list: %d, ttlMs %v, cacheScope %v", status, r.Result["ttlMs"], r.Result["cacheScope"])
	}

	// Mcp-Name must match params.name.
	body, h = modern("tools/call", "other", `{"name":"`+mcpName("test/echo")+`","arguments":{}}`)
	status, _, b = post(t, e.url, body, h)
	if r = decodeReply(t, b); status != 400 || r.Error == nil || r.Error.Code != -32020 {
		t.Errorf("Mcp-Name mismatch: %d %s, want 400 with HeaderMismatch -32020", status, b)
	}
	body, h = modern("tools/call", mcpName("test/echo"), `{"name":"`+mcpName("test/echo")+`","arguments":{"msg":"x"}}`)
	status, _, b = post(t, e.url, body, h)
	if r = decodeReply(t, b); status != 200 || r.Error != nil || r.Result["isError"] == true {
		t.Errorf("tools/call: %d %s", status, b)
	}

	// ping and logging/setLevel are gone in 2026-07-28.
	for _, m := range []string{"ping", "logging/setLevel"} {
		body, h = modern(m, "", `{"level":"info"}`)
		status, _, b = post(t, e.url, body, h)
		if r = decodeReply(t, b); status != 404 || r.Error == nil || r.Error.Code != -32601 {
			t.Errorf("%s: %d %s, want 404 with -32601", m, status, b)
		}
	}

	// An unknown version is answered with the supported ones.
	body, h = modern("tools/list", "", "{}")
	body = strings.Replace(body, "2026-07-28", "2099-01-01", 1)
	h["Mcp-Protocol-Version"] = "2099-01-01"
	status, _, b = post(t, e.url, body, h)
	if r = decodeReply(t, b); status != 400 || r.Error == nil || r.Error.Code != -32022 {
		t.Errorf("unknown version: %d %s, want 400 with UnsupportedProtocolVersion -32022", status, b)
	}

	// No GET stream for 2026-07-28.
	req, _ := http.NewRequest(http.MethodGet, e.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET under 2026-07-28: %d, want 405", resp.StatusCode)
	}

	// initialize still opens a session.
	status, _, _ = post(t, e.url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	if status != 200 {
		t.Errorf("initialize: %d", status)
	}
}

// TestMCPServerHTTPErrorsAreProblems: transport-level errors are
// problem+json; JSON-RPC errors carry a real code.
func TestMCPServerHTTPErrorsAreProblems(t *testing.T) {
	e := newEnv(t)
	req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/html")
	req.Header.Set("Mcp-Session-Id", "nope")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct {
		Status int    `json:"status"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	if resp.Header.Get("Content-Type") != "application/problem+json" || json.NewDecoder(resp.Body).Decode(&p) != nil ||
		p.Status != resp.StatusCode || resp.StatusCode < 400 || p.Detail == "" {
		t.Errorf("bad request: %d %s %+v, want a problem document", resp.StatusCode, resp.Header.Get("Content-Type"), p)
	}

	// Invalid params of a tools/call: -32602, not 0.
	cs := connect(t, e.url, nil)
	_ = cs
	body, h := modern("tools/call", mcpName("test/echo"), `{"name":"`+mcpName("test/echo")+`","arguments":{},"_meta":{"toolrouter/plan_id":""}}`)
	body = strings.Replace(body, `"_meta":{"toolrouter/plan_id":""},"_meta":{`, `"_meta":{"toolrouter/plan_id":"",`, 1)
	status, _, b := post(t, e.url, body, h)
	if r := decodeReply(t, b); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("empty plan id: %d %s, want error -32602", status, b)
	}
}
