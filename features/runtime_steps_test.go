package features_test

// Steps of runtime.feature (the tool-calling actor runtime) and
// plain tests of /runs. Everything goes through the real HTTP server, wired
// like cmd/toolrouterd/serve.go: the "mock LLM caller" is a wire-faithful
// fake provider server from internal/llm/llmtest, the tools are real HTTP
// endpoints (internal/exampletools plus two handlers of this file), and
// "running the tool loop" is POST /runs.
//
// The fake provider is OpenAI unless TOOLROUTERD_FEATURES_LLM names another
// one (anthropic, ollama, openai-responses, gemini, bedrock): the whole
// feature then runs against that fake. TestRuntimeFeatureEachProvider runs
// runtime.feature against every other fake.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cucumber/godog"

	"github.com/toolrouterd/toolrouterd/internal/agent"
	"github.com/toolrouterd/toolrouterd/internal/exampletools"
	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
	"github.com/toolrouterd/toolrouterd/internal/poll"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/service"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// runtimeProviderEnv picks the fake provider of runtime.feature.
const runtimeProviderEnv = "TOOLROUTERD_FEATURES_LLM"

const (
	fakeProviderName = "fake"
	fakeKeyEnv       = "FEATURES_LLM_API_KEY"
	fakeKey          = "sk-features-3f9a1c2b7d4e5f60"
)

// fakeModels is the model each fake knows (llmtest.WithModel): a request
// for another model is rejected.
var fakeModels = map[llmtest.Provider]string{
	llmtest.OpenAI:          "gpt-4o-mini",
	llmtest.Anthropic:       "claude-3-5-haiku-20241022",
	llmtest.Ollama:          "qwen2.5:7b",
	llmtest.OpenAIResponses: "gpt-5-mini",
	llmtest.Gemini:          "gemini-3-flash-preview", // thought signatures
	llmtest.Bedrock:         "anthropic.claude-3-5-haiku-20241022-v1:0",
}

// chatPaths is where each provider's adapter must send a turn.
var chatPaths = map[llmtest.Provider]string{
	llmtest.OpenAI:          "/v1/chat/completions",
	llmtest.Anthropic:       "/v1/messages",
	llmtest.Ollama:          "/api/chat",
	llmtest.OpenAIResponses: "/v1/responses",
	llmtest.Gemini:          "/v1beta/models/" + fakeModels[llmtest.Gemini] + ":generateContent",
	llmtest.Bedrock:         "/model/" + fakeModels[llmtest.Bedrock] + "/converse",
}

func runtimeProvider() (llmtest.Provider, error) {
	v := os.Getenv(runtimeProviderEnv)
	if v == "" {
		return llmtest.OpenAI, nil
	}
	if p := llmtest.Provider(v); slices.Contains(llmtest.Providers, p) {
		return p, nil
	}
	return "", fmt.Errorf("%s=%q: want one of %v", runtimeProviderEnv, v, llmtest.Providers)
}

// bedrockCredentials are the AWS credentials the Bedrock fake checks
// signatures with; the adapter finds them in the environment (the SDK's
// default chain), which tests that run the Bedrock fake set.
func bedrockCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", fakeKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", llmtest.BedrockSecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
}

// alias is the name the model sees (and calls) for a registry tool.
func alias(name string) string { return toolrouter.ExportName(toolrouter.FormatOpenAI, name) }

// ---------------------------------------------------------------------------
// Tools

// rtTool is one tool of the registry a runtime scenario builds.
type rtTool struct {
	name        string
	description string
	path        string // on the scenario's tool server
	schema      string // input_schema, YAML flow text
}

var (
	echoTool = rtTool{"test/echo", "Echo tool", "/echo",
		"{type: object, properties: {msg: {type: string}}}"}
	adderTool = rtTool{"math/add", "Adds a and b", "/add",
		"{type: object, properties: {a: {type: number}, b: {type: number}}, required: [a, b]}"}
	failingTool = rtTool{"test/fail", "Always fails with RuntimeError: boom", "/fail",
		"{type: object}"}
	captureTool = rtTool{"test/capture", "Records the arguments it receives", "/capture",
		"{type: object, properties: {msg: {type: string}}}"}
	genericErrorTool = rtTool{"test/generic-error", "Crashes with an unexpected KeyError", "/generic-error",
		"{type: object}"}
	slowTool = rtTool{"test/slow", "Waits ms milliseconds, then echoes", "/slow",
		"{type: object, properties: {ms: {type: number}}}"}
)

// keyErrorTraceback is what a tool that raises an unexpected KeyError
// answers: a plain text 500, no JSON error of its own.
const keyErrorTraceback = "Traceback (most recent call last):\n  File \"tool.py\", line 12, in run\n    value = config[\"missing_key\"]\nKeyError: 'missing_key'\n"

// capture is one request the input-capturing tool received.
type capture struct {
	body   map[string]any
	header http.Header
}

// ---------------------------------------------------------------------------
// The service under test

// rtEnv is one toolrouterd with its fake LLM provider and tool server.
type rtEnv struct {
	provider llmtest.Provider
	fake     *llmtest.Server
	fakeOpts []llmtest.Option

	tools         []rtTool
	registryGiven bool

	toolSrv  *httptest.Server
	capMu    sync.Mutex
	captures []capture

	runner *agent.Runner
	svc    *service.Service
	api    *httptest.Server
	client *http.Client
}

func newRTEnv(p llmtest.Provider) *rtEnv { return &rtEnv{provider: p} }

func (e *rtEnv) model() string { return fakeModels[e.provider] }

// ensureFake starts the fake provider (once).
func (e *rtEnv) ensureFake() (*llmtest.Server, error) {
	if e.fake == nil {
		opts := append([]llmtest.Option{llmtest.WithAPIKey(fakeKey), llmtest.WithModel(e.model())}, e.fakeOpts...)
		f := llmtest.NewServer(e.provider, opts...)
		if err := f.Start("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("start the fake %s provider: %w", e.provider, err)
		}
		e.fake = f
	}
	return e.fake, nil
}

func (e *rtEnv) addTool(t rtTool) error {
	if e.api != nil {
		return fmt.Errorf("tool %q added after the service started", t.name)
	}
	e.registryGiven = true
	for _, have := range e.tools {
		if have.name == t.name {
			return nil
		}
	}
	e.tools = append(e.tools, t)
	return nil
}

func (e *rtEnv) hasTool(name string) bool {
	for _, t := range e.tools {
		if t.name == name {
			return true
		}
	}
	return false
}

func (e *rtEnv) handleCapture(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	var body map[string]any
	if err == nil {
		err = json.Unmarshal(b, &body)
	}
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf("capture: body is not a JSON object: %v: %q", err, b)})
		return
	}
	e.capMu.Lock()
	e.captures = append(e.captures, capture{body: body, header: r.Header.Clone()})
	n := len(e.captures)
	e.capMu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"captured": n})
}

func (e *rtEnv) capturedCalls() []capture {
	e.capMu.Lock()
	defer e.capMu.Unlock()
	return append([]capture(nil), e.captures...)
}

// ensureToolServer starts the tool server (once): the example tools plus
// /capture and /generic-error.
func (e *rtEnv) ensureToolServer() string {
	if e.toolSrv == nil {
		mux := http.NewServeMux()
		mux.Handle("/", exampletools.Handler())
		mux.HandleFunc("POST /capture", e.handleCapture)
		mux.HandleFunc("POST /generic-error", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, keyErrorTraceback)
		})
		e.toolSrv = httptest.NewServer(mux)
	}
	return e.toolSrv.URL
}

// registryYAML is the registry file of the scenario: its tools and the fake
// provider.
func (e *rtEnv) registryYAML(toolBase, llmBase string, tools []rtTool) string {
	var b strings.Builder
	if len(tools) == 0 {
		b.WriteString("tools: []\n")
	} else {
		b.WriteString("tools:\n")
	}
	for _, t := range tools {
		fmt.Fprintf(&b, "  - name: %s\n", strconv.Quote(t.name))
		fmt.Fprintf(&b, "    description: %s\n", strconv.Quote(t.description))
		fmt.Fprintf(&b, "    endpoint: %s\n", strconv.Quote(toolBase+t.path))
		b.WriteString("    kind: tool\n")
		fmt.Fprintf(&b, "    input_schema: %s\n", t.schema)
		b.WriteString("    timeout: 10s\n")
	}
	b.WriteString("providers:\n")
	fmt.Fprintf(&b, "  - name: %s\n", fakeProviderName)
	fmt.Fprintf(&b, "    kind: %s\n", e.provider)
	fmt.Fprintf(&b, "    base_url: %s\n", strconv.Quote(llmBase))
	fmt.Fprintf(&b, "    model: %s\n", strconv.Quote(e.model()))
	if e.provider == llmtest.Bedrock {
		b.WriteString("    region: us-east-1\n") // credentials: bedrockCredentials
	} else {
		fmt.Fprintf(&b, "    api_key_env: %s\n", fakeKeyEnv)
	}
	fmt.Fprintf(&b, "default_provider: %s\n", fakeProviderName)
	return b.String()
}

func fakeGetenv(name string) string {
	if name == fakeKeyEnv {
		return fakeKey
	}
	return ""
}

// start starts toolrouterd (once), wired like cmd/toolrouterd (internal/service)
// with a memory store. Without a registry step the registry has the echo tool.
func (e *rtEnv) start() error {
	if e.api != nil {
		return nil
	}
	fake, err := e.ensureFake()
	if err != nil {
		return err
	}
	tools := e.tools
	if !e.registryGiven {
		tools = []rtTool{echoTool}
		e.tools = tools
	}
	data := e.registryYAML(e.ensureToolServer(), fake.URL, tools)
	reg, err := registry.Parse("runtime-registry.yaml", []byte(data), fakeGetenv)
	if err != nil {
		return fmt.Errorf("registry.Parse rejected the scenario's registry:\n%s\n%w", data, err)
	}
	if got := len(reg.Tools()); got != len(tools) {
		return fmt.Errorf("registry has %d tools, want %d:\n%s", got, len(tools), data)
	}
	if p, ok := reg.Provider(fakeProviderName); !ok || p.BaseURL != fake.URL || p.Kind != string(e.provider) {
		return fmt.Errorf("registry provider %q: want kind %s base_url %s, got %+v (found %v)", fakeProviderName, e.provider, fake.URL, p, ok)
	}
	svc, err := startService(reg, fakeGetenv, "features-runtime")
	if err != nil {
		return err
	}
	e.svc, e.runner = svc, svc.Runner
	handler := svc.Handler
	e.api = httptest.NewServer(handler)
	e.client = &http.Client{Timeout: 60 * time.Second}
	r, _, err := e.do(http.MethodGet, "/readyz", nil, nil)
	if err != nil {
		return err
	}
	if r.status != http.StatusOK {
		return fmt.Errorf("GET /readyz: want 200, got %s", r)
	}
	return nil
}

