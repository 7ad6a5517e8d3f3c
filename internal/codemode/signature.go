package codemode

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// identifier matches the names a program may write as tools.name (the
// others it writes as tools["name"]).
var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// Access is how a program names tool name: tools.name or tools["name"].
func Access(name string) string {
	if identifier.MatchString(name) {
		return "tools." + name
	}
	b, _ := json.Marshal(name)
	return "tools[" + string(b) + "]"
}

// Signature is the TypeScript-style signature of the tool name with the
// given input and output JSON schemas (nil: unknown), as search_tools
// gives it in code mode: tools.name(args: {...}): Promise<...>.
func Signature(name string, input, output map[string]any) string {
	var b strings.Builder
	b.WriteString(Access(name))
	b.WriteString("(args")
	if in := tsType(input, 0); in == "{}" || input == nil {
		b.WriteString("?: {}")
	} else {
		b.WriteString(": ")
		b.WriteString(in)
	}
	b.WriteString("): Promise<")
	if output == nil {
		b.WriteString("unknown")
	} else {
		b.WriteString(tsType(output, 0))
	}
	b.WriteString(">")
	return b.String()
}

// maxDepth is how deep tsType writes nested objects (deeper: unknown).
const maxDepth = 4

// tsType is the TypeScript type of a JSON schema, as far as it says.
func tsType(s map[string]any, depth int) string {
	if s == nil || depth > maxDepth {
		return "unknown"
	}
	if c, ok := s["const"]; ok {
		b, _ := json.Marshal(c)
		return string(b)
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		parts := make([]string, 0, len(enum))
		for _, e := range enum {
			b, _ := json.Marshal(e)
			parts = append(parts, string(b))
		}
		return strings.Join(parts, " | ")
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			parts := make([]string, 0, len(alts))
			for _, a := range alts {
				m, _ := a.(map[string]any)
				if t := tsType(m, depth+1); !slices.Contains(parts, t) {
					parts = append(parts, t)
				}
			}
			return strings.Join(parts, " | ")
		}
	}
	switch t := s["type"].(type) {
	case string:
		return typeOf(t, s, depth)
	case []any:
		parts := []string{}
		for _, x := range t {
			if xs, ok := x.(string); ok {
				parts = append(parts, typeOf(xs, s, depth))
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, " | ")
		}
	}
	if _, ok := s["properties"]; ok {
		return typeOf("object", s, depth)
	}
	return "unknown"
}

func typeOf(t string, s map[string]any, depth int) string {
	switch t {
	case "string":
		return "string"
	case "integer", "number":
		return "number"
	case "boolean":
		return "boolean"
	case "null":
		return "null"
	case "array":
		items, _ := s["items"].(map[string]any)
		it := tsType(items, depth+1)
		if strings.Contains(it, " | ") {
			it = "(" + it + ")"
		}
		return it + "[]"
	case "object":
		props, _ := s["properties"].(map[string]any)
		if len(props) == 0 {
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				return "Record<string, " + tsType(ap, depth+1) + ">"
			}
			return "{}"
		}
		required := map[string]bool{}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if rs, ok := r.(string); ok {
					required[rs] = true
				}
			}
		}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var b strings.Builder
		b.WriteString("{ ")
		for i, k := range keys {
			if i > 0 {
				b.WriteString("; ")
			}
			if identifier.MatchString(k) {
				b.WriteString(k)
			} else {
				q, _ := json.Marshal(k)
				b.Write(q)
			}
			if !required[k] {
				b.WriteString("?")
			}
			b.WriteString(": ")
			p, _ := props[k].(map[string]any)
			b.WriteString(tsType(p, depth+1))
		}
		b.WriteString(" }")
		return b.String()
	}
	return "unknown"
}
