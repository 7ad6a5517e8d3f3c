package toolrouter

import (
	"database/sql/driver"
	"fmt"
	"strings"
)

// ToolNames are the distinct tool names of a request refused by a rate
// limit (AuditRecord.Tools). A store keeps them in one text column, each
// name between newlines ("\na\nb\n"), which a LIKE finds (ToolsPattern).
type ToolNames []string

// Value implements driver.Valuer.
func (t ToolNames) Value() (driver.Value, error) {
	if len(t) == 0 {
		return "", nil
	}
	return "\n" + strings.Join(t, "\n") + "\n", nil
}

// Scan implements sql.Scanner.
func (t *ToolNames) Scan(v any) error {
	var s string
	switch v := v.(type) {
	case nil:
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return fmt.Errorf("tool names: cannot scan %T", v)
	}
	*t = nil
	for _, name := range strings.Split(strings.Trim(s, "\n"), "\n") {
		if name != "" {
			*t = append(*t, name)
		}
	}
	return nil
}

// ToolsPattern is the LIKE pattern (escape character \) of the tools
// column holding name.
func ToolsPattern(name string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%\n" + r.Replace(name) + "\n%"
}

// Bounds of the names a refused request's record keeps: a client sends
// what it likes, and a refusal must cost little.
const (
	maxRefusedTools    = 32
	maxRefusedToolName = 256
)

// RefusedTools is the distinct names of names worth keeping: at most 32,
// each of 1 to 256 bytes without control characters (no tool has another
// name).
func RefusedTools(names []string) ToolNames {
	var out ToolNames
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || n == "" || len(n) > maxRefusedToolName || strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			continue
		}
		if len(out) == maxRefusedTools {
			break
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

// Calls is what a rate limiter is told of the tool calls of one request:
// how many, and for the audit record of its refusal only (read only
// then) the entry point they came in by, their tool names as sent and
// the view those resolve in.
type Calls struct {
	N     int
	Entry string
	Names func() []string // nil: none
	View  View            // nil: the registry as it is
}

// EntryPoint is the entry point the calls came in by.
func (c Calls) EntryPoint() string {
	if c.Entry == "" {
		return EntryRoute
	}
	return c.Entry
}

// ToolNames is the tool names of the calls as sent; nil when none.
func (c Calls) ToolNames() []string {
	if c.Names == nil {
		return nil
	}
	return c.Names()
}