func (e *rtEnv) close() {
	if e.runner != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = e.runner.Wait(ctx)
		cancel()
	}
	if e.api != nil {
		e.api.Close()
	}
	if e.client != nil {
		e.client.CloseIdleConnections()
	}
	if e.toolSrv != nil {
		e.toolSrv.Close()
	}
	if e.svc != nil {
		e.svc.Close()
	}
	if e.fake != nil {
		_ = e.fake.Close()
	}
}

// rejections is why the fake provider rejected requests of the adapters.
func (e *rtEnv) rejections() []string {
	if e.fake == nil {
		return nil
	}
	return e.fake.Rejections()
}

func (e *rtEnv) do(method, path string, body any, header map[string]string) (reply, http.Header, error) {
	if e.api == nil {
		return reply{}, nil, errors.New("the service is not started")
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return reply{}, nil, fmt.Errorf("encode request: %w", err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, e.api.URL+path, rd)
	if err != nil {
		return reply{}, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return reply{}, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	ct := resp.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return reply{status: resp.StatusCode, ctype: strings.TrimSpace(ct), body: b}, resp.Header, nil
}

// runRequest is a POST /runs body.
func runRequest(prompt string, maxIter *int, actor map[string]any) map[string]any {
	req := map[string]any{"prompt": prompt}
	if maxIter != nil {
		req["max_iterations"] = *maxIter
	}
	if actor != nil {
		req["context"] = actor
	}
	return req
}

// postRun POSTs a run synchronously and checks the Run it answers.
func (e *rtEnv) postRun(req map[string]any) (map[string]any, error) {
	if err := e.start(); err != nil {
		return nil, err
	}
	before := len(e.fake.Requests())
	r, _, err := e.do(http.MethodPost, "/runs", req, nil)
	if err != nil {
		return nil, err
	}
	var run map[string]any
	if err := jsonOK(r, &run); err != nil {
		return nil, fmt.Errorf("POST /runs %v: %w", req, err)
	}
	calls := e.fake.Requests()[before:]
	if err := e.checkRun(run, calls); err != nil {
		return nil, fmt.Errorf("POST /runs: %w\nrun: %s", err, r.body)
	}
	return run, nil
}

// problem POSTs a run that must be refused with a 400 problem, and returns
// its detail. The fake must not have been asked anything.
func (e *rtEnv) problem(req any) (string, error) {
	if err := e.start(); err != nil {
		return "", err
	}
	before := len(e.fake.Requests())
	r, _, err := e.do(http.MethodPost, "/runs", req, nil)
	if err != nil {
		return "", err
	}
	detail, err := problemDetail(r, http.StatusBadRequest)
	if err != nil {
		return "", fmt.Errorf("POST /runs %v: %w", req, err)
	}
	if n := len(e.fake.Requests()) - before; n != 0 {
		return "", fmt.Errorf("POST /runs %v was refused, but the model was still called %d times", req, n)
	}
	return detail, nil
}

// listRuns is GET /runs?plan_id=….
func (e *rtEnv) listRuns(planID string) ([]map[string]any, error) {
	if err := e.start(); err != nil {
		return nil, err
	}
	path := "/runs?plan_id=" + url.QueryEscape(planID)
	r, _, err := e.do(http.MethodGet, path, nil, nil)
	if err != nil {
		return nil, err
	}
	var out struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := jsonOK(r, &out); err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if out.Runs == nil {
		return nil, fmt.Errorf("GET %s: want a runs list, got %s", path, r.body)
	}
	for i, run := range out.Runs {
		if got := str(ctxOf(run)["plan_id"]); got != planID {
			return nil, fmt.Errorf("GET %s: runs[%d] has context.plan_id %q", path, i, got)
		}
	}
	return out.Runs, nil
}

// getRun is GET /runs/{id}, decoded and raw.
func (e *rtEnv) getRun(id string) (map[string]any, []byte, error) {
	r, _, err := e.do(http.MethodGet, "/runs/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return nil, nil, err
	}
	var run map[string]any
	if err := jsonOK(r, &run); err != nil {
		return nil, nil, fmt.Errorf("GET /runs/%s: %w", id, err)
	}
	return run, r.body, nil
}

// ---------------------------------------------------------------------------
// Run invariants

func num(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

func ctxOf(run map[string]any) map[string]any {
	c, _ := run["context"].(map[string]any)
	return c
}

func recordsOf(run map[string]any) ([]map[string]any, error) {
	list, ok := run["tool_calls"].([]any)
	if !ok {
		return nil, fmt.Errorf("tool_calls: want a list, got %#v", run["tool_calls"])
	}
	out := make([]map[string]any, len(list))
	for i, v := range list {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("tool_calls[%d]: want an object, got %#v", i, v)
		}
		out[i] = m
	}
	return out, nil
}

// checkRun checks what holds for every finished synchronous run: its
// status and limit fields agree, every record is well formed, the model
// was called once per iteration and was sent every tool result, in call
// order, and GET /runs/{id} answers the same Run.
func (e *rtEnv) checkRun(run map[string]any, calls []llmtest.Recorded) error {
	id := str(run["run_id"])
	if !strings.HasPrefix(id, "run_") {
		return fmt.Errorf("run_id: want run_…, got %#v", run["run_id"])
	}
	iters, ok := num(run["iterations"])
	if !ok || iters < 1 {
		return fmt.Errorf("iterations: want a number >= 1, got %#v", run["iterations"])
	}
	limited, _ := run["terminated_by_limit"].(bool)
	switch st := str(run["status"]); st {
	case "completed":
		if limited || run["terminated_reason"] != nil || run["error"] != nil {
			return fmt.Errorf("a completed run must have terminated_by_limit false, terminated_reason and error null")
		}
	case "terminated":
		if !limited || run["terminated_reason"] == nil {
			return fmt.Errorf("a terminated run must have terminated_by_limit true and a terminated_reason")
		}
	default:
		return fmt.Errorf("status: want completed or terminated, got %q (error %#v)", st, run["error"])
	}
	if str(run["finished_at"]) == "" || str(run["created_at"]) == "" {
		return fmt.Errorf("a finished run must carry created_at and finished_at")
	}
	if got := str(run["provider"]); got != fakeProviderName {
		return fmt.Errorf("provider: want %q, got %q", fakeProviderName, got)
	}
	if got := str(run["model"]); got != e.model() {
		return fmt.Errorf("model: want %q, got %q", e.model(), got)
	}
	if str(ctxOf(run)["plan_id"]) == "" {
		return fmt.Errorf("context.plan_id: want the run's plan, got %#v", run["context"])
	}
	recs, err := recordsOf(run)
	if err != nil {
		return err
	}
	for i, rec := range recs {
		if str(rec["tool_name"]) == "" {
			return fmt.Errorf("tool_calls[%d]: no tool_name", i)
		}
		it, ok := num(rec["iteration"])
		if !ok || it < 1 || it > iters {
			return fmt.Errorf("tool_calls[%d]: iteration %#v outside 1..%v", i, rec["iteration"], iters)
		}
		if i > 0 {
			if prev, _ := num(recs[i-1]["iteration"]); it < prev {
				return fmt.Errorf("tool_calls[%d]: iteration %v after iteration %v", i, it, prev)
			}
		}
		success, ok := rec["success"].(bool)
		if !ok {
			return fmt.Errorf("tool_calls[%d]: no boolean success", i)
		}
		if success && rec["error"] != nil {
			return fmt.Errorf("tool_calls[%d]: successful with error %#v", i, rec["error"])
		}
		if !success && str(rec["error"]) == "" {
			return fmt.Errorf("tool_calls[%d]: failed without an error message", i)
		}
		if _, ok := rec["inputs"].(map[string]any); !ok {
			return fmt.Errorf("tool_calls[%d]: inputs: want an object, got %#v", i, rec["inputs"])
		}
		if d, ok := num(rec["duration_ms"]); !ok || d < 0 {
			return fmt.Errorf("tool_calls[%d]: duration_ms: want a number >= 0, got %#v", i, rec["duration_ms"])
		}
	}
	if len(calls) != int(iters) {
		return fmt.Errorf("the run says %v iterations, but the model was called %d times", iters, len(calls))
	}
	for i, c := range calls {
		if want := chatPaths[e.provider]; c.Path != want {
			return fmt.Errorf("model call %d went to %s, want %s", i+1, c.Path, want)
		}
	}
	if len(calls) > 0 {
		if err := e.checkFedBack(recs, int(iters), calls[len(calls)-1]); err != nil {
			return err
		}
	}
	got, _, err := e.getRun(id)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(got, run) {
		a, _ := json.Marshal(run)
		b, _ := json.Marshal(got)
		return fmt.Errorf("GET /runs/%s differs from the POST answer:\nPOST %s\nGET  %s", id, a, b)
	}
	return nil
}

// toolResultMsg is one tool result the model was sent.
type toolResultMsg struct {
	id      string // OpenAI tool_call_id, Anthropic tool_use_id; "" for Ollama
	name    string // Ollama tool_name
	content string
	isError *bool // Anthropic
}

// toolResultsIn returns the tool results of a recorded model request, in
// order, in the provider's own wire format.
func toolResultsIn(p llmtest.Provider, body map[string]any) []toolResultMsg {
	var out []toolResultMsg
	asJSON := func(v any) string {
		if s, ok := v.(string); ok {
			return s
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	switch p {
	case llmtest.OpenAIResponses:
		items, _ := body["input"].([]any)
		for _, it := range items {
			im, _ := it.(map[string]any)
			if im["type"] == "function_call_output" {
				out = append(out, toolResultMsg{id: str(im["call_id"]), content: textOf(im["output"])})
			}
		}
		return out
	case llmtest.Gemini:
		contents, _ := body["contents"].([]any)
		for _, c := range contents {
			parts, _ := c.(map[string]any)["parts"].([]any)
			for _, part := range parts {
				fr, ok := part.(map[string]any)["functionResponse"].(map[string]any)
				if !ok {
					continue
				}
				resp, _ := fr["response"].(map[string]any)
				r := toolResultMsg{id: str(fr["id"]), name: str(fr["name"]), content: asJSON(resp["output"])}
				if e, failed := resp["error"]; failed {
					r.content = asJSON(e)
				}
				out = append(out, r)
			}
		}
		return out
	case llmtest.Bedrock:
		msgs, _ := body["messages"].([]any)
		for _, m := range msgs {
			blocks, _ := m.(map[string]any)["content"].([]any)
			for _, b := range blocks {
				tr, ok := b.(map[string]any)["toolResult"].(map[string]any)
				if !ok {
					continue
				}
				var content strings.Builder
				for _, c := range asList(tr["content"]) {
					cm, _ := c.(map[string]any)
					if j, ok := cm["json"]; ok {
						content.WriteString(asJSON(j))
					}
					content.WriteString(str(cm["text"]))
				}
				isErr := tr["status"] == "error"
				out = append(out, toolResultMsg{id: str(tr["toolUseId"]), content: content.String(), isError: &isErr})
			}
		}
		return out
	}
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		switch p {
		case llmtest.OpenAI:
			if mm["role"] == "tool" {
				out = append(out, toolResultMsg{id: str(mm["tool_call_id"]), content: textOf(mm["content"])})
			}
		case llmtest.Ollama:
			if mm["role"] == "tool" {
				out = append(out, toolResultMsg{name: str(mm["tool_name"]), content: textOf(mm["content"])})
			}
		case llmtest.Anthropic:
			if mm["role"] != "user" {
				continue
			}
			blocks, _ := mm["content"].([]any)
			for _, b := range blocks {
				bm, _ := b.(map[string]any)
				if bm["type"] != "tool_result" {
					continue
				}
				r := toolResultMsg{id: str(bm["tool_use_id"]), content: textOf(bm["content"])}
				if ie, ok := bm["is_error"].(bool); ok {
					r.isError = &ie
				}
				out = append(out, r)
			}
		}
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// textOf is a message content: a string, or the text of content blocks.
func textOf(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, part := range c {
			pm, _ := part.(map[string]any)
			b.WriteString(str(pm["text"]))
		}
		return b.String()
	}
	return ""
}

// checkFedBack checks that the last model call of a run carried the result
// of every tool call made before its iteration, in call order.
func (e *rtEnv) checkFedBack(recs []map[string]any, iters int, last llmtest.Recorded) error {
	var want []map[string]any
	for _, rec := range recs {
		if it, _ := num(rec["iteration"]); int(it) < iters {
			want = append(want, rec)
		}
	}
	got := toolResultsIn(e.provider, last.Body)
	if len(got) != len(want) {
		return fmt.Errorf("the last model call carried %d tool results, want %d (one per earlier tool call): %s", len(got), len(want), last.Raw)
	}
	for i, rec := range want {
		g := got[i]
		switch e.provider {
		case llmtest.OpenAI, llmtest.Anthropic, llmtest.OpenAIResponses, llmtest.Bedrock:
			if g.id != str(rec["provider_call_id"]) {
				return fmt.Errorf("tool result %d answers call %q, want %q (the call's provider id)", i, g.id, rec["provider_call_id"])
			}
		case llmtest.Ollama, llmtest.Gemini: // by name: the fakes send no call ids
			if want := alias(str(rec["tool_name"])); g.name != want && g.name != str(rec["tool_name"]) {
				return fmt.Errorf("tool result %d has tool_name %q, want %q", i, g.name, want)
			}
		}
		success, _ := rec["success"].(bool)
		if success {
			var out any
			if err := json.Unmarshal([]byte(g.content), &out); err != nil {
				out = g.content // a JSON string output is sent as its text
			}
			if !reflect.DeepEqual(out, rec["output"]) {
				return fmt.Errorf("tool result %d: the model was sent %q, the record's output is %#v", i, g.content, rec["output"])
			}
		} else if !strings.Contains(g.content, str(rec["error"])) {
			return fmt.Errorf("tool result %d: the model was sent %q, want it to carry the error %q", i, g.content, rec["error"])
		}
		if g.isError != nil && *g.isError == success {
			return fmt.Errorf("tool result %d: is_error %v for a call with success %v", i, *g.isError, success)
		}
	}
	return nil
}

// offeredTools is the tool names a model request offered, in the
// provider's wire format.
func offeredTools(p llmtest.Provider, body map[string]any) []string {
	var out []string
	list, _ := body["tools"].([]any)
	switch p {
	case llmtest.Gemini:
		for _, t := range list {
			for _, d := range asList(t.(map[string]any)["functionDeclarations"]) {
				out = append(out, str(d.(map[string]any)["name"]))
			}
		}
		return out
	case llmtest.Bedrock:
		tc, _ := body["toolConfig"].(map[string]any)
		for _, t := range asList(tc["tools"]) {
			spec, _ := t.(map[string]any)["toolSpec"].(map[string]any)
			out = append(out, str(spec["name"]))
		}
		return out
	}
	for _, t := range list {
		tm, _ := t.(map[string]any)
		if p == llmtest.Anthropic || p == llmtest.OpenAIResponses {
			out = append(out, str(tm["name"]))
			continue
		}
		fn, _ := tm["function"].(map[string]any)
		if tm["type"] == "function" {
			out = append(out, str(fn["name"]))
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Scenario state

type rtStateKey struct{}

type rtState struct {
	env        *rtEnv
	envErr     error
	maxIter    *int
	routerPlan string
	actor      map[string]any

	run     map[string]any // the last run of the tool loop
	ctxRun  map[string]any // the run that shows the actor context
	ctxRaw  []byte         // GET /runs/{id} of ctxRun
	record  map[string]any // a ToolCallRecord as JSON
	recBack toolrouter.ToolCallRecord
	bind    map[string]any // the resource bindings set
}

func getRT(ctx context.Context) (*rtState, error) {
	s, _ := ctx.Value(rtStateKey{}).(*rtState)
	if s == nil {
		return nil, errors.New("runtime scenario state missing from context")
	}
	if s.envErr != nil {
		return nil, s.envErr
	}
	return s, nil
}

func (s *rtState) needRun() (map[string]any, error) {
	if s.run == nil {
		return nil, errors.New("the tool loop was not run")
	}
	return s.run, nil
}

func (s *rtState) firstRecord() (map[string]any, error) {
	run, err := s.needRun()
	if err != nil {
		return nil, err
	}
	recs, err := recordsOf(run)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errors.New("the run has no tool call records")
	}
	return recs[0], nil
}

// setActor merges fields into the scenario's actor context.
func (s *rtState) setActor(fields map[string]any) {
	if s.actor == nil {
		s.actor = map[string]any{}
	}
	for k, v := range fields {
		s.actor[k] = v
	}
	s.ctxRun, s.ctxRaw = nil, nil
}

// contextRun runs the loop once with the actor context (unless done) and
// keeps the Run and its GET /runs/{id} body: the actor context's
// properties are read from there.
func (s *rtState) contextRun() (map[string]any, error) {
	if s.ctxRun != nil {
		return s.ctxRun, nil
	}
	if s.actor == nil {
		return nil, errors.New("no actor context in this scenario")
	}
	run, err := s.env.postRun(runRequest("Report the actor context", nil, s.actor))
	if err != nil {
		return nil, err
	}
	got, raw, err := s.env.getRun(str(run["run_id"]))
	if err != nil {
		return nil, err
	}
	s.ctxRun, s.ctxRaw = got, raw
	return got, nil
}

// modelCalls makes the model call tool name with args, then answer text.
func (s *rtState) modelCalls(name string, args map[string]any, text string) error {
	fake, err := s.env.ensureFake()
	if err != nil {
		return err
	}
	fake.Script(
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: alias(name), Arguments: args}}},
		llmtest.Turn{Text: text},
	)
	return nil
}

// ---------------------------------------------------------------------------
// Steps

func initRuntimeSteps(sc *godog.ScenarioContext, provider func() (llmtest.Provider, error)) {
	sc.Before(func(ctx context.Context, _ *godog.Scenario) (context.Context, error) {
		s := &rtState{}
		p, err := provider()
		if err != nil {
			s.envErr = err
		} else {
			s.env = newRTEnv(p)
		}
		return context.WithValue(ctx, rtStateKey{}, s), nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, _ error) (context.Context, error) {
		s, _ := ctx.Value(rtStateKey{}).(*rtState)
		if s == nil || s.env == nil {
			return ctx, nil
		}
		rej := s.env.rejections()
		s.env.close()
		if len(rej) > 0 {
			return ctx, fmt.Errorf("the fake %s provider rejected %d requests of the adapter:\n  %s", s.env.provider, len(rej), strings.Join(rej, "\n  "))
		}
		return ctx, nil
	})
	step := func(f func(s *rtState) error) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			s, err := getRT(ctx)
			if err != nil {
				return err
			}
			return f(s)
		}
	}
	stepS := func(f func(s *rtState, arg string) error) func(ctx context.Context, arg string) error {
		return func(ctx context.Context, arg string) error {
			s, err := getRT(ctx)
			if err != nil {
				return err
			}
			return f(s, arg)
		}
	}

	// ---- registry and tool runner ----
	registryWith := func(t rtTool) func(ctx context.Context) error {
		return step(func(s *rtState) error { return s.env.addTool(t) })
	}
	sc.Step(`^a tool registry with an echo tool$`, registryWith(echoTool))
	sc.Step(`^a tool registry with an adder tool$`, registryWith(adderTool))
	sc.Step(`^a tool registry with a failing tool$`, registryWith(failingTool))
	sc.Step(`^a tool registry with an input-capturing tool$`, registryWith(captureTool))
	sc.Step(`^a tool registry with a tool that raises a generic exception$`, registryWith(genericErrorTool))
	sc.Step(`^an empty actor tool registry$`, step(func(s *rtState) error {
		if len(s.env.tools) > 0 {
			return errors.New("the registry already has tools")
		}
		s.env.registryGiven = true
		return nil
	}))
	sc.Step(`^a tool runner for the actor registry$`, step(func(s *rtState) error {
		base := s.env.ensureToolServer()
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return fmt.Errorf("tool server: %w", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("tool server GET /healthz: %s", resp.Status)
		}
		return nil
	}))

	// ---- the mock LLM caller ----
	sc.Step(`^a mock LLM caller that requests one tool call then responds$`, step(func(s *rtState) error {
		return s.modelCalls(echoTool.name, map[string]any{"msg": "hello"}, "Final answer after tool call")
	}))
	sc.Step(`^a mock LLM caller that requests two sequential tool calls then responds$`, step(func(s *rtState) error {
		fake, err := s.env.ensureFake()
		if err != nil {
			return err
		}
		fake.Script(
			llmtest.Turn{ToolCalls: []llmtest.Call{{Name: alias(echoTool.name), Arguments: map[string]any{"msg": "first"}}}},
			llmtest.Turn{ToolCalls: []llmtest.Call{{Name: alias(adderTool.name), Arguments: map[string]any{"a": 2, "b": 3}}}},
			llmtest.Turn{Text: "Done after two tool calls"},
		)
		return nil
	}))
	sc.Step(`^a mock LLM caller that always requests tool calls$`, step(func(s *rtState) error {
		fake, err := s.env.ensureFake()
		if err != nil {
			return err
		}
		fake.Always(llmtest.Turn{ToolCalls: []llmtest.Call{{Name: alias(echoTool.name), Arguments: map[string]any{"msg": "again"}}}})
		return nil
	}))
	sc.Step(`^a mock LLM caller that requests a nonexistent tool then responds$`, step(func(s *rtState) error {
		if s.env.hasTool("test/nonexistent") {
			return errors.New("test/nonexistent is in the registry")
		}
		return s.modelCalls("test/nonexistent", map[string]any{"msg": "hello"}, "The tool does not exist")
	}))
	sc.Step(`^a mock LLM caller that requests the failing tool then responds$`, step(func(s *rtState) error {
		return s.modelCalls(failingTool.name, map[string]any{}, "The tool failed")
	}))
	sc.Step(`^a mock LLM caller that requests the capturing tool then responds$`, step(func(s *rtState) error {
		return s.modelCalls(captureTool.name, map[string]any{"msg": "capture me"}, "Captured")
	}))
	sc.Step(`^a mock LLM caller that requests the generic-error tool then responds$`, step(func(s *rtState) error {
		return s.modelCalls(genericErrorTool.name, map[string]any{}, "The tool crashed")
	}))
	sc.Step(`^a mock LLM caller that responds immediately without tool calls$`, step(func(s *rtState) error {
		fake, err := s.env.ensureFake()
		if err != nil {
			return err
		}
		fake.Script(llmtest.Turn{Text: "No tools needed"})
		return nil
	}))

	// ---- the runtime ----
	sc.Step(`^a tool-calling runtime with the mock LLM caller$`, step(func(s *rtState) error {
		return s.env.start()
	}))
	sc.Step(`^a tool-calling runtime with max iterations (\d+)$`, func(ctx context.Context, n int) error {
		s, err := getRT(ctx)
		if err != nil {
			return err
		}
		s.maxIter = &n
		return s.env.start()
	})
	sc.Step(`^a tool call router with plan id "([^"]*)"$`, stepS(func(s *rtState, plan string) error {
		s.routerPlan = plan
		return nil
	}))
	sc.Step(`^a tool-calling runtime with the mock LLM caller and router$`, step(func(s *rtState) error {
		if s.routerPlan == "" {
			return errors.New("no tool call router in this scenario")
		}
		return s.env.start()
	}))

	// ---- running the loop ----
	sc.Step(`^I run the tool loop with prompt "([^"]*)"$`, stepS(func(s *rtState, prompt string) error {
		var actor map[string]any
		if s.routerPlan != "" {
			actor = map[string]any{"plan_id": s.routerPlan}
		}
		run, err := s.env.postRun(runRequest(prompt, s.maxIter, actor))
		if err != nil {
			return err
		}
		s.run = run
		if s.routerPlan == "" {
			return nil
		}
		// Through the router: the plan's stable ids and sequences, and the
		// run listed under the plan.
		recs, _ := recordsOf(run)
		for i, rec := range recs {
			want, err := toolrouter.ToolCallID(s.routerPlan, int64(i))
			if err != nil {
				return err
			}
			if got := str(rec["tool_call_id"]); got != want {
				return fmt.Errorf("tool_calls[%d].tool_call_id: want %q (plan %q, sequence %d), got %q", i, want, s.routerPlan, i, got)
			}
		}
		if got := str(ctxOf(run)["plan_id"]); got != s.routerPlan {
			return fmt.Errorf("context.plan_id: want %q, got %q", s.routerPlan, got)
		}
		runs, err := s.env.listRuns(s.routerPlan)
		if err != nil {
			return err
		}
		if len(runs) != 1 || runs[0]["run_id"] != run["run_id"] {
			return fmt.Errorf("GET /runs?plan_id=%s: want the run %v, got %d runs", s.routerPlan, run["run_id"], len(runs))
		}
		return nil
	}))
	sc.Step(`^I run the tool loop with prompt "([^"]*)" and the actor context$`, stepS(func(s *rtState, prompt string) error {
		if s.actor == nil {
			return errors.New("no actor context in this scenario")
		}
		run, err := s.env.postRun(runRequest(prompt, s.maxIter, s.actor))
		if err != nil {
			return err
		}
		s.run = run
		return nil
	}))
	sc.Step(`^I run the tool loop with prompt "([^"]*)" and no context$`, stepS(func(s *rtState, prompt string) error {
		run, err := s.env.postRun(runRequest(prompt, s.maxIter, nil))
		if err != nil {
			return err
		}
		plan := str(ctxOf(run)["plan_id"])
		if plan == "" {
			return fmt.Errorf("a run without a context must get a default one with a plan_id, got context %#v", run["context"])
		}
		runs, err := s.env.listRuns(plan)
		if err != nil {
			return err
		}
		if len(runs) != 1 || runs[0]["run_id"] != run["run_id"] {
			return fmt.Errorf("GET /runs?plan_id=%s (the default context's plan): want the run, got %d runs", plan, len(runs))
		}
		s.run = run
		return nil
	}))

	// ---- run results ----
	sc.Step(`^the run result content should be "([^"]*)"$`, stepS(func(s *rtState, want string) error {
		run, err := s.needRun()
		if err != nil {
			return err
		}
		return wantString("run content", run["content"], want)
	}))
	sc.Step(`^the run result should have (\d+) tool call records$`, func(ctx context.Context, n int) error {
		s, err := getRT(ctx)
		if err != nil {
			return err
		}
		run, err := s.needRun()
		if err != nil {
			return err
		}
		recs, err := recordsOf(run)
		if err != nil {
			return err
		}
		if len(recs) != n {
			return fmt.Errorf("tool call records: want %d, got %d: %v", n, len(recs), recs)
		}
		return nil
	})
	sc.Step(`^the run result iterations should be (\d+)$`, func(ctx context.Context, n int) error {
		s, err := getRT(ctx)
		if err != nil {
			return err
		}
		run, err := s.needRun()
		if err != nil {
			return err
		}
		if got, _ := num(run["iterations"]); int(got) != n {
			return fmt.Errorf("iterations: want %d, got %#v", n, run["iterations"])
		}
		return nil
	})
	limitStep := func(want bool) func(ctx context.Context) error {
		return step(func(s *rtState) error {
			run, err := s.needRun()
			if err != nil {
				return err
			}
			if got, ok := run["terminated_by_limit"].(bool); !ok || got != want {
				return fmt.Errorf("terminated_by_limit: want %v, got %#v", want, run["terminated_by_limit"])
			}
			if want {
				if str(run["status"]) != "terminated" || str(run["terminated_reason"]) != "max_iterations" {
					return fmt.Errorf("want status terminated, terminated_reason max_iterations, got %v, %#v", run["status"], run["terminated_reason"])
				}
			} else if str(run["status"]) != "completed" || run["terminated_reason"] != nil {
				return fmt.Errorf("want status completed, terminated_reason null, got %v, %#v", run["status"], run["terminated_reason"])
			}
			return nil
		})
	}
	sc.Step(`^the run result should be terminated by limit$`, limitStep(true))
	sc.Step(`^the run result should not be terminated by limit$`, limitStep(false))

	// ---- the first tool call record ----
	sc.Step(`^the first tool call record should have success (True|False)$`, stepS(func(s *rtState, want string) error {
		rec, err := s.firstRecord()
		if err != nil {
			return err
		}
		w := want == "True"
		if got, ok := rec["success"].(bool); !ok || got != w {
			return fmt.Errorf("first record success: want %v, got %#v (error %#v)", w, rec["success"], rec["error"])
		}
		if !w {
			if c := str(rec["error_category"]); !categories[c] {
				return fmt.Errorf("a failed record must carry one of the eight error categories, got %#v", rec["error_category"])
			}
		}
		return nil
	}))
	sc.Step(`^the first tool call record should have an error message$`, step(func(s *rtState) error {
		rec, err := s.firstRecord()
		if err != nil {
			return err
		}
		if strings.TrimSpace(str(rec["error"])) == "" {
			return fmt.Errorf("first record error: want a message, got %#v", rec["error"])
		}
		return nil
	}))
	sc.Step(`^the first tool call record error should contain "([^"]*)"$`, stepS(func(s *rtState, want string) error {
		rec, err := s.firstRecord()
		if err != nil {
			return err
		}
		if !strings.Contains(str(rec["error"]), want) {
			return fmt.Errorf("first record error: want it to contain %q, got %#v", want, rec["error"])
		}
		return nil
	}))
	sc.Step(`^the first tool call record tool name should be "([^"]*)"$`, stepS(func(s *rtState, want string) error {
		rec, err := s.firstRecord()
		if err != nil {
			return err
		}
		return wantString("first record tool_name", rec["tool_name"], want)
	}))
	sc.Step(`^the first tool call record inputs should not be empty$`, step(func(s *rtState) error {
		rec, err := s.firstRecord()
		if err != nil {
			return err
		}
		in, _ := rec["inputs"].(map[string]any)
		if len(in) == 0 {
			return fmt.Errorf("first record inputs: want a non-empty object, got %#v", rec["inputs"])
		}
		// the arguments the model sent
		if in["msg"] != "hello" {
			return fmt.Errorf("first record inputs: want msg %q (the model's arguments), got %v", "hello", in)
		}
		return nil
	}))
	sc.Step(`^the first tool call record output should not be empty$`, step(func(s *rtState) error {
		rec, err := s.firstRecord()
		if err != nil {
			return err
		}
		out, _ := rec["output"].(map[string]any)
		if len(out) == 0 {
			return fmt.Errorf("first record output: want a non-empty object, got %#v", rec["output"])
		}
		// the echo tool answers its arguments
		if !reflect.DeepEqual(out, rec["inputs"]) {
			return fmt.Errorf("first record output: the echo tool answers its inputs %v, got %v", rec["inputs"], out)
		}
		return nil
	}))
	sc.Step(`^the first tool call record duration should be greater than 0$`, step(func(s *rtState) error {
		rec, err := s.firstRecord()
		if err != nil {
			return err
		}
		if d, ok := num(rec["duration_ms"]); !ok || d <= 0 {
			return fmt.Errorf("first record duration_ms: want > 0, got %#v", rec["duration_ms"])
		}
		return nil
	}))
	sc.Step(`^the first tool call record iteration should be (\d+)$`, func(ctx context.Context, n int) error {
		s, err := getRT(ctx)
		if err != nil {
			return err
		}
		rec, err := s.firstRecord()
		if err != nil {
			return err
		}
		if got, _ := num(rec["iteration"]); int(got) != n {
			return fmt.Errorf("first record iteration: want %d, got %#v", n, rec["iteration"])
		}
		return nil
	})

	// ---- sandbox root and resource bindings ----
	sc.Step(`^an actor context with sandbox root "([^"]*)"$`, stepS(func(s *rtState, root string) error {
		s.setActor(map[string]any{"plan_id": "plan-sandbox", "sandbox_root": root})
		return nil
	}))
	sc.Step(`^an actor context with resource bindings$`, step(func(s *rtState) error {
		s.bind = map[string]any{
			"repository": map[string]any{"path": "/srv/repos/toolrouterd", "mode": "read-write"},
			"database":   "postgres://db.internal/plans",
		}
		s.setActor(map[string]any{"plan_id": "plan-bindings", "resource_bindings": s.bind})
		return nil
	}))
	capturedArgs := func(s *rtState) (map[string]any, map[string]any, error) {
		caps := s.env.capturedCalls()
		if len(caps) != 1 {
			return nil, nil, fmt.Errorf("the input-capturing tool was called %d times, want 1", len(caps))
		}
		rec, err := s.firstRecord()
		if err != nil {
			return nil, nil, err
		}
		c := caps[0]
		if got, want := c.header.Get(exampletools.HeaderPlanID), str(s.actor["plan_id"]); got != want {
			return nil, nil, fmt.Errorf("the tool got %s %q, want the actor's plan %q", exampletools.HeaderPlanID, got, want)
		}
		if c.body["msg"] != "capture me" {
			return nil, nil, fmt.Errorf("the tool lost the model's arguments: got %v", c.body)
		}
		in, _ := rec["inputs"].(map[string]any)
		if !reflect.DeepEqual(in, c.body) {
			return nil, nil, fmt.Errorf("the record's inputs must be exactly what the tool got:\nrecord %v\ntool   %v", in, c.body)
		}
		return c.body, in, nil
	}
	sc.Step(`^the captured tool inputs should contain sandbox root "([^"]*)"$`, stepS(func(s *rtState, want string) error {
		body, _, err := capturedArgs(s)
		if err != nil {
			return err
		}
		return wantString("captured sandbox_root", body["sandbox_root"], want)
	}))
	sc.Step(`^the captured tool inputs should contain resource bindings$`, step(func(s *rtState) error {
		body, _, err := capturedArgs(s)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(body["resource_bindings"], s.bind) {
			return fmt.Errorf("captured resource_bindings: want %v, got %#v", s.bind, body["resource_bindings"])
		}
		return nil
	}))

	// ---- validation ----
	sc.Step(`^creating a runtime with max iterations 0 should raise ValueError$`, step(func(s *rtState) error {
		for _, n := range []int{0, -1} {
			plan := "plan-invalid-max-" + strconv.Itoa(-n)
			detail, err := s.env.problem(runRequest("Use the echo tool", &n, map[string]any{"plan_id": plan}))
			if err != nil {
				return fmt.Errorf("max_iterations %d: %w", n, err)
			}
			if !strings.Contains(detail, "max_iterations") {
				return fmt.Errorf("max_iterations %d: want a detail naming max_iterations, got %q", n, detail)
			}
			runs, err := s.env.listRuns(plan)
			if err != nil {
				return err
			}
			if len(runs) != 0 {
				return fmt.Errorf("a refused run was stored: %v", runs)
			}
		}
		return nil
	}))
	sc.Step(`^running the tool loop with empty prompt should raise ValueError$`, step(func(s *rtState) error {
		detail, err := s.env.problem(runRequest("", nil, map[string]any{"plan_id": "plan-empty-prompt"}))
		if err != nil {
			return err
		}
		if !strings.Contains(detail, "prompt") {
			return fmt.Errorf("want a detail naming prompt, got %q", detail)
		}
		runs, err := s.env.listRuns("plan-empty-prompt")
		if err != nil {
			return err
		}
		if len(runs) != 0 {
			return fmt.Errorf("a refused run was stored: %v", runs)
		}
		return nil
	}))

	// ---- the actor context ----
	sc.Step(`^an actor context with plan "([^"]*)" phase "([^"]*)"$`, func(ctx context.Context, plan, phase string) error {
		s, err := getRT(ctx)
		if err != nil {
			return err
		}
		s.setActor(map[string]any{"plan_id": plan, "phase": phase})
		return nil
	})
	sc.Step(`^an actor context with plan "([^"]*)"$`, stepS(func(s *rtState, plan string) error {
		s.setActor(map[string]any{"plan_id": plan})
		return nil
	}))
	sc.Step(`^an actor context with plan "([^"]*)" sandbox "([^"]*)"$`, func(ctx context.Context, plan, root string) error {
		s, err := getRT(ctx)
		if err != nil {
			return err
		}
		s.setActor(map[string]any{"plan_id": plan, "sandbox_root": root})
		return nil
	})
	sc.Step(`^an actor context with all optional fields$`, step(func(s *rtState) error {
		s.setActor(map[string]any{
			"plan_id":            "plan-all-fields",
			"phase":              "execute",
			"sandbox_root":       "/tmp/all-fields",
			"resource_bindings":  map[string]any{"database": "primary"},
			"automation_profile": "auto-profile",
			"project_resources":  []any{map[string]any{"repo": "https://example.com/toolrouterd.git"}},
			"metadata":           map[string]any{"version": "1.4.2", "owner": "platform"},
		})
		return nil
	}))
	ctxField := func(field string) func(ctx context.Context, want string) error {
		return func(ctx context.Context, want string) error {
			s, err := getRT(ctx)
			if err != nil {
				return err
			}
			run, err := s.contextRun()
			if err != nil {
				return err
			}
			return wantString("run context."+field, ctxOf(run)[field], want)
		}
	}
	sc.Step(`^the actor context plan id should be "([^"]*)"$`, func(ctx context.Context, want string) error {
		if err := ctxField("plan_id")(ctx, want); err != nil {
			return err
		}
		s, _ := getRT(ctx)
		runs, err := s.env.listRuns(want)
		if err != nil {
			return err
		}
		if len(runs) != 1 || runs[0]["run_id"] != s.ctxRun["run_id"] {
			return fmt.Errorf("GET /runs?plan_id=%s: want the run %v, got %d runs", want, s.ctxRun["run_id"], len(runs))
		}
		return nil
	})
	sc.Step(`^the actor context phase should be "([^"]*)"$`, ctxField("phase"))
	sc.Step(`^the actor context automation profile should be "([^"]*)"$`, ctxField("automation_profile"))
	sc.Step(`^the actor context tool call history should be empty$`, step(func(s *rtState) error {
		run, err := s.contextRun()
		if err != nil {
			return err
		}
		recs, err := recordsOf(run)
		if err != nil {
			return err
		}
		if len(recs) != 0 {
			return fmt.Errorf("tool_calls: want [], got %v", recs)
		}
		return nil
	}))
	sc.Step(`^I record a tool call with name "([^"]*)" and success (True|False)$`, func(ctx context.Context, name, success string) error {
		s, err := getRT(ctx)
		if err != nil {
			return err
		}
		if s.actor == nil {
			return errors.New("no actor context in this scenario")
		}
		path := "/echo"
		if success == "False" {
			path = "/fail"
		}
		if !s.env.hasTool(name) {
			if err := s.env.addTool(rtTool{name, "Recorded tool", path, "{type: object}"}); err != nil {
				return err
			}
		}
		if err := s.modelCalls(name, map[string]any{"msg": "record"}, "Recorded"); err != nil {
			return err
		}
		run, err := s.env.postRun(runRequest("Record a tool call", nil, s.actor))
		if err != nil {
			return err
		}
		recs, _ := recordsOf(run)
		if len(recs) != 1 {
			return fmt.Errorf("the run recorded %d tool calls, want 1", len(recs))
		}
		if err := wantString("record tool_name", recs[0]["tool_name"], name); err != nil {
			return err
		}
		if got, _ := recs[0]["success"].(bool); got != (success == "True") {
			return fmt.Errorf("record success: want %s, got %#v (error %#v)", success, recs[0]["success"], recs[0]["error"])
		}
		s.run = run
		return nil
	})
	sc.Step(`^the actor context tool call history should have (\d+) records$`, func(ctx context.Context, n int) error {
		s, err := getRT(ctx)
		if err != nil {
			return err
		}
		plan := str(s.actor["plan_id"])
		runs, err := s.env.listRuns(plan)
		if err != nil {
			return err
		}
		total := 0
		for _, run := range runs {
			recs, err := recordsOf(run)
			if err != nil {
				return err
			}
			total += len(recs)
		}
		if total != n {
			return fmt.Errorf("GET /runs?plan_id=%s: want %d tool call records over the plan's runs, got %d in %d runs", plan, n, total, len(runs))
		}
		return nil
	})
	sc.Step(`^creating a tool actor context with empty plan id should raise ValueError$`, step(func(s *rtState) error {
		detail, err := s.env.problem(runRequest("Run with an empty plan", nil, map[string]any{"plan_id": ""}))
		if err != nil {
			return err
		}
		if !strings.Contains(detail, "plan_id") {
			return fmt.Errorf("want a detail naming plan_id, got %q", detail)
		}
		return nil
	}))
	summary := func(field string) func(ctx context.Context, want string) error {
		return func(ctx context.Context, want string) error {
			s, err := getRT(ctx)
			if err != nil {
				return err
			}
			run, err := s.contextRun()
			if err != nil {
				return err
			}
			if err := wantString("GET /runs/{id} context."+field, ctxOf(run)[field], want); err != nil {
				return err
			}
			if !strings.Contains(string(s.ctxRaw), strconv.Quote(want)) {
				return fmt.Errorf("GET /runs/{id} body does not contain %q: %s", want, s.ctxRaw)
			}
			return nil
		}
	}
	sc.Step(`^the actor context summary should contain plan id "([^"]*)"$`, summary("plan_id"))
	sc.Step(`^the actor context summary should contain sandbox root "([^"]*)"$`, summary("sandbox_root"))
	sc.Step(`^the actor context project resources should have key "([^"]*)"$`, stepS(func(s *rtState, key string) error {
		run, err := s.contextRun()
		if err != nil {
			return err
		}
		list, ok := ctxOf(run)["project_resources"].([]any)
		if !ok {
			return fmt.Errorf("context.project_resources: want a list, got %#v", ctxOf(run)["project_resources"])
		}
		for _, item := range list {
			if m, ok := item.(map[string]any); ok {
				if _, has := m[key]; has {
					return nil
				}
			}
		}
		return fmt.Errorf("context.project_resources: want a resource with key %q, got %v", key, list)
	}))
	sc.Step(`^the actor context metadata should have key "([^"]*)"$`, stepS(func(s *rtState, key string) error {
		run, err := s.contextRun()
		if err != nil {
			return err
		}
		md, ok := ctxOf(run)["metadata"].(map[string]any)
		if !ok {
			return fmt.Errorf("context.metadata: want an object, got %#v", ctxOf(run)["metadata"])
		}
		if _, has := md[key]; !has {
			return fmt.Errorf("context.metadata: want key %q, got %v", key, md)
		}
		return nil
	}))
	// Each run starts with an empty history: after a run of the plan that
	// made a tool call, the next run of the same context has none.
	sc.Step(`^the actor context clear history should empty the history$`, step(func(s *rtState) error {
		if _, err := s.contextRun(); err != nil {
			return err
		}
		if err := s.modelCalls(echoTool.name, map[string]any{"msg": "before clear"}, "Recorded"); err != nil {
			return err
		}
		full, err := s.env.postRun(runRequest("Record a tool call", nil, s.actor))
		if err != nil {
			return err
		}
		if recs, _ := recordsOf(full); len(recs) != 1 {
			return fmt.Errorf("the recording run has %d tool calls, want 1", len(recs))
		}
		fake, _ := s.env.ensureFake()
		fake.Script(llmtest.Turn{Text: "Nothing to call"})
		fresh, err := s.env.postRun(runRequest("Start over", nil, s.actor))
		if err != nil {
			return err
		}
		if recs, _ := recordsOf(fresh); len(recs) != 0 {
			return fmt.Errorf("a new run of the context must start with an empty history, got %d records", len(recs))
		}
		runs, err := s.env.listRuns(str(s.actor["plan_id"]))
		if err != nil {
			return err
		}
		if len(runs) != 3 || runs[0]["run_id"] != fresh["run_id"] || runs[1]["run_id"] != full["run_id"] {
			return fmt.Errorf("GET /runs?plan_id=…: want the 3 runs newest first, got %d runs", len(runs))
		}
		return nil
	}))
	// Over HTTP a "non-ToolCallRecord" is a context of the wrong type: the
	// request is refused and nothing is recorded.
	sc.Step(`^recording a non-ToolCallRecord should raise TypeError$`, step(func(s *rtState) error {
		plan := str(s.actor["plan_id"])
		if plan == "" {
			return errors.New("no actor context in this scenario")
		}
		bad := []struct {
			req   any
			field string
		}{
			{map[string]any{"prompt": "Record", "context": plan}, "context"},
			{map[string]any{"prompt": "Record", "context": []any{s.actor}}, "context"},
			{map[string]any{"prompt": "Record", "context": map[string]any{"plan_id": plan, "resource_bindings": []any{"db"}}}, "resource_bindings"},
			{map[string]any{"prompt": "Record", "context": map[string]any{"plan_id": plan, "metadata": "v1"}}, "metadata"},
		}
		for _, b := range bad {
			detail, err := s.env.problem(b.req)
			if err != nil {
				return err
			}
			if !strings.Contains(detail, b.field) {
				return fmt.Errorf("POST /runs %v: want a detail naming %s, got %q", b.req, b.field, detail)
			}
		}
		runs, err := s.env.listRuns(plan)
		if err != nil {
			return err
		}
		if len(runs) != 0 {
			return fmt.Errorf("refused requests stored runs: %v", runs)
		}
		return nil
	}))

	// ---- runtime construction ----
	// The Go runtime's registry is the registry file: a document that is
	// not a registry is refused with a typed error naming what is wrong.
	sc.Step(`^creating a runtime with a non-ToolRegistry should raise TypeError$`, func() error {
		for _, doc := range []struct{ text, want string }{
			{"- test/echo\n- math/add\n", "mapping"},
			{"just a string\n", "mapping"},
			{"tools: {name: test/echo}\n", "tools"},
		} {
			_, err := registry.Parse("not-a-registry.yaml", []byte(doc.text), fakeGetenv)
			if err == nil {
				return fmt.Errorf("registry.Parse(%q) returned no error", doc.text)
			}
			if !strings.Contains(err.Error(), doc.want) {
				return fmt.Errorf("registry.Parse(%q): want an error naming %q, got %q", doc.text, doc.want, err)
			}
		}
		return nil
	})
	// The tool runner calls HTTP endpoints: a tool whose endpoint it cannot
	// run is refused when the registry is built.
	sc.Step(`^creating a runtime with a non-ToolRunner should raise TypeError$`, step(func(s *rtState) error {
		if len(s.env.tools) == 0 {
			return errors.New("no tools in this scenario")
		}
		for _, endpoint := range []string{"ftp://127.0.0.1/echo", "echo", "file:///usr/bin/echo"} {
			tools := append([]rtTool(nil), s.env.tools...)
			base := endpoint
			for i := range tools {
				tools[i].path = ""
			}
			data := s.env.registryYAML(base, "http://127.0.0.1:1/v1", tools)
			_, err := registry.Parse("runtime-registry.yaml", []byte(data), fakeGetenv)
			if err == nil {
				return fmt.Errorf("registry.Parse accepted a tool with endpoint %q:\n%s", endpoint, data)
			}
			if !strings.Contains(err.Error(), "endpoint") {
				return fmt.Errorf("endpoint %q: want an error naming endpoint, got %q", endpoint, err)
			}
		}
		return nil
	}))
	sc.Step(`^the runtime max iterations should be (\d+)$`, func(ctx context.Context, n int) error {
		s, err := getRT(ctx)
		if err != nil {
			return err
		}
		if s.maxIter == nil || *s.maxIter != n {
			return fmt.Errorf("the runtime was set up with max iterations %v, want %d", s.maxIter, n)
		}
		// A model that never stops calling tools shows the limit.
		fake, err := s.env.ensureFake()
		if err != nil {
			return err
		}
		fake.Always(llmtest.Turn{ToolCalls: []llmtest.Call{{Name: alias(echoTool.name), Arguments: map[string]any{"msg": "loop"}}}})
		run, err := s.env.postRun(runRequest("Keep calling tools", s.maxIter, nil))
		if err != nil {
			return err
		}
		s.run = run
		if got, _ := num(run["iterations"]); int(got) != n || run["terminated_by_limit"] != true || str(run["terminated_reason"]) != "max_iterations" {
			return fmt.Errorf("want %d iterations terminated by the max_iterations limit, got iterations %v, terminated_by_limit %v, terminated_reason %#v",
				n, run["iterations"], run["terminated_by_limit"], run["terminated_reason"])
		}
		if recs, _ := recordsOf(run); len(recs) != n {
			return fmt.Errorf("want %d tool call records, got %d", n, len(recs))
		}
		return nil
	})
	sc.Step(`^the runtime provider format should not be None$`, step(func(s *rtState) error {
		if s.run == nil {
			run, err := s.env.postRun(runRequest("Which provider?", s.maxIter, nil))
			if err != nil {
				return err
			}
			s.run = run
		}
		if got := str(s.run["provider"]); got != fakeProviderName {
			return fmt.Errorf("run provider: want %q, got %q", fakeProviderName, got)
		}
		reqs := s.env.fake.Requests()
		if len(reqs) == 0 {
			return errors.New("the model was never called")
		}
		for i, r := range reqs {
			offered := offeredTools(s.env.provider, r.Body)
			if len(offered) != 1 || offered[0] != alias(echoTool.name) {
				return fmt.Errorf("model call %d: want the echo tool offered in %s's format as %q, got %v: %s", i+1, s.env.provider, alias(echoTool.name), offered, r.Raw)
			}
		}
		return nil
	}))

	// ---- ToolCallRecord ----
	sc.Step(`^a tool call record with name "([^"]*)" and duration ([0-9.]+)$`, func(ctx context.Context, name string, d float64) error {
		s, err := getRT(ctx)
		if err != nil {
			return err
		}
		rec := toolrouter.ToolCallRecord{ToolCallID: "tc_0123456789abcdef", ToolName: name, Inputs: map[string]any{}, DurationMS: d, Iteration: 1, Success: true}
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		s.record = nil
		if err := json.Unmarshal(b, &s.record); err != nil {
			return err
		}
		s.recBack = toolrouter.ToolCallRecord{}
		return json.Unmarshal(b, &s.recBack)
	})
	sc.Step(`^the tool call record tool name should be "([^"]*)"$`, stepS(func(s *rtState, want string) error {
		if s.record == nil {
			return errors.New("no tool call record in this scenario")
		}
		if s.recBack.ToolName != want {
			return fmt.Errorf("ToolName after a JSON round trip: want %q, got %q", want, s.recBack.ToolName)
		}
		return wantString("record JSON tool_name", s.record["tool_name"], want)
	}))
	sc.Step(`^the tool call record duration should be ([0-9.]+)$`, func(ctx context.Context, want float64) error {
		s, err := getRT(ctx)
		if err != nil {
			return err
		}
		if s.record == nil {
			return errors.New("no tool call record in this scenario")
		}
		if s.recBack.DurationMS != want {
			return fmt.Errorf("DurationMS after a JSON round trip: want %v, got %v", want, s.recBack.DurationMS)
		}
		if got, ok := num(s.record["duration_ms"]); !ok || got != want {
			return fmt.Errorf("record JSON duration_ms: want %v, got %#v", want, s.record["duration_ms"])
		}
		return nil
	})
}

// ---------------------------------------------------------------------------
// Plain tests of /runs

func newTestEnv(t *testing.T, p llmtest.Provider, tools ...rtTool) *rtEnv {
	t.Helper()
	return newTestEnvWith(t, p, nil, tools...)
}

func newTestEnvWith(t *testing.T, p llmtest.Provider, opts []llmtest.Option, tools ...rtTool) *rtEnv {
	t.Helper()
	e := newRTEnv(p)
	e.fakeOpts = opts
	for _, tool := range tools {
		if err := e.addTool(tool); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.ensureFake(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rej := e.rejections()
		e.close()
		for _, r := range rej {
			t.Errorf("the fake %s provider rejected a request of the adapter: %s", p, r)
		}
	})
	return e
}

// TestRuntimeFeatureEachProvider runs every scenario of runtime.feature
// (seed 001: the loop, approvals, scopes, rate limits, traces, limits,
// cancel, events, errors fed back, max iterations) against each fake
// provider but the one TestFeatures uses, through the real HTTP API.
func TestRuntimeFeatureEachProvider(t *testing.T) {
	bedrockCredentials(t)
	def, err := runtimeProvider()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range llmtest.Providers {
		if p == def {
			continue
		}
		t.Run(string(p), func(t *testing.T) {
			suite := godog.TestSuite{
				Name: "runtime-" + string(p),
				ScenarioInitializer: func(sc *godog.ScenarioContext) {
					initializeScenarioWith(sc, func() (llmtest.Provider, error) { return p, nil })
				},
				Options: &godog.Options{Format: "progress", Paths: []string{"runtime.feature"}, TestingT: t, Strict: true, Concurrency: 4},
			}
			if suite.Run() != 0 {
				t.Fatalf("runtime.feature failed against the %s fake", p)
			}
		})
	}
}

// TestRunAgainstEachProvider runs the single tool call loop through the
// HTTP API against each fake provider.
func TestRunAgainstEachProvider(t *testing.T) {
	bedrockCredentials(t)
	for _, p := range llmtest.Providers {
		t.Run(string(p), func(t *testing.T) {
			e := newTestEnv(t, p, echoTool)
			e.fake.Script(
				llmtest.Turn{ToolCalls: []llmtest.Call{{Name: alias(echoTool.name), Arguments: map[string]any{"msg": "hello"}}}},
				llmtest.Turn{Text: "Final answer after tool call"},
			)
			run, err := e.postRun(runRequest("Use the echo tool", nil, map[string]any{"plan_id": "plan-" + string(p)}))
			if err != nil {
				t.Fatal(err)
			}
			if got := str(run["content"]); got != "Final answer after tool call" {
				t.Errorf("content: got %q", got)
			}
			if got, _ := num(run["iterations"]); got != 2 {
				t.Errorf("iterations: want 2, got %v", run["iterations"])
			}
			if run["terminated_by_limit"] != false || run["status"] != "completed" {
				t.Errorf("want a completed run not terminated by limit, got status %v terminated_by_limit %v", run["status"], run["terminated_by_limit"])
			}
			recs, _ := recordsOf(run)
			if len(recs) != 1 {
				t.Fatalf("tool calls: want 1, got %d", len(recs))
			}
			rec := recs[0]
			if rec["tool_name"] != echoTool.name || rec["success"] != true {
				t.Errorf("record: want a successful %s call, got %v", echoTool.name, rec)
			}
			if !reflect.DeepEqual(rec["output"], map[string]any{"msg": "hello"}) {
				t.Errorf("record output: want {msg: hello}, got %#v", rec["output"])
			}
			want, _ := toolrouter.ToolCallID("plan-"+string(p), 0)
			if rec["tool_call_id"] != want {
				t.Errorf("record tool_call_id: want %q, got %v", want, rec["tool_call_id"])
			}
			if u, ok := run["usage"].(map[string]any); !ok {
				t.Errorf("usage: want the provider's token counts, got %#v", run["usage"])
			} else if in, _ := num(u["input_tokens"]); in != 2*float64(llmtest.DefaultUsage.InputTokens) {
				t.Errorf("usage.input_tokens: want %d (two turns), got %v", 2*llmtest.DefaultUsage.InputTokens, u["input_tokens"])
			}
			reqs := e.fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("model calls: want 2, got %d", len(reqs))
			}
			for i, r := range reqs {
				if r.Body["model"] != e.model() && r.Path != chatPaths[p] { // Gemini and Bedrock: the model is in the path
					t.Errorf("model call %d: model %v (path %s), want %s", i+1, r.Body["model"], r.Path, e.model())
				}
				switch p {
				case llmtest.OpenAI:
					if got := r.Header.Get("Authorization"); got != "Bearer "+fakeKey {
						t.Errorf("model call %d: Authorization %q", i+1, got)
					}
				case llmtest.Anthropic:
					if got := r.Header.Get("x-api-key"); got != fakeKey {
						t.Errorf("model call %d: x-api-key %q", i+1, got)
					}
				case llmtest.Gemini:
					if got := r.Header.Get("x-goog-api-key"); got != fakeKey {
						t.Errorf("model call %d: x-goog-api-key %q", i+1, got)
					}
				case llmtest.Bedrock:
					if got := r.Header.Get("Authorization"); !strings.HasPrefix(got, "AWS4-HMAC-SHA256 Credential="+fakeKey+"/") {
						t.Errorf("model call %d: Authorization %q", i+1, got)
					}
				}
			}
			results := toolResultsIn(p, reqs[1].Body)
			if len(results) != 1 || !strings.Contains(results[0].content, "hello") {
				t.Errorf("the second model call must carry the echo result, got %+v", results)
			}
		})
	}
}

