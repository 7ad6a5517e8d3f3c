package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
	"github.com/toolrouterd/toolrouterd/internal/poll"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

var fakeListening = regexp.MustCompile(`fakellm: \S+ base_url=(\S+)\n`)

// fakeLLM is a fake provider process (cmd/fakellm).
type fakeLLM struct {
	*proc
	provider, baseURL string
}

func startFakeLLM(t *testing.T, provider string, extra ...string) *fakeLLM {
	t.Helper()
	p := start(t, "fakellm", nil, append([]string{"-provider", provider, "-addr", "127.0.0.1:0"}, extra...)...)
	f := &fakeLLM{proc: p, provider: provider}
	f.baseURL = p.waitOutput(t, "base_url line", submatch(fakeListening))
	u, err := url.Parse(f.baseURL)
	if err != nil {
		t.Fatalf("fakellm base_url: %v", err)
	}
	p.addr = u.Host
	t.Cleanup(func() {
		var rej []string
		resp, err := http.Get(p.URL() + "/_fakellm/rejections")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&rej)
			resp.Body.Close()
		}
		if len(rej) > 0 {
			t.Errorf("the fake %s rejected requests toolrouterd sent:\n%s", provider, strings.Join(rej, "\n"))
		}
	})
	return f
}

// script queues the fake's next answers.
func (f *fakeLLM) script(t *testing.T, turns ...map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(turns)
	resp, err := http.Post("http://"+f.addr+"/_fakellm/script", "application/json", strings.NewReader(string(raw)))
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("script fake: %v %v", err, resp)
	}
	resp.Body.Close()
}

