package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// normalizeOpenAI reads the nested {"id", "function": {"name", "arguments"}}
// shape of Chat Completions and Ollama, or the flattened {"name",
// "arguments"} of legacy function_call messages and Responses/Realtime
// function_call items. Arguments may be a JSON string or an object.
func normalizeOpenAI(m map[string]any) (toolrouter.Call, error) {
	var c toolrouter.Call
	// Responses items are answered by call_id, not by the item's id.
	c.ProviderCallID, c.HasProviderCallID = callID(m, "call_id", "id")
	if _, ok := m["call_id"]; ok || m["type"] == "function_call" {
		c.Extra = map[string]any{"openai_api": "responses"}
	}
	src := m
	if fn, ok := obj(m, "function"); ok {
		src = fn
	}
	var err error
	if c.ToolName, err = toolName(src, "name"); err != nil {
		return c, err
	}
	c.Arguments, err = decodeArgs(src["arguments"])
	return c, err
}