// TestRunAsync starts a run with Prefer: respond-async and polls it. The
// model's first answer waits until the test has the 202, so the 202 shows
// the run still running.
func TestRunAsync(t *testing.T) {
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	e := newTestEnvWith(t, llmtest.OpenAI, []llmtest.Option{llmtest.WithTurnFunc(func(llmtest.Recorded) llmtest.Turn {
		<-gate
		return llmtest.Turn{} // the script answers
	})}, echoTool)
	t.Cleanup(open) // runs before the env's cleanup: a failed test leaves no model waiting
	e.fake.Script(
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: alias(echoTool.name), Arguments: map[string]any{"msg": "async"}}}},
		llmtest.Turn{Text: "Async answer"},
	)
	if err := e.start(); err != nil {
		t.Fatal(err)
	}
	r, h, err := e.do(http.MethodPost, "/runs", runRequest("Run in the background", nil, map[string]any{"plan_id": "plan-async"}),
		map[string]string{"Prefer": "respond-async"})
	if err != nil {
		t.Fatal(err)
	}
	if r.status != http.StatusAccepted {
		t.Fatalf("want 202, got %s", r)
	}
	var started map[string]any
	if err := json.Unmarshal(r.body, &started); err != nil {
		t.Fatalf("decode 202 body: %v: %s", err, r.body)
	}
	id := str(started["run_id"])
	if !strings.HasPrefix(id, "run_") {
		t.Fatalf("202 body: want a Run with a run_id, got %s", r.body)
	}
	if loc := h.Get("Location"); loc != "/runs/"+id {
		t.Errorf("Location: want /runs/%s, got %q", id, loc)
	}
	if got := str(started["status"]); got != "running" || started["finished_at"] != nil {
		t.Errorf("202 body: want the running run, got status %q finished_at %v", got, started["finished_at"])
	}
	open()
	var run map[string]any
	poll.Until(t, 20*time.Second, func() error {
		if run, _, err = e.getRun(id); err != nil {
			t.Fatal(err)
		}
		if run["status"] == "running" {
			return fmt.Errorf("the run is still running: %v", run)
		}
		return nil
	})
	if run["status"] != "completed" || run["content"] != "Async answer" {
		t.Fatalf("want a completed run answering %q, got status %v content %v error %v", "Async answer", run["status"], run["content"], run["error"])
	}
	if recs, _ := recordsOf(run); len(recs) != 1 || recs[0]["success"] != true {
		t.Fatalf("want one successful tool call, got %v", run["tool_calls"])
	}
	if err := e.checkRun(run, e.fake.Requests()); err != nil {
		t.Fatal(err)
	}
	runs, err := e.listRuns("plan-async")
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0]["run_id"] != id {
		t.Fatalf("GET /runs?plan_id=plan-async: want the run, got %v", runs)
	}
}

