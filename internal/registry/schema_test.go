package registry_test

import (
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
)

// TestScalarsWhereStringsAreWanted: a number or bool the schema wants as
// a string counts by its text in the file, and a registry key whose value
// is null is absent, as before the schema; below a free-form value (a
// view's defaults) null stays data.
func TestScalarsWhereStringsAreWanted(t *testing.T) {
	t.Parallel()
	src := `tools:
  - name: 2024
    description:
    endpoint: http://tools.example/t
    input_schema: {type: object, properties: {n: {type: ["null", "string"]}}}
    headers: {X-Version: 2, X-On: true}
providers:
  - {name: p, kind: openai, model: 3.5}
clients:
  - {name: c, jwt_subject: 12345, tools: ["*"]}
virtual_servers:
  - name: v
    tools: ["*"]
    overrides: {"2024": {defaults: {n: null}}}
`
	reg, err := registry.Parse("r.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	tool, ok := reg.Lookup("2024")
	if !ok || tool.Description != "" || tool.Headers["X-Version"] != "2" || tool.Headers["X-On"] != "true" {
		t.Errorf("tool = %+v", tool)
	}
	if p := reg.Providers()[0]; p.Model != "3.5" {
		t.Errorf("model = %q, want 3.5", p.Model)
	}
	if c := reg.Clients()[0]; c.JWTSubject != "12345" {
		t.Errorf("jwt_subject = %q", c.JWTSubject)
	}
	if d, ok := reg.VirtualServers()[0].Overrides[0].Defaults["n"]; !ok || d != nil {
		t.Errorf("defaults = %v, want n: null kept", reg.VirtualServers()[0].Overrides[0].Defaults)
	}
	// A number is no list, though: the schema's types hold otherwise.
	_, err = registry.Parse("r.yaml", []byte("tools:\n  - {name: t, endpoint: http://x/t, idempotent: 1}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `r.yaml:2: tool "t": idempotent: must be true or false`) {
		t.Errorf("idempotent: 1: %v", err)
	}
}

// TestSchemaConditions: the conditions between keys that the schema
// states (if/then, dependentSchemas) are reported at the key they refuse,
// in their own words, and the unknown key names the one it likely meant.
func TestSchemaConditions(t *testing.T) {
	t.Parallel()
	src := `clients:
  - {name: a, key_env: K, key_sha256: "` + strings.Repeat("a", 64) + `"}
guardrails:
  - {name: g, builtin: redact_secrets, on_error: allow}
mcp_servers:
  - {name: m, command: [x], pin: false, pin_new: allow}
tools:
  - {name: t, endpoint: http://x/t, idempotnt: true}
`
	_, err := registry.Parse("r.yaml", []byte(src), func(string) string { return "key" })
	want := strings.Join([]string{
		`r.yaml:2: client "a": key_sha256: give key_env or key_sha256, not both`,
		`r.yaml:4: guardrail "g": on_error: only for a webhook (endpoint)`,
		`r.yaml:6: mcp_servers[0].pin_new: only for a pinned server (pin: true)`,
		`r.yaml:8: tool "t": idempotnt: unknown key (did you mean idempotent?)`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
}
