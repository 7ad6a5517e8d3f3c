package format

import (
	"encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// mcp is the dialect of MCP's JSON-RPC tools/call.
type mcp struct{}

func (mcp) format() toolrouter.Format { return toolrouter.FormatMCP }
func (mcp) marked() bool              { return true }

// detect: "jsonrpc" with "method" "tools/call".
func (mcp) detect(m map[string]any) bool {
	return has(m, "jsonrpc") && m["method"] == "tools/call"
}

// normalize reads a JSON-RPC tools/call request {"jsonrpc": "2.0", "id",
// "method": "tools/call", "params": {"name", "arguments"}}. The request id
// (any JSON value) travels in Extra["jsonrpc_id"] for the response, and as
// text in ProviderCallID.
func (mcp) normalize(m map[string]any) (toolrouter.Call, error) {
	var c toolrouter.Call
	if id, ok := m["id"]; ok {
		c.Extra = map[string]any{"jsonrpc_id": id}
		c.ProviderCallID, c.HasProviderCallID = idString(id), true
	}
	params, _ := obj(m, "params")
	var err error
	if c.ToolName, err = toolName(params, "name"); err != nil {
		return c, err
	}
	c.Arguments, err = DecodeArgs(params["arguments"])
	return c, err
}

// result: the JSON-RPC response, a CallToolResult with the text, and an
// object output as its structuredContent.
func (mcp) result(call toolrouter.Call, success bool, out []byte, text string) any {
	r := &mcpResult{ID: call.Extra["jsonrpc_id"], JSONRPC: "2.0"}
	r.Result.Content = []any{mcpText{Text: text, Type: "text"}}
	r.Result.IsError = !success
	if success && isObject(out) {
		r.Result.StructuredContent = json.RawMessage(out)
	}
	return r
}

// mediaResult: the content blocks as they came.
func (mcp) mediaResult(call toolrouter.Call, blocks []block) any {
	r := &mcpResult{ID: call.Extra["jsonrpc_id"], JSONRPC: "2.0"}
	for _, b := range blocks {
		r.Result.Content = append(r.Result.Content, b.raw)
	}
	return r
}

// definition: a tools/list entry, with the tool's output schema when it
// is an object's (MCP's outputSchema must be).
func (mcp) definition(t *toolrouter.Tool, name, desc string, schema map[string]any) map[string]any {
	d := map[string]any{"name": name, "description": desc, "inputSchema": schema}
	if t.OutputSchema != nil && t.OutputSchema["type"] == "object" {
		d["outputSchema"] = deepCopy(t.OutputSchema)
	}
	return d
}

type (
	mcpResult struct {
		ID      any    `json:"id"`
		JSONRPC string `json:"jsonrpc"`
		Result  struct {
			Content           []any           `json:"content"`
			IsError           bool            `json:"isError"`
			StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		} `json:"result"`
	}
	mcpText struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
)