// streamRun POSTs a run as an event stream and returns its events.
func streamRun(t *testing.T, e *rtEnv, req map[string]any) []sseEvent {
	t.Helper()
	if err := e.start(); err != nil {
		t.Fatal(err)
	}
	r, _, err := e.do(http.MethodPost, "/runs", req, map[string]string{"Accept": "text/event-stream"})
	if err != nil {
		t.Fatal(err)
	}
	if r.status != http.StatusOK || r.ctype != "text/event-stream" {
		t.Fatalf("want 200 text/event-stream, got %s", r)
	}
	events, err := parseSSE(r.body)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// TestRunStream runs the single tool call loop as Server-Sent Events.
func TestRunStream(t *testing.T) {
	e := newTestEnv(t, llmtest.OpenAI, echoTool)
	e.fake.Script(
		llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "call_stream_1", Name: alias(echoTool.name), Arguments: map[string]any{"msg": "streamed"}}}},
		llmtest.Turn{Text: "Streamed answer"},
	)
	events := streamRun(t, e, runRequest("Stream the run", nil, map[string]any{"plan_id": "plan-stream"}))
	var names []string
	for _, ev := range events {
		names = append(names, ev.name)
	}
	want := []string{"run_started", "model_turn", "tool_call_started", "tool_call_finished", "model_turn", "run_finished"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("events: want %v, got %v", want, names)
	}
	decode := func(i int) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(events[i].data), &m); err != nil {
			t.Fatalf("event %d (%s): %v: %s", i, events[i].name, err, events[i].data)
		}
		return m
	}
	first := decode(0)
	id := str(first["run_id"])
	if !strings.HasPrefix(id, "run_") || first["status"] != "running" {
		t.Errorf("run_started: want the running Run, got %s", events[0].data)
	}
	if turn := decode(1); turn["iteration"] != 1.0 {
		t.Errorf("model_turn 1: want iteration 1, got %s", events[1].data)
	} else if calls, _ := turn["tool_calls"].([]any); len(calls) != 1 {
		t.Errorf("model_turn 1: want the tool call, got %s", events[1].data)
	}
	if st := decode(2); st["provider_call_id"] != "call_stream_1" || st["iteration"] != 1.0 {
		t.Errorf("tool_call_started: want call_stream_1 in iteration 1, got %s", events[2].data)
	}
	fin := decode(3)
	if fin["success"] != true || fin["tool_name"] != echoTool.name || !reflect.DeepEqual(fin["output"], map[string]any{"msg": "streamed"}) {
		t.Errorf("tool_call_finished: want the successful echo record, got %s", events[3].data)
	}
	if turn := decode(4); turn["iteration"] != 2.0 || turn["content"] != "Streamed answer" {
		t.Errorf("model_turn 2: want iteration 2 with the answer, got %s", events[4].data)
	}
	run := decode(5)
	if run["run_id"] != id || run["status"] != "completed" || run["content"] != "Streamed answer" {
		t.Fatalf("run_finished: want the completed Run %s, got %s", id, events[5].data)
	}
	if recs, _ := recordsOf(run); len(recs) != 1 || !reflect.DeepEqual(recs[0], fin) {
		t.Errorf("run_finished: its tool call must be the tool_call_finished record, got %v", run["tool_calls"])
	}
	if err := e.checkRun(run, e.fake.Requests()); err != nil {
		t.Fatal(err)
	}
}

