package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWithResultTypeAsThroughJSON: a result made by copying onto the
// complete template (issue 37) encodes exactly as the one made through its
// JSON did, for 2026-07-28 and older sessions, whatever the backend's
// result held (its own resultType included); and it allocates once
// (through JSON: 56 allocations, 40 kB, most of them the SDK decoder's
// 32 KiB buffer).
func TestWithResultTypeAsThroughJSON(t *testing.T) {
	complete := completeResult()
	if complete == nil {
		t.Fatal("this SDK makes no complete result from its JSON")
	}
	fromJSON := func(s string) *mcp.CallToolResult {
		t.Helper()
		out := &mcp.CallToolResult{}
		if err := json.Unmarshal([]byte(s), out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	results := map[string]*mcp.CallToolResult{
		"text":                 {Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}, Meta: mcp.Meta{"toolrouter/sequence": int64(7), "toolrouter/plan_id": "p"}},
		"structured":           {Content: []mcp.Content{&mcp.TextContent{Text: `{"a":1}`}}, StructuredContent: json.RawMessage(`{"a":1}`)},
		"error":                {IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "boom"}}},
		"empty":                {},
		"backend's resultType": fromJSON(`{"content":[{"type":"text","text":"x"}],"resultType":"complete","_meta":{"k":"v"}}`),
		"image":                fromJSON(`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"requestState":"s"}`),
	}
	for name, res := range results {
		for _, modern := range []bool{true, false} {
			want, err := json.Marshal(withResultTypeJSON(res, modern))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(withResultType(res, modern, complete))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("%s, modern %v:\n got %s\nwant %s", name, modern, got, want)
			}
		}
	}
	res := results["text"]
	viaJSON := testing.AllocsPerRun(50, func() { withResultTypeJSON(res, true) })
	copied := testing.AllocsPerRun(50, func() { withResultType(res, true, complete) })
	if copied > 2 {
		t.Errorf("withResultType allocates %v times a call (through JSON: %v)", copied, viaJSON)
	}
}
