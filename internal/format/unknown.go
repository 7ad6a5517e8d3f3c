package format

import (
	"encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// unknown is the dialect of a call of no known provider's shape, and of
// any format this package does not list. Detect falls back to it; it
// detects nothing itself.
type unknown struct{}

func (unknown) format() toolrouter.Format  { return toolrouter.FormatUnknown }
func (unknown) marked() bool               { return false }
func (unknown) detect(map[string]any) bool { return false }

// unknownArgKeys are the keys an unknown shape's arguments are looked for
// under, in order.
var unknownArgKeys = []string{"arguments", "args", "input", "parameters", "params"}

// normalize reads {"name", ...} and takes the arguments from the first of
// unknownArgKeys holding an object, or a string that decodes to an
// object; a string that does not is skipped. None found means {}.
func (unknown) normalize(m map[string]any) (toolrouter.Call, error) {
	var c toolrouter.Call
	c.ProviderCallID, c.HasProviderCallID = callID(m, "id", "call_id")
	var err error
	if c.ToolName, err = toolName(m, "name"); err != nil {
		return c, err
	}
	for _, k := range unknownArgKeys {
		switch v := m[k].(type) {
		case map[string]any:
			c.Arguments = v
		case string:
			var o map[string]any
			if json.Unmarshal([]byte(v), &o) == nil { // "null" leaves o nil: go on
				c.Arguments = o
			}
		}
		if c.Arguments != nil {
			break
		}
	}
	if c.Arguments == nil {
		c.Arguments = map[string]any{}
	}
	return c, nil
}

// result: toolrouterd's own {tool_call_id, name, success, output, error}.
func (unknown) result(call toolrouter.Call, success bool, out []byte, text string) any {
	var e any
	if !success {
		e = text
	}
	return &unknownResult{Error: e, Name: call.ToolName, Output: jsonValue(out), Success: success, ToolCallID: call.ProviderCallID}
}

// definition: Anthropic's, the plainest of the providers' shapes.
func (unknown) definition(t *toolrouter.Tool, name, desc string, schema map[string]any) map[string]any {
	return anthropic{}.definition(t, name, desc, schema)
}

type unknownResult struct {
	Error      any    `json:"error"`
	Name       string `json:"name"`
	Output     any    `json:"output"`
	Success    bool   `json:"success"`
	ToolCallID string `json:"tool_call_id"`
}
