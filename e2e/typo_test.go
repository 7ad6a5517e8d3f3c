package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnknownVariableIsReported (issue 38): a misspelt TOOLROUTER_*
// variable is logged at start with the setting it is probably meant to
// be, and its value (maybe a secret) is not.
func TestUnknownVariableIsReported(t *testing.T) {
	t.Parallel()
	rt, _ := startRouter(t, "tools: []\n", "TOOLROUTER_ADRR=0.0.0.0:9999-not-logged", "TOOLROUTER_API_KYES=sk-not-logged")
	for _, want := range []string{"TOOLROUTER_ADRR: unknown; did you mean TOOLROUTER_ADDR?", "TOOLROUTER_API_KYES: unknown; did you mean TOOLROUTER_API_KEYS?"} {
		rt.waitOutput(t, want, contains(want))
	}
	if out := rt.Output(); strings.Contains(out, "not-logged") {
		t.Errorf("a variable's value is in the log:\n%s", out)
	}
}

// TestMisspeltToolIsSuggested (issue 38): a call of a misspelt tool
// answers "did you mean" the closest tool the client may call, never one
// out of its scope: the answer for a tool out of scope stays the answer
// for a missing one (docs/security.md "Clients").
func TestMisspeltToolIsSuggested(t *testing.T) {
	t.Parallel()
	rt, _ := startRouter(t, `tools:
  - {name: get_weather, endpoint: "http://127.0.0.1:9/weather"}
  - {name: test/echo, endpoint: "http://127.0.0.1:9/echo"}
clients:
  - {name: alice, key_env: TYPO_ALICE_KEY, tools: ["*"]}
  - {name: bob, key_env: TYPO_BOB_KEY, tools: ["test/*"]}
`, "TYPO_ALICE_KEY=alice-key", "TYPO_BOB_KEY=bob-key")
	route := func(key, name string) map[string]any {
		return do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": name, "arguments": "{}"}},
			"Authorization", "Bearer "+key).JSON(t)
	}
	for _, tc := range []struct{ key, name, want string }{
		{"alice-key", "get_wether", "Tool 'get_wether' not found; did you mean 'get_weather'?"},
		{"bob-key", "test/ecoh", "Tool 'test/ecoh' not found; did you mean 'test/echo'?"},
		{"bob-key", "get_wether", "Tool 'get_wether' not found"},   // get_weather is out of bob's scope
		{"bob-key", "get_weather", "Tool 'get_weather' not found"}, // exactly as a missing tool
	} {
		if out := route(tc.key, tc.name); out["error"] != tc.want || out["error_category"] != "not_found" {
			t.Errorf("%s calls %s: %v, want %q", tc.key, tc.name, out, tc.want)
		}
	}
}

// TestCheckPointsAtTheLine (issue 38): each of the newcomer's vague
// registry errors is one message on the line at fault, and a provider's
// unset api_key_env is a warning as a client's key_env is.
func TestCheckPointsAtTheLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	head := "tools:\n  - name: a/b\n    endpoint: http://127.0.0.1:9/b\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"brace", head + "    input_schema: {type: object\n  - name: c/d\n    endpoint: http://127.0.0.1:9/d\n",
			"brace.yaml:4: invalid YAML: did not find expected ',' or '}' (a '{' not closed?)"},
		{"indent", head + "   kind: tool\n  - name: c/d\n    endpoint: http://127.0.0.1:9/d\n",
			"indent.yaml:4: invalid YAML: did not find expected '-' indicator (wrong indentation?)"},
		{"objekt", head + "    input_schema:\n      type: objekt\n", `objekt.yaml:5: tool "a/b": input_schema/type: must be "object"`},
	} {
		path := filepath.Join(dir, tc.name+".yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(binDir+"/toolrouterd", "check", path).CombinedOutput()
		if err == nil || !strings.Contains(string(out), dir+"/"+tc.want+"\n") || !strings.Contains(string(out), ": 1 problem(s)") {
			t.Errorf("check %s: %v\n%s\nwant %s", tc.name, err, out, tc.want)
		}
	}
	path := filepath.Join(dir, "provider.yaml")
	if err := os.WriteFile(path, []byte("providers:\n  - name: main\n    kind: openai\n    model: gpt-4o-mini\n    api_key_env: TYPO_UNSET_OPENAI_KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binDir+"/toolrouterd", "check", path)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TYPO_UNSET_OPENAI_KEY=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if want := "warning: " + path + `:5: provider "main": api_key_env: environment variable TYPO_UNSET_OPENAI_KEY is unset or empty`; err != nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), "ok, 0 tool(s), 1 provider(s)") {
		t.Errorf("check with a provider's key unset: %v\n%s\nwant %s", err, out, want)
	}
	set := exec.Command(binDir+"/toolrouterd", "check", path)
	set.Env = append(cmd.Env, "TYPO_UNSET_OPENAI_KEY=set")
	if out, err := set.CombinedOutput(); err != nil || strings.Contains(string(out), "warning") {
		t.Errorf("check with the provider's key set: %v\n%s", err, out)
	}
}
