package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// normalizeAnthropic reads a Messages API tool_use block {"type":
// "tool_use", "id", "name", "input"}. The unwrapped Bedrock block, which
// carries "toolUseId" instead of "id", is accepted too.
func normalizeAnthropic(m map[string]any) (toolrouter.Call, error) {
	name, err := toolName(m, "name")
	if err != nil {
		return toolrouter.Call{}, err
	}
	args, err := decodeArgs(m["input"])
	if err != nil {
		return toolrouter.Call{ToolName: name}, err
	}
	c := toolrouter.Call{ToolName: name, Arguments: args}
	if c.ProviderCallID = str(m, "id"); c.ProviderCallID == "" {
		c.ProviderCallID = str(m, "toolUseId")
	}
	return c, nil
}
