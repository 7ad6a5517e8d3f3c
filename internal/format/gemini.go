package format

import "github.com/toolrouterd/toolrouterd/internal/toolrouter"

// normalizeGemini reads a Gemini part {"functionCall": {"name", "args",
// "id"?}, "thoughtSignature"?}, or a bare FunctionCall object when forced.
// The part's thoughtSignature travels in Extra["thoughtSignature"]: Gemini
// wants it back on the functionCall part of the history.
func normalizeGemini(m map[string]any) (toolrouter.Call, error) {
	fc, ok := obj(m, "functionCall")
	if !ok {
		fc = m
	}
	name, err := toolName(fc, "name")
	if err != nil {
		return toolrouter.Call{}, err
	}
	args, err := decodeArgs(fc["args"])
	if err != nil {
		return toolrouter.Call{ToolName: name}, err
	}
	c := toolrouter.Call{ToolName: name, Arguments: args, ProviderCallID: str(fc, "id")}
	if sig, ok := m["thoughtSignature"]; ok && sig != nil {
		c.Extra = map[string]any{"thoughtSignature": sig}
	}
	return c, nil
}
