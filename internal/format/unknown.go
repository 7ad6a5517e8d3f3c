package format

import (
	"encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// unknownArgKeys are the keys an unknown shape's arguments are looked for
// under, in order.
var unknownArgKeys = []string{"arguments", "args", "input", "parameters", "params"}

// normalizeUnknown reads {"name", ...} and takes the arguments from the
// first of unknownArgKeys holding an object, or a string that decodes to an
// object; a string that does not is skipped. None found means {}.
func normalizeUnknown(m map[string]any) (toolrouter.Call, error) {
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
