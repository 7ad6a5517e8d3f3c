package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestQuickstart runs the README's quickstart snippets (examples/quickstart)
// with python3 and node against toolrouterd with the example tools (behind
// a key) and the fake OpenAI provider: each fetches the tool definitions,
// posts the model's whole turn of two calls to /route/batch, appends the
// answered messages and prints the model's final answer. The README shows
// the files verbatim.
func TestQuickstart(t *testing.T) {
	r := readme(t)
	for _, c := range []struct{ lang, file, interp string }{
		{"python", "quickstart.py", "python3"},
		{"js", "quickstart.mjs", "node"},
	} {
		b, err := os.ReadFile("../examples/quickstart/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r, "```"+c.lang+"\n"+string(b)+"```\n") {
			t.Errorf("README does not show examples/quickstart/%s verbatim in a ```%s block", c.file, c.lang)
		}
	}

	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr), "TOOLROUTER_API_KEYS=qs-key")
	llm := startFakeLLM(t, "openai", "-api-key", "sk-test", "-model", "gpt-test")
	for _, c := range []struct{ file, interp string }{{"quickstart.py", "python3"}, {"quickstart.mjs", "node"}} {
		t.Run(c.interp, func(t *testing.T) {
			before := len(llm.requests(t))
			llm.script(t,
				map[string]any{"tool_calls": []map[string]any{
					{"name": "math_add_bc986fc6", "arguments": map[string]any{"a": 2, "b": 3}},
					{"name": "test_echo_8a21e386", "arguments": map[string]any{"msg": "hi"}}}},
				map[string]any{"text": "2 + 3 = 5"})
			cmd := exec.Command(c.interp, "../examples/quickstart/"+c.file, "What is 2 + 3?")
			cmd.Env = append(os.Environ(), "TOOLROUTER_URL="+rt.URL(), "TOOLROUTER_KEY=qs-key",
				"OPENAI_BASE_URL="+llm.baseURL, "OPENAI_API_KEY=sk-test", "MODEL=gpt-test")
			out, err := cmd.CombinedOutput()
			if err != nil || string(out) != "2 + 3 = 5\n" {
				t.Fatalf("%s %s: %v\n%s", c.interp, c.file, err, out)
			}
			// The model's second request carries the turn and both answers.
			reqs := llm.requests(t)[before:]
			if len(reqs) != 2 {
				t.Fatalf("the model got %d requests, want 2", len(reqs))
			}
			if tl, _ := reqs[0]["tools"].([]any); len(tl) != 7 {
				t.Errorf("the snippet offered %d tools, want the registry's 7", len(tl))
			}
			msgs, _ := reqs[1]["messages"].([]any)
			if len(msgs) != 4 {
				t.Fatalf("second request's messages: %v, want user, assistant, two tool answers", msgs)
			}
			var contents []string
			for _, m := range msgs[2:] {
				m := m.(map[string]any)
				if m["role"] != "tool" || m["tool_call_id"] == "" {
					t.Errorf("appended message %v is not a tool answer", m)
				}
				contents = append(contents, m["content"].(string))
			}
			var sum map[string]float64
			if json.Unmarshal([]byte(contents[0]), &sum) != nil || sum["sum"] != 5 || contents[1] != `{"msg":"hi"}` {
				t.Errorf("tool answers: %q, want the sum 5 and the echo", contents)
			}
		})
	}
}
