package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewcomerCheckSuggestsNames (issue 38, the newcomer's walk): through
// the binary, `toolrouterd check` says which name a misspelt provider kind
// and default_provider are probably meant to be, reports a misspelt
// required key once, and words a key indented more than the one above it,
// an unclosed quote, and a key left empty by the indentation of the lines
// meant under it.
func TestNewcomerCheckSuggestsNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ name, yaml, want string }{
		{"kind", "providers:\n  - name: main\n    kind: opneai\n    model: gpt-4o-mini\n",
			`kind.yaml:3: providers[0].kind: must be openai, openai-responses, anthropic, gemini, bedrock or ollama, got "opneai"; did you mean "openai"?`},
		{"default", "providers:\n  - {name: main, kind: openai, model: gpt-4o-mini}\ndefault_provider: mian\n",
			`default.yaml:3: default_provider: no provider named "mian"; did you mean "main"?`},
		{"endpont", "tools:\n  - name: get_weather\n    endpont: http://127.0.0.1:9/w\n",
			`endpont.yaml:3: tool "get_weather": endpont: unknown key (did you mean endpoint?)`},
		{"quote", "tools:\n  - name: get_weather\n    endpoint: \"http://127.0.0.1:9/w\n  - name: b\n    endpoint: http://127.0.0.1:9/b\n",
			`quote.yaml:3: invalid YAML: found unexpected end of stream (a quote not closed?)`},
		{"flat", "tools:\n  - name: get_weather\n    endpoint: http://127.0.0.1:9/w\n    input_schema:\n      type: object\n      properties:\n      city: {type: string}\n",
			`flat.yaml:6: tool "get_weather": input_schema/properties: invalid JSON Schema: got null, want object (it is empty: are the lines meant under it indented too little?)`},
		{"beside", "tools:\n  - name: get_weather\n    endpoint: http://127.0.0.1:9/w\n    input_schema:\n    type: object\n    properties:\n      city: {type: string}\n",
			`beside.yaml:5: tool "get_weather": type: unknown key here (meant under input_schema, line 4, which is empty? indent it and properties further)`},
		{"deeper", "tools:\n  - name: get_weather\n    endpoint: http://127.0.0.1:9/w\n      description: the weather\n",
			`deeper.yaml:4: invalid YAML: mapping values are not allowed in this context (a key indented more than the one above it, or a value with ": " in it to quote?)`},
	} {
		path := filepath.Join(dir, tc.name+".yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(binDir+"/toolrouterd", "check", path).CombinedOutput()
		if err == nil || string(out) != dir+"/"+tc.want+"\n"+path+": 1 problem(s)\n" {
			t.Errorf("check %s: %v\n%s\nwant the one problem %s", tc.name, err, out, tc.want)
		}
	}
}

// TestNewcomerRunToolSuggested (issue 38): a /runs request naming a
// misspelt tool answers 400 with the tool it is probably meant to be,
// before any model is asked (the provider here answers nothing).
func TestNewcomerRunToolSuggested(t *testing.T) {
	t.Parallel()
	rt, _ := startRouter(t, `tools:
  - {name: get_weather, endpoint: "http://127.0.0.1:9/weather"}
providers:
  - {name: local, kind: openai, model: m, base_url: "http://127.0.0.1:9/v1"}
`)
	for _, tc := range []struct{ body, want string }{
		{`{"prompt": "hi", "tools": ["get_wether"]}`, `tools[0]: unknown tool "get_wether"; did you mean "get_weather"?`},
		{`{"prompt": "hi", "provider": "locl"}`, `provider: unknown provider "locl"; did you mean "local"?`},
	} {
		resp := do(t, "POST", rt.URL()+"/runs", tc.body)
		if got := resp.JSON(t); resp.Status != 400 || got["detail"] != tc.want {
			t.Errorf("POST /runs %s: %d %s, want 400 %q", tc.body, resp.Status, strings.TrimSpace(string(resp.Body)), tc.want)
		}
	}
}

// TestNewcomerTypoReportedWhenStartFails (issue 38): a misspelt variable
// is reported even when the server then refuses to start, on a bad
// setting or a bad registry, which the typo may well be the cause of.
func TestNewcomerTypoReportedWhenStartFails(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("tools:\n  - {name: a, endpoint: http://127.0.0.1:9/a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  []string
		want []string
	}{
		{[]string{"TOOLROUTER_STOER=memory://", "TOOLROUTER_BATCH_CONCURRENCY=abc"},
			[]string{"TOOLROUTER_STOER: unknown; did you mean TOOLROUTER_STORE?", `TOOLROUTER_BATCH_CONCURRENCY: "abc" is not a valid integer`}},
		{[]string{"TOOLROUTER_REGISTY=other.yaml", "TOOLROUTER_REGISTRY=" + bad, "TOOLROUTER_STORE=memory://"},
			[]string{"TOOLROUTER_REGISTY: unknown; did you mean TOOLROUTER_REGISTRY?", "bad.yaml:2: invalid YAML"}},
	} {
		cmd := exec.Command(binDir + "/toolrouterd")
		cmd.Env = cleanEnv(append(tc.env, "TOOLROUTER_ADDR=127.0.0.1:0")...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("%v: started", tc.env)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.env, w, out)
			}
		}
	}
}
