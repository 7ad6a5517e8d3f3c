package registry_test

import (
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
)

// TestMisspeltNamesAreSuggested (issue 38): a value that names something
// of a fixed list or of the file (a provider's kind, default_provider, a
// client's credential backend, a virtual server's override) and misses it
// by a typo says the name it is probably meant to be; one far from every
// name says nothing more than before.
func TestMisspeltNamesAreSuggested(t *testing.T) {
	t.Parallel()
	const tools = "tools:\n  - {name: billing/charge, endpoint: \"http://tools.example/c\", auth: {mode: per_client}}\n" +
		"  - {name: billing/refund, endpoint: \"http://tools.example/r\"}\n"
	for _, tc := range []struct{ name, src, want string }{
		{"kind", "providers:\n  - {name: main, kind: opneai, model: m}\n",
			`r.yaml:2: providers[0].kind: must be openai, openai-responses, anthropic, gemini, bedrock or ollama, got "opneai"; did you mean "openai"?`},
		{"kind far from all", "providers:\n  - {name: main, kind: gpt, model: m}\n",
			`r.yaml:2: providers[0].kind: must be openai, openai-responses, anthropic, gemini, bedrock or ollama, got "gpt"` + "\n"},
		{"default_provider", "providers:\n  - {name: main, kind: openai, model: m}\ndefault_provider: mian\n",
			`r.yaml:3: default_provider: no provider named "mian"; did you mean "main"?`},
		{"default_provider far from all", "providers:\n  - {name: main, kind: openai, model: m}\ndefault_provider: other\n",
			`r.yaml:3: default_provider: no provider named "other"` + "\n"},
		{"credential backend", tools + "clients:\n  - {name: c, key_env: CID, credentials: {billing/charg: {token_env: CID}}}\n",
			`r.yaml:5: client "c": credentials.billing/charg: no tool or MCP server named "billing/charg"; did you mean "billing/charge"?`},
		{"override outside the server's tools", tools + "virtual_servers:\n  - name: s\n    tools: [billing/charge]\n    overrides:\n      billing/chrage: {name: pay}\n",
			`r.yaml:8: virtual server "s": overrides.billing/chrage: names a tool outside this server's tools; did you mean "billing/charge"?`},
		{"override of no tool", tools + "virtual_servers:\n  - name: s\n    tools: [\"billing/*\"]\n    overrides:\n      billing/refnud: {name: back}\n",
			`r.yaml:8: virtual server "s": overrides.billing/refnud: names no tool of the registry (nor of an MCP server, by its prefix); did you mean "billing/refund"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Parse("r.yaml", []byte(tc.src), env("CID", "x"))
			if err == nil {
				t.Fatalf("Parse succeeded, want %s", tc.want)
			}
			if got := err.Error() + "\n"; !strings.Contains(got, tc.want) {
				t.Errorf("problems:\n%s\nwant a line %s", got, tc.want)
			}
		})
	}
}

// TestMisspeltRequiredKeyIsOneProblem (issue 38): a required key spelt
// wrong is one problem, the unknown key and the name it is probably meant
// to be, not that besides the required key reported missing; a required
// key that is missing with no near miss is still reported.
func TestMisspeltRequiredKeyIsOneProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, src, want string }{
		{"endpont", "tools:\n  - name: get_weather\n    endpont: http://tools.example/w\n",
			`r.yaml:3: tool "get_weather": endpont: unknown key (did you mean endpoint?)`},
		{"providers' model", "providers:\n  - {name: main, kind: openai, modle: m}\n",
			`r.yaml:2: providers[0].modle: unknown key (did you mean model?)`},
		{"missing, no near miss", "tools:\n  - name: get_weather\n    url: http://tools.example/w\n",
			"r.yaml:2: tool \"get_weather\": endpoint: required\n" +
				`r.yaml:3: tool "get_weather": url: unknown key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Parse("r.yaml", []byte(tc.src), env())
			if err == nil || err.Error() != tc.want {
				t.Errorf("problems:\n%v\nwant exactly:\n%s", err, tc.want)
			}
		})
	}
}
