package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// normalizeMCP reads a JSON-RPC tools/call request {"jsonrpc": "2.0", "id",
// "method": "tools/call", "params": {"name", "arguments"}}. The request id
// (any JSON value) travels in Extra["jsonrpc_id"] for the response, and as
// text in ProviderCallID.
func normalizeMCP(m map[string]any) (toolrouter.Call, error) {
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
	c.Arguments, err = decodeArgs(params["arguments"])
	return c, err
}
