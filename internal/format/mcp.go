package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// normalizeMCP reads a JSON-RPC tools/call request {"jsonrpc": "2.0", "id",
// "method": "tools/call", "params": {"name", "arguments"}}. The request id
// (any JSON value) travels in Extra["jsonrpc_id"] for the response, and as
// text in ProviderCallID.
func normalizeMCP(m map[string]any) (toolrouter.Call, error) {
	params, _ := obj(m, "params")
	name, err := toolName(params, "name")
	if err != nil {
		return toolrouter.Call{}, err
	}
	args, err := decodeArgs(params["arguments"])
	if err != nil {
		return toolrouter.Call{ToolName: name}, err
	}
	c := toolrouter.Call{ToolName: name, Arguments: args}
	if id, ok := m["id"]; ok {
		c.Extra = map[string]any{"jsonrpc_id": id}
		c.ProviderCallID = idString(id)
	}
	return c, nil
}
