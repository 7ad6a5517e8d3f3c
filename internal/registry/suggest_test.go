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

// TestKeysMeantUnderAnEmptyKey (issue 38, the newcomer's walk): the lines
// meant under a mapping key indented as far as it leave the key empty and
// are unknown keys beside it: one problem, at the first of them, naming
// the key they belong under; a misspelling of a key beside it is still
// that, and a known key between ends the run.
func TestKeysMeantUnderAnEmptyKey(t *testing.T) {
	t.Parallel()
	const head = "tools:\n  - name: get_weather\n    endpoint: http://tools.example/w\n"
	for _, tc := range []struct{ name, src, want string }{
		{"input_schema", head + "    input_schema:\n    type: object\n    properties:\n      city: {type: string}\n",
			`r.yaml:5: tool "get_weather": type: unknown key here (meant under input_schema, line 4, which is empty? indent it and properties further)`},
		{"one key", head + "    input_schema:\n    type: object\n",
			`r.yaml:5: tool "get_weather": type: unknown key here (meant under input_schema, line 4, which is empty? indent it further)`},
		{"prices", "providers:\n  - name: p\n    kind: openai\n    model: m\n    prices:\n    input: 1\n    output: 2\n",
			`r.yaml:6: providers[0].input: unknown key here (meant under prices, line 5, which is empty? indent it and output further)`},
		{"a misspelling beside it", head + "    input_schema:\n    tiemout: 3s\n",
			`r.yaml:5: tool "get_weather": tiemout: unknown key (did you mean timeout?)`},
		{"a known key between", head + "    input_schema:\n    timeout: 3s\n    type: object\n",
			`r.yaml:6: tool "get_weather": type: unknown key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Parse("r.yaml", []byte(tc.src), env())
			if err == nil || err.Error() != tc.want {
				t.Errorf("problems:\n%v\nwant exactly:\n%s", err, tc.want)
			}
		})
	}
}
