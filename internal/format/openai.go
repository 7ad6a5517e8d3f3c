package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// normalizeOpenAI reads the nested {"id", "function": {"name", "arguments"}}
// shape of Chat Completions and Ollama, or the flattened {"name",
// "arguments"} of legacy function_call messages and Responses/Realtime
// function_call items. Arguments may be a JSON string or an object.
func normalizeOpenAI(m map[string]any) (toolrouter.Call, error) {
	src := m
	if fn, ok := obj(m, "function"); ok {
		src = fn
	}
	name, err := toolName(src, "name")
	if err != nil {
		return toolrouter.Call{}, err
	}
	args, err := decodeArgs(src["arguments"])
	if err != nil {
		return toolrouter.Call{ToolName: name}, err
	}
	c := toolrouter.Call{ToolName: name, Arguments: args}
	// Responses items are answered by call_id, not by the item's id.
	if c.ProviderCallID = str(m, "call_id"); c.ProviderCallID == "" {
		c.ProviderCallID = str(m, "id")
	}
	if _, ok := m["call_id"]; ok || m["type"] == "function_call" {
		c.Extra = map[string]any{"openai_api": "responses"}
	}
	return c, nil
}
