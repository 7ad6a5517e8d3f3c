package codemode

import "testing"

func TestSignature(t *testing.T) {
	in := map[string]any{"type": "object", "required": []any{"repo"}, "properties": map[string]any{
		"repo":   map[string]any{"type": "string"},
		"state":  map[string]any{"enum": []any{"open", "closed"}},
		"labels": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"limit":  map[string]any{"type": "integer"},
		"x-y":    map[string]any{"type": []any{"string", "null"}},
		"filter": map[string]any{"type": "object", "properties": map[string]any{"since": map[string]any{"type": "string"}}},
	}}
	out := map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "number"}}}}
	for _, tc := range []struct {
		name    string
		in, out map[string]any
		want    string
	}{
		{"list_issues", in, out, `tools.list_issues(args: { filter?: { since?: string }; labels?: string[]; limit?: number; repo: string; state?: "open" | "closed"; "x-y"?: string | null }): Promise<{ id?: number }[]>`},
		{"gh.get-issue", nil, nil, `tools["gh.get-issue"](args?: {}): Promise<unknown>`},
		{"ping", map[string]any{"type": "object"}, nil, `tools.ping(args?: {}): Promise<unknown>`},
	} {
		if got := Signature(tc.name, tc.in, tc.out); got != tc.want {
			t.Errorf("Signature(%s)\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
