package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// normalizeLangChain reads a LangChain ToolCall {"name", "args", "id",
// "type": "tool_call"}; args must be an object (or null/absent).
func normalizeLangChain(m map[string]any) (toolrouter.Call, error) {
	name, err := toolName(m, "name")
	if err != nil {
		return toolrouter.Call{}, err
	}
	var args map[string]any
	switch a := m["args"].(type) {
	case nil:
		args = map[string]any{}
	case map[string]any:
		args = a
	default:
		return toolrouter.Call{ToolName: name}, invalid("parse error: langchain args must be a dict, got %s", kind(a))
	}
	return toolrouter.Call{ToolName: name, Arguments: args, ProviderCallID: str(m, "id")}, nil
}
