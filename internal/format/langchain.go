package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// normalizeLangChain reads a LangChain ToolCall {"name", "args", "id",
// "type": "tool_call"}; args must be an object (or null/absent).
func normalizeLangChain(m map[string]any) (toolrouter.Call, error) {
	var c toolrouter.Call
	c.ProviderCallID, c.HasProviderCallID = callID(m, "id")
	var err error
	if c.ToolName, err = toolName(m, "name"); err != nil {
		return c, err
	}
	switch a := m["args"].(type) {
	case nil:
		c.Arguments = map[string]any{}
	case map[string]any:
		c.Arguments = a
	default:
		return c, invalid("parse error: langchain args must be a dict, got %s", kind(a))
	}
	return c, nil
}
