package registry_test

import (
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
)

func TestGuardrailsParse(t *testing.T) {
	reg, err := registry.Parse("r.yaml", []byte(`guardrails:
  - {name: policy, endpoint: "http://127.0.0.1:9/hook", headers: {Authorization: "Bearer ${HOOK_TOKEN}"}, tools: ["billing/*"], clients: [alice], phase: both, timeout: 2s, on_error: allow, mode: audit}
  - name: secrets
    builtin: redact_secrets
    patterns: [{name: order-id, regex: "ORD-[0-9]+"}]
`), func(string) string { return "t0k" })
	if err != nil {
		t.Fatal(err)
	}
	gs := reg.Guardrails()
	if len(gs) != 2 {
		t.Fatalf("%d guardrails", len(gs))
	}
	p, s := gs[0], gs[1]
	if p.Endpoint != "http://127.0.0.1:9/hook" || p.Headers["Authorization"] != "Bearer t0k" || p.Phase != "both" ||
		p.Timeout.String() != "2s" || p.OnError != "allow" || p.Mode != "audit" || p.Tools[0] != "billing/*" || p.Clients[0] != "alice" {
		t.Errorf("policy %+v", p)
	}
	if s.Builtin != "redact_secrets" || s.Phase != "after" || s.OnError != "deny" || s.Mode != "enforce" || s.Tools[0] != "*" || s.Patterns[0].Name != "order-id" {
		t.Errorf("secrets %+v", s)
	}
}

func TestGuardrailsProblems(t *testing.T) {
	_, err := registry.Parse("r.yaml", []byte(`guardrails:
  - {name: a}
  - {name: a, endpoint: "ftp://x", builtin: redact_secrets}
  - {name: b, builtin: redact_everything, phase: before}
  - {name: c, endpoint: "http://127.0.0.1:9/", mode: loud, timeout: 0s, tools: ["bad name"], patterns: []}
  - {name: d, builtin: redact_secrets, patterns: [{name: x, regex: "(?<"}]}
`), nil)
	want := []string{
		`r.yaml:2: guardrail "a": endpoint: required (a webhook URL), or builtin: redact_secrets`,
		`r.yaml:3: guardrail "a": name: duplicate name (first at line 2)`,
		`r.yaml:3: guardrail "a": builtin: endpoint and builtin exclude each other`,
		`r.yaml:4: guardrail "b": builtin: must be redact_secrets, got "redact_everything"`,
		`r.yaml:4: guardrail "b": phase: builtin redact_secrets looks at outputs: its phase is after`,
		`r.yaml:5: guardrail "c": mode: must be enforce or audit, got "loud"`,
		`r.yaml:5: guardrail "c": timeout: must be greater than 0`,
		`r.yaml:5: guardrail "c": tools[0]: must be a tool name pattern`,
		`r.yaml:5: guardrail "c": patterns: only for builtin: redact_secrets`,
		`r.yaml:6: guardrail "d": patterns[0].regex: not a valid RE2 regular expression`,
	}
	if err == nil {
		t.Fatal("no problems")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("problems lack %q:\n%v", w, err)
		}
	}
}