// TestRunParallelToolCalls answers two calls of one turn in call order,
// though the second finishes first.
func TestRunParallelToolCalls(t *testing.T) {
	e := newTestEnv(t, llmtest.OpenAI, slowTool, echoTool)
	e.fake.Script(
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{ID: "call_first_slow", Name: alias(slowTool.name), Arguments: map[string]any{"ms": 500, "msg": "first"}},
			{ID: "call_second_fast", Name: alias(echoTool.name), Arguments: map[string]any{"msg": "second"}},
		}},
		llmtest.Turn{Text: "Both answered"},
	)
	events := streamRun(t, e, runRequest("Call two tools at once", nil, map[string]any{"plan_id": "plan-parallel"}))
	var finished []string
	for _, ev := range events {
		if ev.name == "tool_call_finished" {
			var rec map[string]any
			if err := json.Unmarshal([]byte(ev.data), &rec); err != nil {
				t.Fatal(err)
			}
			finished = append(finished, str(rec["provider_call_id"]))
		}
	}
	if want := []string{"call_second_fast", "call_first_slow"}; !reflect.DeepEqual(finished, want) {
		t.Errorf("tool_call_finished order: want %v (the calls run concurrently), got %v", want, finished)
	}
	last := events[len(events)-1]
	if last.name != "run_finished" {
		t.Fatalf("the stream must end with run_finished, got %s", last.name)
	}
	var run map[string]any
	if err := json.Unmarshal([]byte(last.data), &run); err != nil {
		t.Fatal(err)
	}
	if run["status"] != "completed" || run["content"] != "Both answered" {
		t.Fatalf("want the completed run, got %s", last.data)
	}
	recs, _ := recordsOf(run)
	if len(recs) != 2 || recs[0]["provider_call_id"] != "call_first_slow" || recs[1]["provider_call_id"] != "call_second_fast" {
		t.Fatalf("records: want call_first_slow then call_second_fast (call order), got %v", run["tool_calls"])
	}
	for i, rec := range recs {
		if rec["success"] != true || rec["iteration"] != 1.0 {
			t.Errorf("record %d: want a successful call of iteration 1, got %v", i, rec)
		}
	}
	reqs := e.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls: want 2, got %d", len(reqs))
	}
	msgs, _ := reqs[1].Body["messages"].([]any)
	if len(msgs) != 4 {
		t.Fatalf("the second model call: want user, assistant, tool, tool messages, got %s", reqs[1].Raw)
	}
	asst, _ := msgs[1].(map[string]any)
	calls, _ := asst["tool_calls"].([]any)
	var ids []string
	for _, c := range calls {
		cm, _ := c.(map[string]any)
		ids = append(ids, str(cm["id"]))
	}
	if want := []string{"call_first_slow", "call_second_fast"}; asst["role"] != "assistant" || !reflect.DeepEqual(ids, want) {
		t.Errorf("assistant message: want tool_calls %v, got %v", want, msgs[1])
	}
	for i, want := range []struct{ id, text string }{{"call_first_slow", "first"}, {"call_second_fast", "second"}} {
		m, _ := msgs[2+i].(map[string]any)
		if m["role"] != "tool" || m["tool_call_id"] != want.id || !strings.Contains(str(m["content"]), want.text) {
			t.Errorf("message %d: want the tool answer to %s carrying %q, got %v", 2+i, want.id, want.text, m)
		}
	}
	if err := e.checkRun(run, reqs); err != nil {
		t.Fatal(err)
	}
}

