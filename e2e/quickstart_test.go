package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

// TestQuickstartOffline (issue 38 item 1): `make run`'s script
// (scripts/run-example.sh, as make runs it) with the real binaries starts
// toolrouterd, the example tools and the offline model (fakellm -demo) and
// prints the quickstart command; that command, with no key and no
// internet, prints the answer. A second make run with only ADDR changed
// starts too (its tool server and model take free ports) and answers the
// same, in Python and JavaScript.
func TestQuickstartOffline(t *testing.T) {
	// The README shows the command make run prints for its default ports.
	script, err := os.ReadFile("../scripts/run-example.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(readme(t), "\n$ OPENAI_BASE_URL=http://127.0.0.1:9002/v1 python3 examples/quickstart/quickstart.py \"What is 2 + 3?\"\n2 + 3 = 5\n") ||
		!strings.Contains(string(script), `choose LLM_ADDR "$LLM_ADDR" 127.0.0.1:9002`) {
		t.Error("README's offline quickstart command is not the one make run prints for the model's default address, 127.0.0.1:9002")
	}
	bin := t.TempDir()
	for _, name := range []string{"toolrouterd", "exampletools", "fakellm"} {
		if err := os.Symlink(filepath.Join(binDir, name), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing of the reader's: no key, no model, no address but ADDR.
	var env []string
	for _, kv := range cleanEnv() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "OPENAI_") && k != "MODEL" && k != "TOOLS_ADDR" && k != "LLM_ADDR" {
			env = append(env, kv)
		}
	}
	env = slices.Clip(env) // each append below gets its own array
	hint := regexp.MustCompile(`\n  (TOOLROUTER_URL=(\S+) OPENAI_BASE_URL=(\S+)) python3 examples/quickstart/quickstart.py "What is 2 \+ 3\?"\n`)
	run := func(addr string) []string {
		r := &makeRun{addr: addr, done: make(chan struct{})}
		p := &proc{grew: make(chan struct{}), done: make(chan struct{})}
		r.cmd = exec.Command("bash", "scripts/run-example.sh")
		r.cmd.Dir = ".."
		r.cmd.Env = append(env, "ADDR="+addr, "STORE=memory://", "BIN="+bin)
		r.cmd.Stdout, r.cmd.Stderr = p, p
		p.cmd = r.cmd
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.err = r.cmd.Wait(); close(p.done); close(r.done) }()
		t.Cleanup(func() {
			r.stop(t)
			if t.Failed() {
				t.Logf("make run on %s:\n%s", addr, p.Output())
			}
		})
		p.waitOutput(t, "the quickstart command", func(out string) (string, bool) { return "", hint.MatchString(out) })
		m := hint.FindStringSubmatch(p.Output())
		if m[2] != "http://"+addr || !strings.Contains(p.Output(), "http://"+addr+"/healthz") || !strings.Contains(p.Output(), "http://"+addr+"/ui") {
			t.Errorf("make run on %s printed %q, and no /healthz or /ui hint", addr, m[1])
		}
		if r := do(t, "GET", "http://"+addr+"/healthz", nil); r.Status != 200 {
			t.Fatalf("GET /healthz: %d", r.Status)
		}
		return []string{"TOOLROUTER_URL=" + m[2], "OPENAI_BASE_URL=" + m[3]}
	}
	first := run(freeAddr(t))
	second := run(freeAddr(t))
	for _, c := range []struct {
		vars         []string
		interp, file string
	}{
		{first, "python3", "quickstart.py"},
		{second, "python3", "quickstart.py"},
		{second, "node", "quickstart.mjs"},
	} {
		cmd := exec.Command(c.interp, "examples/quickstart/"+c.file, "What is 2 + 3?")
		cmd.Dir = ".."
		cmd.Env = append(env, c.vars...)
		if out, err := cmd.CombinedOutput(); err != nil || string(out) != "2 + 3 = 5\n" {
			t.Errorf("%v %s %s: %v\n%s", c.vars, c.interp, c.file, err, out)
		}
	}
}

// TestQuickstartPrintsErrorBody: both quickstart scripts end on an HTTP
// error with the URL, the status and the answer's body (what toolrouterd
// says is wrong), not a bare status.
func TestQuickstartPrintsErrorBody(t *testing.T) {
	rt, _ := startRouter(t, "tools: []\n", "TOOLROUTER_API_KEYS=qs-key")
	for _, c := range []struct{ file, interp string }{{"quickstart.py", "python3"}, {"quickstart.mjs", "node"}} {
		cmd := exec.Command(c.interp, "../examples/quickstart/"+c.file)
		cmd.Env = append(os.Environ(), "TOOLROUTER_URL="+rt.URL(), "TOOLROUTER_KEY=wrong", "OPENAI_BASE_URL=http://127.0.0.1:1/v1")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), rt.URL()+"/schemas/openai: 401 {") || !strings.Contains(string(out), `"status":401`) {
			t.Errorf("%s %s with a wrong key: %v\n%s", c.interp, c.file, err, out)
		}
	}
}
