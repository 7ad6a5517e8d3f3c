package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// appsManyTools is a go-sdk MCP server with n tools t000… that answer
// their name.
func appsManyTools(t *testing.T, n int) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "v1"}, nil)
	for i := range n {
		name := fmt.Sprintf("t%03d", i)
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "Tool " + name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
		})
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts
}

// appsConnect connects a go-sdk client (protocol version, "" for the
// SDK's latest) to endpoint with an API key.
func appsConnect(t *testing.T, endpoint, key, version string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-apps", Version: "v0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}, MaxRetries: -1}, so)
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// appsPages lists every tool page by page: the names and the number of
// pages.
func appsPages(t *testing.T, cs *mcp.ClientSession) (names []string, pages int) {
	t.Helper()
	cursor := ""
	for {
		res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("tools/list page %d: %v", pages+1, err)
		}
		pages++
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if cursor = res.NextCursor; cursor == "" {
			return names, pages
		}
	}
}

// TestAppsErrorsAndLists (issue 34 item 4): three go-sdk backends of 500
// tools each behind the binary list as 1,500 tools on /mcp over pages of
// one cursor, on both protocol eras; a virtual server's instructions come
// back at initialize; a tools/call over the client's rate limit is HTTP
// 429 carrying JSON-RPC -32023 with data.retryAfterMs (SEP-3304).
func TestAppsErrorsAndLists(t *testing.T) {
	t.Parallel()
	a, b, c := appsManyTools(t, 500), appsManyTools(t, 500), appsManyTools(t, 500)
	rt, _ := startRouter(t, fmt.Sprintf(`mcp_servers:
  - {name: a, url: %s, prefix: a_}
  - {name: b, url: %s, prefix: b_}
  - {name: c, url: %s, prefix: c_}
virtual_servers:
  - name: ops
    tools: ["a_t00*"]
    instructions: "Call a_t001 first."
clients:
  - {name: agent, key_env: AGENT_KEY, tools: ["*"]}
  - {name: limited, key_env: LIMITED_KEY, tools: ["a_*"], rate_limit: 1/h}
`, a.URL, b.URL, c.URL), "AGENT_KEY=agent-key", "LIMITED_KEY=limited-key")

	for _, version := range []string{"2025-11-25", ""} {
		cs := appsConnect(t, rt.URL()+"/mcp", "agent-key", version)
		var names []string
		var pages int
		waitFor(t, "1,500 tools listed", func() bool {
			names, pages = appsPages(t, cs)
			return len(names) == 1500
		})
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				t.Fatalf("%s listed twice", n)
			}
			seen[n] = true
		}
		if pages != 2 || !seen["a_t000"] || !seen["c_t499"] {
			t.Errorf("protocol %q: %d tools over %d pages, want 1,500 over 2", version, len(names), pages)
		}
		t.Logf("protocol %q: 1,500 tools over %d pages", version, pages)
	}

	ops := appsConnect(t, rt.URL()+"/mcp/ops", "agent-key", "2025-11-25")
	if got := ops.InitializeResult().Instructions; got != "Call a_t001 first." {
		t.Errorf("/mcp/ops instructions %q", got)
	}

	// The rate limit, on the stateless revision.
	post := func(id int) (int, http.Header, string) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"a_t001","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, id)
		req, _ := http.NewRequest("POST", rt.URL()+"/mcp", strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "a_t001", "Authorization": "Bearer limited-key"} {
			req.Header.Set(k, v)
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
		return resp.StatusCode, resp.Header, string(b)
	}
	if status, _, body := post(1); status != 200 || !strings.Contains(body, "t001") {
		t.Fatalf("first call: %d %s", status, body)
	}
	status, h, body := post(2)
	var reply struct {
		Error struct {
			Code int `json:"code"`
			Data struct {
				RetryAfterMs int64 `json:"retryAfterMs"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &reply); err != nil || status != http.StatusTooManyRequests || reply.Error.Code != -32023 ||
		reply.Error.Data.RetryAfterMs < 1000 || h.Get("Retry-After") == "" || fmt.Sprint(reply.Error.Data.RetryAfterMs/1000) != h.Get("Retry-After") {
		t.Errorf("call over 1/h: %d %v %s", status, h, body)
	}
}