// requests returns the bodies the fake received.
func (f *fakeLLM) requests(t *testing.T) []map[string]any {
	t.Helper()
	resp, err := http.Get("http://" + f.addr + "/_fakellm/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []struct {
		Body map[string]any `json:"body"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	bodies := make([]map[string]any, len(out))
	for i, o := range out {
		bodies[i] = o.Body
	}
	return bodies
}

func toolCall(name string, args map[string]any) map[string]any {
	return map[string]any{"name": toolrouter.ExportName(toolrouter.FormatOpenAI, name), "arguments": args}
}

// runsRegistry is the example registry plus a provider pointing at the
// fake; with keyEnv the provider takes its key from that variable (a
// bedrock provider has a region instead: its credentials come from the
// environment, bedrockEnv).
func runsRegistry(t *testing.T, toolsAddr string, f *fakeLLM, keyEnv ...string) string {
	key := ""
	if len(keyEnv) > 0 {
		key = "\n    api_key_env: " + keyEnv[0]
	}
	model := "fake-model"
	switch f.provider {
	case "bedrock":
		key = "\n    region: us-west-2"
	case "gemini":
		model = "gemini-3-flash-preview" // thought signatures
	}
	return exampleRegistry(t, toolsAddr) + fmt.Sprintf(`
providers:
  - name: fake
    kind: %s
    base_url: %s
    model: %s%s
default_provider: fake
`, f.provider, f.baseURL, model, key)
}

// pixelPNG is a 1×1 PNG, base64.
const pixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

// bedrockEnv are AWS credentials for the SDK's default chain that the
// Bedrock fake accepts (access key id: the fake's -api-key).
func bedrockEnv(accessKey string) []string {
	return []string{"AWS_ACCESS_KEY_ID=" + accessKey, "AWS_SECRET_ACCESS_KEY=" + llmtest.BedrockSecretKey,
		"AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true"}
}

type runResult struct {
	RunID             string  `json:"run_id"`
	Status            string  `json:"status"`
	TerminatedReason  *string `json:"terminated_reason"`
	Content           string  `json:"content"`
	Iterations        int     `json:"iterations"`
	TerminatedByLimit bool    `json:"terminated_by_limit"`
	Error             *string `json:"error"`
	Usage             *struct {
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
	ToolCalls []struct {
		ToolCallID    string         `json:"tool_call_id"`
		ToolName      string         `json:"tool_name"`
		Inputs        map[string]any `json:"inputs"`
		Output        any            `json:"output"`
		Success       bool           `json:"success"`
		Error         *string        `json:"error"`
		ErrorCategory *string        `json:"error_category"`
		DurationMS    float64        `json:"duration_ms"`
		Iteration     int            `json:"iteration"`
	} `json:"tool_calls"`
	Context map[string]any `json:"context"`
}

func decodeRun(t *testing.T, r response) runResult {
	t.Helper()
	var run runResult
	if err := json.Unmarshal(r.Body, &run); err != nil {
		t.Fatalf("%v: %s", err, r.Body)
	}
	return run
}

// TestRunsAgainstEachProvider drives the real binary's /runs against a
// fake of each provider kind (openai, anthropic, ollama, openai-responses,
// gemini, bedrock), speaking its exact wire format and refusing what the
// real API refuses: multi-turn loops, parallel calls, errors fed back.
func TestRunsAgainstEachProvider(t *testing.T) {
	t.Parallel()
	for _, provider := range llmtest.Providers {
		provider := string(provider)
		t.Run(provider, func(t *testing.T) {
			tools := startTools(t)
			fake := startFakeLLM(t, provider, "-api-key", "sk-test-123")
			rt, _ := startRouter(t, runsRegistry(t, tools.addr, fake, "FAKE_LLM_KEY"), append(bedrockEnv("sk-test-123"), "FAKE_LLM_KEY=sk-test-123")...)

			t.Run("single call", func(t *testing.T) {
				fake.script(t,
					map[string]any{"tool_calls": []any{toolCall("test/echo", map[string]any{"msg": "hello"})}},
					map[string]any{"text": "Final answer after tool call"})
				resp := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "Use the echo tool"})
				run := decodeRun(t, resp)
				if resp.Status != 200 || run.Status != "completed" || run.Content != "Final answer after tool call" || run.Iterations != 2 {
					t.Fatalf("%d %s", resp.Status, resp.Body)
				}
				if len(run.ToolCalls) != 1 || !run.ToolCalls[0].Success || run.ToolCalls[0].ToolName != "test/echo" ||
					run.ToolCalls[0].Iteration != 1 || run.ToolCalls[0].DurationMS <= 0 || !strings.HasPrefix(run.ToolCalls[0].ToolCallID, "tc_") {
					t.Errorf("records %s", resp.Body)
				}
				if run.Usage == nil || run.Usage.TotalTokens == 0 {
					t.Errorf("no usage: %s", resp.Body)
				}
			})

			t.Run("two parallel calls, a failing and a missing tool", func(t *testing.T) {
				fake.script(t,
					map[string]any{"tool_calls": []any{
						toolCall("math/add", map[string]any{"a": 2, "b": 3}),
						toolCall("test/fail", map[string]any{}),
						toolCall("test/nope", map[string]any{}),
					}},
					map[string]any{"text": "Done after tools"})
				before := len(fake.requests(t))
				resp := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "Use both tools"})
				run := decodeRun(t, resp)
				if run.Status != "completed" || len(run.ToolCalls) != 3 {
					t.Fatalf("%s", resp.Body)
				}
				if !run.ToolCalls[0].Success || run.ToolCalls[0].ToolName != "math/add" {
					t.Errorf("add: %+v", run.ToolCalls[0])
				}
				if run.ToolCalls[1].Success || run.ToolCalls[1].Error == nil || !strings.Contains(*run.ToolCalls[1].Error, "RuntimeError") {
					t.Errorf("fail: %+v", run.ToolCalls[1])
				}
				if run.ToolCalls[2].Success || *run.ToolCalls[2].ErrorCategory != "not_found" {
					t.Errorf("missing: %+v", run.ToolCalls[2])
				}
				// The second model call carried all three results, in call order.
				second := fake.requests(t)[before+1]
				text, _ := json.Marshal(second)
				i5, iBoom, iNope := strings.Index(string(text), `sum`), strings.Index(string(text), "boom"), strings.Index(string(text), "not found")
				if i5 < 0 || iBoom < 0 || iNope < 0 || !(i5 < iBoom && iBoom < iNope) {
					t.Errorf("tool results not fed back in order: %s", text)
				}
			})

			// A tool answering with MCP image content (test/echo echoes it):
			// the new kinds send the image back in their API's own form.
			if want, ok := map[string]string{
				"openai-responses": `{"image_url":"data:image/png;base64,` + pixelPNG + `","type":"input_image"}`,
				"gemini":           `{"inlineData":{"data":"` + pixelPNG + `","mimeType":"image/png"}}`,
				"bedrock":          `{"image":{"format":"png","source":{"bytes":"` + pixelPNG + `"}}}`,
			}[provider]; ok {
				t.Run("image result", func(t *testing.T) {
					fake.script(t,
						map[string]any{"tool_calls": []any{toolCall("test/echo", map[string]any{"content": []any{
							map[string]any{"type": "text", "text": "a pixel"},
							map[string]any{"type": "image", "mimeType": "image/png", "data": pixelPNG}}})}},
						map[string]any{"text": "I see a pixel."})
					before := len(fake.requests(t))
					run := decodeRun(t, do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "Show me"}))
					if run.Status != "completed" || run.Content != "I see a pixel." {
						t.Fatalf("%+v", run)
					}
					text, _ := json.Marshal(fake.requests(t)[before+1])
					if !strings.Contains(string(text), want) {
						t.Errorf("the image did not go back as %s: %s", want, text)
					}
				})
			}

			t.Run("max iterations", func(t *testing.T) {
				var turns []map[string]any
				for i := 0; i < 3; i++ {
					turns = append(turns, map[string]any{"tool_calls": []any{toolCall("test/echo", map[string]any{"i": i})}})
				}
				fake.script(t, turns...)
				resp := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "Keep calling tools", "max_iterations": 3})
				run := decodeRun(t, resp)
				if run.Status != "terminated" || !run.TerminatedByLimit || run.Iterations != 3 || len(run.ToolCalls) != 3 ||
					run.TerminatedReason == nil || *run.TerminatedReason != "max_iterations" {
					t.Errorf("%s", resp.Body)
				}
			})

			t.Run("context threading", func(t *testing.T) {
				fake.script(t,
					map[string]any{"tool_calls": []any{toolCall("test/context", map[string]any{"path": "a.txt"})}},
					map[string]any{"text": "ok"})
				resp := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "Use sandbox", "context": map[string]any{
					"plan_id": "plan-ctx-" + provider, "phase": "execute", "sandbox_root": "/tmp/sandbox",
					"resource_bindings": map[string]any{"db": "main"}}})
				run := decodeRun(t, resp)
				if len(run.ToolCalls) != 1 {
					t.Fatalf("%s", resp.Body)
				}
				out, _ := run.ToolCalls[0].Output.(map[string]any)
				args, _ := out["arguments"].(map[string]any)
				if args["sandbox_root"] != "/tmp/sandbox" || args["path"] != "a.txt" || out["plan_id"] != "plan-ctx-"+provider {
					t.Errorf("the tool received %v", out)
				}
				if rb, _ := args["resource_bindings"].(map[string]any); rb["db"] != "main" {
					t.Errorf("resource bindings %v", args)
				}
				list := do(t, "GET", rt.URL()+"/runs?plan_id=plan-ctx-"+provider, nil)
				if !strings.Contains(string(list.Body), run.RunID) {
					t.Errorf("run not listed: %s", list.Body)
				}
			})

			t.Run("async", func(t *testing.T) {
				fake.script(t, map[string]any{"text": "async answer"})
				resp := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "later"}, "Prefer", "respond-async")
				if resp.Status != 202 {
					t.Fatalf("%d %s", resp.Status, resp.Body)
				}
				loc := resp.Header.Get("Location")
				if !strings.HasPrefix(loc, "/runs/run_") {
					t.Fatalf("Location %q", loc)
				}
				poll.Until(t, 15*time.Second, func() error {
					if run := decodeRun(t, do(t, "GET", rt.URL()+loc, nil)); run.Status != "completed" || run.Content != "async answer" {
						return fmt.Errorf("async run never completed: %+v", run)
					}
					return nil
				})
			})

			t.Run("SSE", func(t *testing.T) {
				fake.script(t,
					map[string]any{"tool_calls": []any{toolCall("test/echo", map[string]any{"msg": "s"})}},
					map[string]any{"text": "streamed"})
				status, events := stream(t, rt.URL()+"/runs", map[string]any{"prompt": "stream it"})
				var names []string
				for _, e := range events {
					names = append(names, e.Event)
				}
				want := "run_started,model_turn,tool_call_started,tool_call_finished,model_turn,run_finished"
				if status != 200 || strings.Join(names, ",") != want {
					t.Fatalf("%d %v", status, names)
				}
				if last := events[len(events)-1].Data; last["status"] != "completed" || last["content"] != "streamed" {
					t.Errorf("final event %v", last)
				}
				if started := events[2].Data; started["tool_name"] == nil || started["arguments"] == nil {
					t.Errorf("tool_call_started lacks name/arguments: %v", started)
				}
			})
		})
	}
}

// TestRunErrors: bad input is 400 naming the field; a provider error ends
// the run as failed with the provider's message; keys stay out of logs.
func TestRunErrors(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	fake := startFakeLLM(t, "openai", "-api-key", "sk-secret-999")
	rt, _ := startRouter(t, runsRegistry(t, tools.addr, fake, "FAKE_LLM_KEY"), "FAKE_LLM_KEY=sk-secret-999")
	for field, body := range map[string]map[string]any{
		"prompt":          {"prompt": ""},
		"max_iterations":  {"prompt": "x", "max_iterations": 0},
		"provider":        {"prompt": "x", "provider": "nope"},
		"tools[0]":        {"prompt": "x", "tools": []any{"test/nope"}},
		"context.plan_id": {"prompt": "x", "context": map[string]any{"plan_id": ""}},
	} {
		resp := do(t, "POST", rt.URL()+"/runs", body)
		if d, _ := resp.JSON(t)["detail"].(string); resp.Status != 400 || !strings.Contains(d, field) {
			t.Errorf("%s: %d %s", field, resp.Status, resp.Body)
		}
	}
	// A plan id the router would refuse (over 256 characters) fails the start, not each tool call.
	long := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "x", "context": map[string]any{"plan_id": strings.Repeat("p", 257)}})
	if d, _ := long.JSON(t)["detail"].(string); long.Status != 400 || !strings.Contains(d, "plan_id") {
		t.Errorf("a 257-character plan id: %d %s", long.Status, long.Body)
	}
	// A provider whose key variable is unset is refused up front.
	noKey, _ := startRouter(t, runsRegistry(t, tools.addr, fake, "UNSET_KEY_VAR"))
	if resp := do(t, "POST", noKey.URL()+"/runs", map[string]any{"prompt": "x"}); resp.Status != 400 || !strings.Contains(string(resp.Body), "UNSET_KEY_VAR") {
		t.Errorf("unset key variable: %d %s", resp.Status, resp.Body)
	}
	if resp := do(t, "GET", rt.URL()+"/runs/run_unknown", nil); resp.Status != 404 {
		t.Errorf("unknown run: %d", resp.Status)
	}
	fake.script(t, map[string]any{"status": 400, "error_message": "Invalid value for 'model'"})
	run := decodeRun(t, do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "x"}))
	if run.Status != "failed" || run.Error == nil || !strings.Contains(*run.Error, "Invalid value for 'model'") {
		t.Errorf("provider error: %+v", run)
	}
	if strings.Contains(rt.Output(), "sk-secret-999") {
		t.Errorf("the provider key appears in the log")
	}
}

// TestRunClientDisconnectCancels: a client that hangs up on a synchronous
// run cancels it; the run is stored as failed with its records.
func TestRunClientDisconnectCancels(t *testing.T) {
	// The tool server is this test's: it says when the call reached it and
	// holds it until the run is cancelled, so the client hangs up while
	// the tool runs, however slow the machine.
	started, released := make(chan struct{}, 1), make(chan struct{})
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-released:
		}
	}))
	defer tool.Close()
	defer close(released)
	fake := startFakeLLM(t, "openai")
	rt, _ := startRouter(t, runsRegistry(t, strings.TrimPrefix(tool.URL, "http://"), fake))
	fake.script(t, map[string]any{"tool_calls": []any{toolCall("test/slow", map[string]any{"ms": 1500})}}, map[string]any{"text": "never"})
	raw, _ := json.Marshal(map[string]any{"prompt": "slow", "context": map[string]any{"plan_id": "plan-hangup"}})
	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	req, _ := http.NewRequestWithContext(ctx, "POST", rt.URL()+"/runs", strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	answered := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("the run answered before the client gave up: %d", resp.StatusCode)
		} else {
			err = nil
		}
		answered <- err
	}()
	select {
	case <-started:
	case err := <-answered:
		t.Fatalf("the tool was never called: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the tool was never called")
	}
	hangUp()
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() error {
		var list struct {
			Runs []runResult `json:"runs"`
		}
		json.Unmarshal(do(t, "GET", rt.URL()+"/runs?plan_id=plan-hangup", nil).Body, &list)
		if len(list.Runs) != 1 || list.Runs[0].Status == "running" {
			return fmt.Errorf("run not finished: %+v", list.Runs)
		}
		if run := list.Runs[0]; run.Status != "failed" || run.Error == nil || !strings.Contains(*run.Error, "cancel") || len(run.ToolCalls) != 1 || run.ToolCalls[0].Success {
			t.Errorf("cancelled run %+v", run)
		}
		return nil
	})
	if reqs := fake.requests(t); len(reqs) != 1 {
		t.Errorf("the model was called %d times after the client left", len(reqs))
	}
}

// TestRunStrictToolGetsActorContext: the actor context's additions do not
// trip a tool whose schema forbids extra properties (OpenAI strict mode
// requires additionalProperties: false); the tool still receives them.
func TestRunStrictToolGetsActorContext(t *testing.T) {
	tools := startTools(t)
	fake := startFakeLLM(t, "openai")
	reg := strings.Replace(runsRegistry(t, tools.addr, fake), "tools:\n", fmt.Sprintf(`tools:
  - name: strict/context
    endpoint: http://%s/context
    input_schema: {type: object, properties: {path: {type: string}}, required: [path], additionalProperties: false}
`, tools.addr), 1)
	rt, _ := startRouter(t, reg)
	fake.script(t, map[string]any{"tool_calls": []any{toolCall("strict/context", map[string]any{"path": "a.txt"})}}, map[string]any{"text": "ok"})
	run := decodeRun(t, do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "p",
		"context": map[string]any{"plan_id": "plan-strict", "sandbox_root": "/tmp/sb", "resource_bindings": map[string]any{"db": "x"}}}))
	if len(run.ToolCalls) != 1 || !run.ToolCalls[0].Success {
		t.Fatalf("strict tool failed: %+v", run.ToolCalls)
	}
	out, _ := run.ToolCalls[0].Output.(map[string]any)
	args, _ := out["arguments"].(map[string]any)
	if args["sandbox_root"] != "/tmp/sb" || args["path"] != "a.txt" || run.ToolCalls[0].Inputs["sandbox_root"] != "/tmp/sb" {
		t.Errorf("tool received %v, record inputs %v", out, run.ToolCalls[0].Inputs)
	}
}

// TestRunsRegistryProviderKinds: `toolrouterd check` takes a provider of
// each kind, and names the field of each mistake in the new ones.
func TestRunsRegistryProviderKinds(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte(`providers:
  - {name: chat, kind: openai, model: gpt-4o-mini}
  - {name: gpt, kind: openai-responses, model: gpt-5-mini, api_key_env: OPENAI_API_KEY}
  - {name: claude, kind: anthropic, model: claude-sonnet-4-5}
  - {name: gemini, kind: gemini, model: gemini-3-flash-preview, api_key_env: GEMINI_API_KEY}
  - {name: bedrock, kind: bedrock, model: anthropic.claude-3-5-haiku-20241022-v1:0, region: us-east-1}
  - {name: local, kind: ollama, model: qwen2.5:7b}
`), 0o600)
	out, err := exec.Command(filepath.Join(binDir, "toolrouterd"), "check", good).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "6 provider(s)") {
		t.Errorf("check refused the six kinds: %v\n%s", err, out)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`providers:
  - {name: b1, kind: bedrock, model: m}
  - {name: b2, kind: bedrock, model: m, region: us-east-1, api_key_env: AWS_KEY}
  - {name: g, kind: gemini, model: m, region: us-east-1}
  - {name: x, kind: vertex, model: m}
`), 0o600)
	out, err = exec.Command(filepath.Join(binDir, "toolrouterd"), "check", bad).CombinedOutput()
	if err == nil {
		t.Fatalf("check passed a bad file:\n%s", out)
	}
	for _, want := range []string{
		"bad.yaml:2: providers[0].region: required for kind bedrock",
		"bad.yaml:3: providers[1].api_key_env: kind bedrock takes AWS credentials from the SDK's default chain",
		"bad.yaml:4: providers[2].region: only kind bedrock takes a region",
		`bad.yaml:5: providers[3].kind: must be openai, openai-responses, anthropic, gemini, bedrock or ollama, got "vertex"`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

// TestRunsApprovalResumeEachNewProvider: with openai-responses, gemini (a
// Gemini 3 model) and bedrock, a run whose turn holds a call needing
// approval pauses, and once approved resumes from its stored state with
// what the API needs of the paused turn (Responses reasoning items, Gemini
// thought signatures) intact: the fakes, which refuse a request without
// them, accept the resumed run's next turn.
func TestRunsApprovalResumeEachNewProvider(t *testing.T) {
	for _, provider := range []string{"openai-responses", "gemini", "bedrock"} {
		t.Run(provider, func(t *testing.T) {
			tool := newBodyTool(t)
			fake := startFakeLLM(t, provider, "-api-key", "sk-test-123")
			entry := fmt.Sprintf("{name: fake, kind: %s, base_url: %q, model: gemini-3-flash-preview, api_key_env: FAKE_LLM_KEY}", provider, fake.baseURL)
			if provider == "bedrock" {
				entry = fmt.Sprintf("{name: fake, kind: bedrock, base_url: %q, model: fake-model, region: us-west-2}", fake.baseURL)
			}
			reg := strings.Replace(approvalRegistry(tool.srv.URL), "clients:", "providers:\n  - "+entry+"\ndefault_provider: fake\nclients:", 1)
			rt, _ := startRouter(t, reg, append(bedrockEnv("sk-test-123"), "FAKE_LLM_KEY=sk-test-123")...)

			fake.script(t,
				map[string]any{"tool_calls": []any{
					toolCall("billing/refund", map[string]any{"amount": 5, "to": "acct-7"}),
					toolCall("kb/search", map[string]any{"q": "policy"}),
				}},
				map[string]any{"text": "Refunded 5 to acct-7."})
			resp := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "refund acct-7"}, asAgent...)
			run := decodeRun(t, resp)
			pending := pendingOf(t, resp)
			if resp.Status != 202 || run.Status != "awaiting_approval" || len(pending) != 1 {
				t.Fatalf("sync POST /runs: %d %s", resp.Status, resp.Body)
			}
			if d := do(t, "POST", rt.URL()+"/approvals/"+pending[0], map[string]any{"decision": "approve"}, asReviewer...); d.Status != 200 {
				t.Fatalf("approve: %d %s", d.Status, d.Body)
			}
			done := waitRun(t, rt, run.RunID, func(r runResult) bool { return r.Status != "awaiting_approval" && r.Status != "running" }, asAgent...)
			if done.Status != "completed" || done.Content != "Refunded 5 to acct-7." || len(done.ToolCalls) != 2 || !done.ToolCalls[0].Success {
				t.Fatalf("resumed run: %+v", done)
			}
			reqs := fake.requests(t)
			if len(reqs) != 2 {
				t.Fatalf("model calls: want 2, got %d", len(reqs))
			}
			text, _ := json.Marshal(reqs[1])
			if !strings.Contains(string(text), "acct-7") || !strings.Contains(string(text), "policy") {
				t.Errorf("the resumed turn lacks the tools' results: %s", text)
			}
		})
	}
}

// TestRunTurnOfTooManyToolCalls: a model answer asking for more tool calls
// in one turn than a batch holds (1,024) fails the run and runs none of
// them. Before, 20,000 calls of a 4 MB answer took the router to 1 GB of
// memory and 24 s; a 32 MiB answer holds ~150,000.
func TestRunTurnOfTooManyToolCalls(t *testing.T) {
	tools := startTools(t)
	fake := startFakeLLM(t, "openai")
	rt, _ := startRouter(t, runsRegistry(t, tools.addr, fake))
	calls := make([]any, 1025)
	for i := range calls {
		calls[i] = toolCall("test/echo", map[string]any{"msg": "x"})
	}
	fake.script(t, map[string]any{"tool_calls": calls})
	run := decodeRun(t, do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "p"}))
	if run.Status != "failed" || run.Error == nil || !strings.Contains(*run.Error, "1025 tool calls") || !strings.Contains(*run.Error, "at most 1024") || len(run.ToolCalls) != 0 {
		t.Fatalf("run %s, error %v, %d tool calls; want failed naming the limit, none run", run.Status, run.Error, len(run.ToolCalls))
	}
}
