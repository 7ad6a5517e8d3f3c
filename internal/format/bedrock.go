package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// normalizeBedrock reads a Bedrock Converse content block {"toolUse":
// {"toolUseId", "name", "input"}}, or a bare ToolUseBlock when forced.
func normalizeBedrock(m map[string]any) (toolrouter.Call, error) {
	tu, ok := obj(m, "toolUse")
	if !ok {
		tu = m
	}
	var c toolrouter.Call
	c.ProviderCallID, c.HasProviderCallID = callID(tu, "toolUseId")
	var err error
	if c.ToolName, err = toolName(tu, "name"); err != nil {
		return c, err
	}
	c.Arguments, err = decodeArgs(tu["input"])
	return c, err
}
