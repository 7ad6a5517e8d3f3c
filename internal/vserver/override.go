package vserver

import (
	"fmt"
	"maps"
	"slices"

	"github.com/toolrouterd/toolrouterd/internal/inputschema"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// FieldProblem is a problem of an override, by field ("defaults.repo").
type FieldProblem struct{ Field, Why string }

// CheckOverride checks an override against the tool it is for: hidden
// arguments that exist and are not required without a default, defaults
// for arguments that exist and satisfy the tool's input schema.
func CheckOverride(t *toolrouter.Tool, ov toolrouter.Override) []FieldProblem {
	var out []FieldProblem
	props, _ := t.InputSchema["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := t.InputSchema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	for i, h := range ov.Hidden {
		_, hasDefault := ov.Defaults[h]
		switch {
		case props[h] == nil:
			out = append(out, FieldProblem{fmt.Sprintf("hidden[%d]", i), fmt.Sprintf("tool %q has no argument %q", t.Name, h)})
		case required[h] && !hasDefault:
			out = append(out, FieldProblem{fmt.Sprintf("hidden[%d]", i), fmt.Sprintf("argument %q is required by tool %q; hide it only with a default", h, t.Name)})
		}
	}
	if len(ov.Defaults) == 0 {
		return out
	}
	for _, k := range slices.Sorted(maps.Keys(ov.Defaults)) {
		if props[k] == nil {
			out = append(out, FieldProblem{"defaults." + k, fmt.Sprintf("tool %q has no argument %q", t.Name, k)})
		}
	}
	// The defaults on their own must satisfy the schema, its required
	// arguments aside (the caller gives those).
	schema := maps.Clone(t.InputSchema)
	delete(schema, "required")
	validate, problems := inputschema.Compile(schema)
	if len(problems) > 0 {
		return append(out, FieldProblem{"defaults", fmt.Sprintf("tool %q's input schema does not compile: %s", t.Name, problems[0].Why)})
	}
	if err := validate(ov.Defaults); err != nil {
		out = append(out, FieldProblem{"defaults", fmt.Sprintf("do not satisfy the input schema of tool %q: %v", t.Name, err)})
	}
	return out
}
