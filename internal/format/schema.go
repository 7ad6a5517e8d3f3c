package format

import (
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// CheckMaxDescription validates the max_description_length of a schema
// export: it must be at least 1.
func CheckMaxDescription(n int) error {
	if n < 1 {
		return toolrouter.Invalid("max_description_length", "max_description_length must be >= 1, got %d", n)
	}
	return nil
}

// Definition is the definition of tool t that format f's API accepts
// verbatim in its tools list (for gemini: one functionDeclarations entry).
// The name is the provider-safe alias toolrouter.ExportName(f, t.Name); the
// description is cut to maxDesc characters when maxDesc > 0. t is never
// modified: the schemas in the definition are copies.
func Definition(f toolrouter.Format, t *toolrouter.Tool, maxDesc int) map[string]any {
	if t == nil {
		return nil
	}
	name := toolrouter.ExportName(f, t.Name)
	return dialectOf(f).definition(t, name, truncate(t.Description, maxDesc), inputSchema(t.InputSchema))
}

// inputSchema copies s, defaulting to an empty object schema; a schema with
// no "type" is an object, and an object gets "properties" (OpenAI rejects an
// object schema without them).
func inputSchema(s map[string]any) map[string]any {
	out, _ := deepCopy(s).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	if _, ok := out["type"]; !ok {
		out["type"] = "object"
	}
	if _, ok := out["properties"]; !ok && out["type"] == "object" {
		out["properties"] = map[string]any{}
	}
	return out
}

// truncate cuts s to at most n characters (runes) when n > 0.
func truncate(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// deepCopy copies decoded JSON: maps and slices are copied recursively,
// anything else is shared.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return map[string]any(nil)
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		if x == nil {
			return []any(nil)
		}
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}

func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
