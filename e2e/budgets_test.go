package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// fiveMB is a 5 MB text with a recognisable head and tail.
func fiveMB() string {
	var b strings.Builder
	b.WriteString("HEAD-OF-OUTPUT\n")
	for i := 0; b.Len() < 5<<20; i++ {
		fmt.Fprintf(&b, "log line %07d: everything is fine here\n", i)
	}
	b.WriteString("TAIL-OF-OUTPUT")
	return b.String()
}

// bigTools serves an HTTP tool answering 5 MB of text (/text) and one
// answering 5 MB of JSON (/json), and an MCP server (/mcp) whose tool dump
// answers 5 MB of text content.
func bigTools(t *testing.T, text string, doc []byte) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "dump", Description: "Dumps a large log"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	mux.HandleFunc("/text", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(text)
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// TestOutputBudgets5MB: 5 MB tool outputs (HTTP text, HTTP JSON, MCP
// text) reach the caller within their budgets, marked, on /route and
// /mcp; GET /results has each whole.
func TestOutputBudgets5MB(t *testing.T) {
	t.Parallel()
	text := fiveMB()
	items := make([]map[string]any, 0, 40000)
	for i := 0; i < 40000; i++ {
		items = append(items, map[string]any{"id": i, "title": fmt.Sprintf("issue %d", i), "body": strings.Repeat("b", 100)})
	}
	doc, _ := json.Marshal(map[string]any{"items": items, "total": len(items), "debug": strings.Repeat("d", 1000)})
	if len(doc) < 5<<20 {
		t.Fatalf("JSON output %d bytes, want 5 MB", len(doc))
	}
	ts := bigTools(t, text, doc)
	reg := fmt.Sprintf(`tools:
  - name: big_text
    endpoint: %[1]s/text
    max_output_bytes: 16384
  - name: big_json
    endpoint: %[1]s/json
    max_output_bytes: 8192
    keep: ["$.items[0:20]", "$.total"]
  - name: big_tokens
    endpoint: %[1]s/text
    max_output_tokens: 2000
mcp_servers:
  - name: bigmcp
    url: %[1]s/mcp
    max_output_bytes: 65536
    tool_budgets:
      dump: {max_output_bytes: 12000}
`, ts.URL)
	p, _ := startRouter(t, reg)
	waitTools(t, p, "bigmcp/dump")

	route := func(name string) map[string]any {
		t.Helper()
		r := do(t, "POST", p.URL()+"/route", map[string]any{"plan_id": "budgets", "tool_call": map[string]any{
			"id": "call_" + name, "type": "function", "function": map[string]any{"name": name, "arguments": "{}"}}})
		if r.Status != 200 || len(r.Body) > 3*65536 {
			t.Fatalf("POST /route %s: %d, %d bytes", name, r.Status, len(r.Body))
		}
		res := r.JSON(t)
		if res["success"] != true || res["truncated"] != true || res["full_output"] != nil {
			t.Fatalf("%s: success %v truncated %v full_output present %v: %.500s", name, res["success"], res["truncated"], res["full_output"] != nil, r.Body)
		}
		return res
	}
	whole := func(id string) any {
		t.Helper()
		r := do(t, "GET", p.URL()+"/results/"+id, nil)
		res := r.JSON(t)
		if r.Status != 200 || res["truncated"] != true {
			t.Fatalf("GET /results/%s: %d truncated %v", id, r.Status, res["truncated"])
		}
		return res["full_output"]
	}
	checkText := func(name string, out any, limit int) {
		t.Helper()
		s, _ := out.(string)
		enc, _ := json.Marshal(s)
		if len(enc) > limit || !strings.HasPrefix(s, "HEAD-OF-OUTPUT\n") || !strings.HasSuffix(s, "TAIL-OF-OUTPUT") ||
			!strings.Contains(s, fmt.Sprintf("of %s bytes here; the whole output: GET /results/tc_", group(len(text)))) {
			i := max(strings.Index(s, "\n[…"), 0)
			t.Errorf("%s: %d bytes encoded (budget %d): %.300s", name, len(enc), limit, s[i:])
		}
	}

	// HTTP text: head and tail around the marker, whole in /results.
	res := route("big_text")
	checkText("big_text", res["output"], 16384)
	if !strings.Contains(fmt.Sprint(res["notes"]), "shaped to") {
		t.Errorf("notes: %v", res["notes"])
	}
	if got := whole(res["tool_call_id"].(string)); got != text {
		t.Errorf("GET /results: full_output is not the whole output (%d bytes)", len(fmt.Sprint(got)))
	}

	// HTTP JSON: the keep paths.
	res = route("big_json")
	out, _ := json.Marshal(res["output"])
	var kept struct {
		Items []map[string]any `json:"items"`
		Total int              `json:"total"`
	}
	if err := json.Unmarshal(out, &kept); err != nil || len(out) > 8192 || kept.Total != 40000 || len(kept.Items) == 0 || kept.Items[0]["title"] != "issue 0" {
		t.Errorf("big_json: %d bytes (%v): %.300s", len(out), err, out)
	}
	full, _ := json.Marshal(whole(res["tool_call_id"].(string)))
	if len(full) != len(doc) {
		t.Errorf("GET /results: full_output %d bytes, want %d", len(full), len(doc))
	}

	// Tokens (o200k_base): about 4 bytes a token here, so at most ~8 kB.
	res = route("big_tokens")
	checkText("big_tokens", res["output"], 2000*8)

	// An MCP backend: its server's tool_budgets entry applies.
	res = route("bigmcp/dump")
	checkText("bigmcp/dump", res["output"], 12000)
	if got := whole(res["tool_call_id"].(string)); got != text {
		t.Error("GET /results: the MCP tool's whole output is missing")
	}

	// On /mcp: the shaped text and _meta toolrouter/truncated.
	cs, err := mcpConnect(t, p.URL(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	mr := mcpCall(t, cs, "big_text", map[string]any{})
	if got := mcpText(mr); len(got) > 16384 || !strings.HasSuffix(got, "TAIL-OF-OUTPUT") || mr.Meta["toolrouter/truncated"] != true {
		t.Errorf("/mcp big_text: %d bytes, _meta %v", len(got), mr.Meta)
	}
	// An MCP backend's result passes through /mcp shaped too.
	mr = mcpCall(t, cs, toolrouter.ExportName(toolrouter.FormatMCP, "bigmcp/dump"), map[string]any{})
	if got := mcpText(mr); len(got) > 12000 || !strings.HasPrefix(got, "HEAD-OF-OUTPUT") || !strings.HasSuffix(got, "TAIL-OF-OUTPUT") ||
		!strings.Contains(got, "toolrouterd cut") || mr.Meta["toolrouter/truncated"] != true {
		t.Errorf("/mcp bigmcp/dump: %d bytes, _meta %v", len(got), mr.Meta)
	}
}

func group(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestRunsBudgetToolOutputsAgainstTheContextWindow: in /runs, a 5 MB tool
// output with no budget of its own reaches the model cut to its share of
// the provider's context_window (docs/output-budgets.md "Budgets against
// the model's context window in /runs"), marked.
func TestRunsBudgetToolOutputsAgainstTheContextWindow(t *testing.T) {
	t.Parallel()
	text := fiveMB()
	ts := bigTools(t, text, []byte(`{}`))
	fake := startFakeLLM(t, "openai")
	reg := fmt.Sprintf(`tools:
  - name: big_text
    endpoint: %s/text
providers:
  - name: fake
    kind: openai
    base_url: %s
    model: fake-model
    context_window: 8192
default_provider: fake
`, ts.URL, fake.baseURL)
	p, _ := startRouter(t, reg)
	fake.script(t,
		map[string]any{"tool_calls": []any{toolCall("big_text", map[string]any{})}, "usage": map[string]any{"input_tokens": 1000, "output_tokens": 24}},
		map[string]any{"text": "It is a long log."})
	run := decodeRun(t, do(t, "POST", p.URL()+"/runs", map[string]any{"prompt": "Read the log"}))
	if run.Status != "completed" || len(run.ToolCalls) != 1 || !run.ToolCalls[0].Success {
		t.Fatalf("run %+v", run)
	}
	// The share: min((8192 − 8192/8 − 1024) / 1 call, 8192/4) = 2048 tokens.
	out, _ := run.ToolCalls[0].Output.(string)
	n, err := shape.New().Tokens(out)
	if err != nil || n > 2048 || n < 1000 || !strings.HasPrefix(out, "HEAD-OF-OUTPUT") || !strings.Contains(out, "the whole output: GET /results/tc_") {
		t.Errorf("the tool output recorded: %d tokens (%v), %d bytes", n, err, len(out))
	}
	reqs := fake.requests(t)
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	msgs, _ := reqs[1]["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if content, _ := last["content"].(string); last["role"] != "tool" || len(content) > 16<<10 || !strings.Contains(content, "toolrouterd cut") {
		t.Errorf("the model read a tool message of %d bytes (role %v)", len(content), last["role"])
	}
}
