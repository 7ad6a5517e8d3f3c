package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// normalizeAnthropic reads a Messages API tool_use block {"type":
// "tool_use", "id", "name", "input"}. The unwrapped Bedrock block, which
// carries "toolUseId" instead of "id", is accepted too.
func normalizeAnthropic(m map[string]any) (toolrouter.Call, error) {
	var c toolrouter.Call
	c.ProviderCallID, c.HasProviderCallID = callID(m, "id", "toolUseId")
	var err error
	if c.ToolName, err = toolName(m, "name"); err != nil {
		return c, err
	}
	c.Arguments, err = decodeArgs(m["input"])
	return c, err
}
