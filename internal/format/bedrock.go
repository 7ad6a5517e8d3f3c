package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// normalizeBedrock reads a Bedrock Converse content block {"toolUse":
// {"toolUseId", "name", "input"}}, or a bare ToolUseBlock when forced.
func normalizeBedrock(m map[string]any) (toolrouter.Call, error) {
	tu, ok := obj(m, "toolUse")
	if !ok {
		tu = m
	}
	name, err := toolName(tu, "name")
	if err != nil {
		return toolrouter.Call{}, err
	}
	args, err := decodeArgs(tu["input"])
	if err != nil {
		return toolrouter.Call{ToolName: name}, err
	}
	return toolrouter.Call{ToolName: name, Arguments: args, ProviderCallID: str(tu, "toolUseId")}, nil
}
