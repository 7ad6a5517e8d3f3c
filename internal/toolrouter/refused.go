package toolrouter

import (
	"context"
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

type calledKey struct{}

// WithCalledTools returns ctx carrying how to read the tool names of the
// calls a request holds, for the audit record of its refusal (read only
// then).
func WithCalledTools(ctx context.Context, names func() []string) context.Context {
	return context.WithValue(ctx, calledKey{}, names)
}

// CalledTools is the tool names ctx carries (WithCalledTools); nil when
// none.
func CalledTools(ctx context.Context) []string {
	if f, ok := ctx.Value(calledKey{}).(func() []string); ok && f != nil {
		return f()
	}
	return nil
}
