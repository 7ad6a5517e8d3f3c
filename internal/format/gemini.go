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
	var c toolrouter.Call
	c.ProviderCallID, c.HasProviderCallID = callID(fc, "id")
	if sig, ok := m["thoughtSignature"]; ok && sig != nil {
		c.Extra = map[string]any{"thoughtSignature": sig}
	}
	var err error
	if c.ToolName, err = toolName(fc, "name"); err != nil {
		return c, err
	}
	c.Arguments, err = decodeArgs(fc["args"])
	return c, err
}