// TestRunListNewestFirst lists a plan's runs, newest first.
func TestRunListNewestFirst(t *testing.T) {
	e := newTestEnv(t, llmtest.OpenAI, echoTool)
	var ids []string
	for i, plan := range []string{"plan-list", "plan-other", "plan-list", "plan-list"} {
		e.fake.Script(llmtest.Turn{Text: "answer " + strconv.Itoa(i)})
		run, err := e.postRun(runRequest("Run "+strconv.Itoa(i), nil, map[string]any{"plan_id": plan}))
		if err != nil {
			t.Fatal(err)
		}
		if plan == "plan-list" {
			ids = append(ids, str(run["run_id"]))
		}
	}
	runs, err := e.listRuns("plan-list")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, str(r["run_id"]))
	}
	want := []string{ids[2], ids[1], ids[0]}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GET /runs?plan_id=plan-list: want %v (newest first), got %v", want, got)
	}
	for i := 1; i < len(runs); i++ {
		a, _ := time.Parse(time.RFC3339Nano, str(runs[i-1]["created_at"]))
		b, _ := time.Parse(time.RFC3339Nano, str(runs[i]["created_at"]))
		if a.Before(b) {
			t.Errorf("runs[%d] created %v before runs[%d] created %v", i-1, a, i, b)
		}
	}
	r, _, err := e.do(http.MethodGet, "/runs?plan_id=plan-list&limit=2", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := jsonOK(r, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 2 || page.Runs[0]["run_id"] != ids[2] || page.Runs[1]["run_id"] != ids[1] {
		t.Errorf("limit=2: want the two newest runs, got %s", r.body)
	}
	if runs, err := e.listRuns("plan-unknown"); err != nil || len(runs) != 0 {
		t.Errorf("an unknown plan: want {\"runs\": []}, got %v, %v", runs, err)
	}
	// Without plan_id: the recent runs of every plan, newest first.
	r, _, err = e.do(http.MethodGet, "/runs?limit=2", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	page.Runs = nil
	if err := jsonOK(r, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 2 || page.Runs[0]["run_id"] != ids[2] || page.Runs[1]["run_id"] != ids[1] {
		t.Errorf("GET /runs?limit=2 without plan_id: want the two newest runs of any plan, got %s", r.body)
	}
	r, _, err = e.do(http.MethodGet, "/runs/run_000000000000000000000000", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := problemDetail(r, http.StatusNotFound); err != nil {
		t.Errorf("GET /runs/{unknown}: %v", err)
	}
}

// TestRunAsyncConcurrent starts many async runs at once whose model
// answers immediately, so runs often finish while their 202 is being
// written. The 202 must be an answer of its own, not the Run the
// background loop is still writing (go test -race reports the sharing).
func TestRunAsyncConcurrent(t *testing.T) {
	e := newTestEnv(t, llmtest.OpenAI, echoTool)
	e.fake.Always(llmtest.Turn{Text: "Quick answer"})
	if err := e.start(); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 40
	var (
		mu   sync.Mutex
		ids  = map[string]bool{}
		wg   sync.WaitGroup
		errs = make(chan error, workers)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r, h, err := e.do(http.MethodPost, "/runs", runRequest(fmt.Sprintf("Quick %d/%d", w, i), nil, map[string]any{"plan_id": "plan-async-many"}),
					map[string]string{"Prefer": "respond-async"})
				if err != nil {
					errs <- err
					return
				}
				var run map[string]any
				if r.status != http.StatusAccepted || json.Unmarshal(r.body, &run) != nil {
					errs <- fmt.Errorf("want a 202 with the Run, got %s", r)
					return
				}
				id := str(run["run_id"])
				if h.Get("Location") != "/runs/"+id {
					errs <- fmt.Errorf("Location %q for run %q", h.Get("Location"), id)
					return
				}
				mu.Lock()
				ids[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.runner.Wait(ctx); err != nil {
		t.Fatalf("background runs still going: %v", err)
	}
	r, _, err := e.do(http.MethodGet, "/runs?plan_id=plan-async-many&limit=1000", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := jsonOK(r, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != workers*each || len(ids) != workers*each {
		t.Fatalf("want %d distinct runs listed, got %d listed, %d distinct ids", workers*each, len(out.Runs), len(ids))
	}
	for i, run := range out.Runs {
		if !ids[str(run["run_id"])] || run["status"] != "completed" || run["content"] != "Quick answer" {
			t.Errorf("runs[%d]: want one of the started runs, completed with the answer, got %v %v %v", i, run["run_id"], run["status"], run["content"])
		}
	}
}
