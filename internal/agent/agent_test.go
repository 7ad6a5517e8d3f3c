package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/agent"
	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestMain fails the package when a test leaves a goroutine running: the
// package starts goroutines (goleak reads every goroutine's stack after
// the tests, which a hand-written count cannot name).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeAdapter answers Chat with a function and records the requests.
type fakeAdapter struct {
	mu   sync.Mutex
	reqs []llm.Request
	chat func(n int, req llm.Request) (llm.Response, error)
}

func (f *fakeAdapter) PrepareRequest(llm.Request) (json.RawMessage, error) { return nil, nil }
func (f *fakeAdapter) ParseResponse([]byte) (llm.Response, error)          { return llm.Response{}, nil }
func (f *fakeAdapter) FormatToolResult(id, name string, res llm.ToolResult) any {
	return map[string]any{"answers": id, "name": name, "text": res.Text()}
}
func (f *fakeAdapter) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return f.chat(n, req)
}

// fakeRouter routes with a function.
type fakeRouter struct {
	route func(ctx context.Context, planID string, payload map[string]any) (*toolrouter.Result, error)
	// requests, when set, sees every request as the runner made it.
	requests func(req *toolrouter.CallRequest)
}

// Do adds the request's extra arguments, as the pipeline does after
// validation, and routes the call with route.
func (f fakeRouter) Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
	if f.requests != nil {
		f.requests(req)
	}
	args := map[string]any{}
	for k, v := range req.Call.Arguments {
		args[k] = v
	}
	for k, v := range req.Extra {
		args[k] = v
	}
	return f.route(ctx, req.PlanID, map[string]any{"id": req.Call.ProviderCallID, "name": req.Call.ToolName, "arguments": args})
}

type fakeRegistry struct {
	tools []*toolrouter.Tool
	kind  string // the provider's kind; "": openai
}

func (f fakeRegistry) Tools() []*toolrouter.Tool { return f.tools }
func (f fakeRegistry) Lookup(n string) (*toolrouter.Tool, bool) {
	for _, t := range f.tools {
		if t.Name == n {
			return t, true
		}
	}
	return nil, false
}
func (f fakeRegistry) Provider(n string) (toolrouter.Provider, bool) {
	kind := f.kind
	if kind == "" {
		kind = "openai"
	}
	return toolrouter.Provider{Name: n, Kind: kind, Model: "m"}, n == "fake"
}
func (f fakeRegistry) DefaultProvider() string { return "fake" }
func (f fakeRegistry) Providers() []toolrouter.Provider {
	p, _ := f.Provider("fake")
	return []toolrouter.Provider{p}
}

// echoRouter succeeds for test/echo (output = arguments) and fails others.
func echoRouter(seen *[]map[string]any, mu *sync.Mutex) fakeRouter {
	var seq atomic.Int64
	return fakeRouter{route: func(ctx context.Context, planID string, p map[string]any) (*toolrouter.Result, error) {
		args := p["arguments"].(map[string]any)
		if mu != nil {
			mu.Lock()
			*seen = append(*seen, args)
			mu.Unlock()
		}
		n := seq.Add(1) - 1
		id, _ := toolrouter.ToolCallID(planID, n)
		res := &toolrouter.Result{ToolCallID: id, PlanID: planID, Sequence: n, ToolName: p["name"].(string), Arguments: args, DurationMS: 0.5}
		switch p["name"] {
		case "test/echo", "test_echo_x":
			res.Success = true
			res.Output, _ = json.Marshal(args)
		case "test/fail":
			msg, cat := "RuntimeError: boom", toolrouter.CategoryExecution
			res.Error, res.ErrorCategory = &msg, &cat
		default:
			msg, cat := fmt.Sprintf("Tool '%s' not found", p["name"]), toolrouter.CategoryNotFound
			res.Error, res.ErrorCategory = &msg, &cat
		}
		return res, nil
	}}
}

func newRunner(a llm.Adapter, rt agent.Router) (*agent.Runner, *memory.Store) {
	st := memory.New()
	return &agent.Runner{
		Router: rt,
		Registry: func() agent.Registry {
			return fakeRegistry{tools: []*toolrouter.Tool{{Name: "test/echo", InputSchema: map[string]any{"type": "object"}}}}
		},
		Adapter: func(toolrouter.Provider) (llm.Adapter, error) { return a, nil },
		Runs:    st,
		Owner:   "test",
	}, st
}

func run(t *testing.T, r *agent.Runner, req agent.Request) *toolrouter.Run {
	t.Helper()
	pr, err := r.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return r.Execute(context.Background(), pr, nil)
}

func call(id, name string, args map[string]any) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: args}
}

func TestSingleToolCallThenAnswer(t *testing.T) {
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		if n == 0 {
			return llm.Response{ToolCalls: []llm.ToolCall{call("c1", "test/echo", map[string]any{"msg": "hi"})}, Usage: &llm.Usage{InputTokens: 10, OutputTokens: 2}}, nil
		}
		return llm.Response{Content: "Final answer after tool call", Usage: &llm.Usage{InputTokens: 20, OutputTokens: 5}}, nil
	}}
	r, st := newRunner(a, echoRouter(nil, nil))
	got := run(t, r, agent.Request{Prompt: "Use the echo tool"})
	if got.Status != toolrouter.RunCompleted || got.Content != "Final answer after tool call" || got.Iterations != 2 || got.TerminatedByLimit {
		t.Fatalf("run %+v", got)
	}
	if len(got.ToolCalls) != 1 || got.ToolCalls[0].Iteration != 1 || !got.ToolCalls[0].Success || got.ToolCalls[0].DurationMS <= 0 {
		t.Errorf("records %+v", got.ToolCalls)
	}
	if got.Usage == nil || got.Usage.InputTokens != 30 || got.Usage.TotalTokens != 37 {
		t.Errorf("usage %+v", got.Usage)
	}
	// The second model call saw the assistant turn and the tool's answer.
	msgs := a.reqs[1].Messages
	if len(msgs) != 3 || msgs[1].Role != llm.RoleAssistant || msgs[2].Role != llm.RoleTool || msgs[2].ToolCallID != "c1" || msgs[2].Content != `{"msg":"hi"}` {
		t.Errorf("second request messages %+v", msgs)
	}
	// Tools are offered under their provider-safe alias.
	if name := a.reqs[0].Tools[0].Name; name != toolrouter.ExportName(toolrouter.FormatOpenAI, "test/echo") {
		t.Errorf("offered tool name %q", name)
	}
	stored, err := st.GetRun(context.Background(), got.RunID)
	if err != nil || stored.Status != toolrouter.RunCompleted || len(stored.ToolCalls) != 1 {
		t.Errorf("stored run %+v %v", stored, err)
	}
}

func TestParallelCallsRunConcurrentlyAndAnswerInOrder(t *testing.T) {
	var inflight, peak atomic.Int32
	gate := make(chan struct{})
	var once sync.Once
	rt := fakeRouter{route: func(ctx context.Context, planID string, p map[string]any) (*toolrouter.Result, error) {
		n := inflight.Add(1)
		if n > peak.Load() {
			peak.Store(n)
		}
		if n == 2 {
			once.Do(func() { close(gate) })
		}
		select {
		case <-gate:
		case <-time.After(10 * time.Second):
		}
		inflight.Add(-1)
		out, _ := json.Marshal(p["arguments"])
		return &toolrouter.Result{ToolCallID: "tc_" + p["id"].(string), ToolName: "test/echo", Success: true, Output: out, Arguments: p["arguments"].(map[string]any), DurationMS: 1}, nil
	}}
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		if n == 0 {
			return llm.Response{ToolCalls: []llm.ToolCall{call("a", "test/echo", map[string]any{"i": 1.0}), call("b", "test/echo", map[string]any{"i": 2.0})}}, nil
		}
		return llm.Response{Content: "done"}, nil
	}}
	r, _ := newRunner(a, rt)
	got := run(t, r, agent.Request{Prompt: "two"})
	if peak.Load() != 2 {
		t.Errorf("peak concurrency %d, want 2", peak.Load())
	}
	if len(got.ToolCalls) != 2 || got.ToolCalls[0].ProviderCallID != "a" || got.ToolCalls[1].ProviderCallID != "b" {
		t.Errorf("records not in call order: %+v", got.ToolCalls)
	}
	msgs := a.reqs[1].Messages
	if msgs[2].ToolCallID != "a" || msgs[3].ToolCallID != "b" {
		t.Errorf("tool messages not in call order: %+v", msgs)
	}
}

func TestMaxIterationsTerminates(t *testing.T) {
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		return llm.Response{ToolCalls: []llm.ToolCall{call(fmt.Sprint("c", n), "test/echo", map[string]any{"n": float64(n)})}}, nil
	}}
	r, _ := newRunner(a, echoRouter(nil, nil))
	three := 3
	got := run(t, r, agent.Request{Prompt: "Keep calling tools", MaxIterations: &three})
	if got.Status != toolrouter.RunTerminated || !got.TerminatedByLimit || got.Iterations != 3 || len(got.ToolCalls) != 3 ||
		got.TerminatedReason == nil || *got.TerminatedReason != "max_iterations" {
		t.Errorf("run %+v", got)
	}
	for i, rec := range got.ToolCalls {
		if rec.Iteration != i+1 {
			t.Errorf("record %d iteration %d", i, rec.Iteration)
		}
	}
}

func TestRepeatLimit(t *testing.T) {
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		return llm.Response{ToolCalls: []llm.ToolCall{call(fmt.Sprint("c", n), "test/echo", map[string]any{"same": true})}}, nil
	}}
	r, _ := newRunner(a, echoRouter(nil, nil))
	got := run(t, r, agent.Request{Prompt: "poll", RepeatLimit: 3})
	if got.Status != toolrouter.RunTerminated || got.Iterations != 3 || got.TerminatedReason == nil || *got.TerminatedReason != "repeat_limit" {
		t.Errorf("run %+v", got)
	}
	// Off by default: the same model runs to max_iterations.
	got = run(t, r, agent.Request{Prompt: "poll"})
	if got.Iterations != agent.DefaultMaxIterations || *got.TerminatedReason != "max_iterations" {
		t.Errorf("without repeat_limit: %+v", got)
	}
}

func TestFailingAndMissingToolsGoBackToTheModel(t *testing.T) {
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		if n == 0 {
			return llm.Response{ToolCalls: []llm.ToolCall{call("x", "test/fail", nil), call("y", "test/missing", map[string]any{})}}, nil
		}
		return llm.Response{Content: "sorry"}, nil
	}}
	r, _ := newRunner(a, echoRouter(nil, nil))
	got := run(t, r, agent.Request{Prompt: "Call failing tool"})
	if got.Status != toolrouter.RunCompleted || len(got.ToolCalls) != 2 {
		t.Fatalf("run %+v", got)
	}
	if got.ToolCalls[0].Success || !strings.Contains(*got.ToolCalls[0].Error, "RuntimeError") {
		t.Errorf("failing tool record %+v", got.ToolCalls[0])
	}
	if got.ToolCalls[1].Success || *got.ToolCalls[1].ErrorCategory != toolrouter.CategoryNotFound {
		t.Errorf("missing tool record %+v", got.ToolCalls[1])
	}
	msgs := a.reqs[1].Messages
	if !msgs[2].IsError || !strings.Contains(msgs[2].Content, "boom") || !msgs[3].IsError || !strings.Contains(msgs[3].Content, "not found") {
		t.Errorf("errors not fed back: %+v", msgs)
	}
}

func TestActorContextThreadsIntoInputs(t *testing.T) {
	var seen []map[string]any
	var mu sync.Mutex
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		if n == 0 {
			return llm.Response{ToolCalls: []llm.ToolCall{call("c", "test/echo", map[string]any{"path": "a.txt"})}}, nil
		}
		return llm.Response{Content: "ok"}, nil
	}}
	r, _ := newRunner(a, echoRouter(&seen, &mu))
	bindings := map[string]any{"db": "postgres://x"}
	got := run(t, r, agent.Request{Prompt: "Use sandbox", Context: &toolrouter.ActorContext{PlanID: "plan-ctx", SandboxRoot: "/tmp/sandbox", ResourceBindings: bindings}})
	if len(seen) != 1 || seen[0]["sandbox_root"] != "/tmp/sandbox" || seen[0]["path"] != "a.txt" {
		t.Fatalf("tool inputs %v", seen)
	}
	if rb, _ := seen[0]["resource_bindings"].(map[string]any); rb["db"] != "postgres://x" {
		t.Errorf("resource bindings %v", seen[0])
	}
	if got.ToolCalls[0].Inputs["sandbox_root"] != "/tmp/sandbox" || got.Context.PlanID != "plan-ctx" {
		t.Errorf("record %+v", got.ToolCalls[0])
	}
	// Without a context a run gets a generated plan id.
	got = run(t, r, agent.Request{Prompt: "x"})
	if !strings.HasPrefix(got.Context.PlanID, "plan_") {
		t.Errorf("default plan id %q", got.Context.PlanID)
	}
}

func TestBadRequestsNameTheField(t *testing.T) {
	r, _ := newRunner(&fakeAdapter{}, echoRouter(nil, nil))
	zero := 0
	for field, req := range map[string]agent.Request{
		"prompt":          {},
		"max_iterations":  {Prompt: "x", MaxIterations: &zero},
		"provider":        {Prompt: "x", Provider: "nope"},
		"tools[0]":        {Prompt: "x", Tools: []string{"test/nope"}},
		"repeat_limit":    {Prompt: "x", RepeatLimit: -1},
		"context.plan_id": {Prompt: "x", Context: &toolrouter.ActorContext{}},
		"tool_choice":     {Prompt: "x", ToolChoice: "sometimes"},
	} {
		_, err := r.Start(context.Background(), req)
		var e *toolrouter.Error
		if !errors.As(err, &e) || e.Code != toolrouter.EINVALID || e.Field != field || !strings.Contains(e.Message, field) {
			t.Errorf("%s: %v", field, err)
		}
	}
}

// An unknown provider close to one of the registry's gets "did you mean"
// (issue 38); one close to none does not.
func TestUnknownProviderSuggestsTheClosest(t *testing.T) {
	r, _ := newRunner(&fakeAdapter{}, echoRouter(nil, nil))
	for name, want := range map[string]string{
		"fkae": `provider: unknown provider "fkae"; did you mean "fake"?`,
		"nope": `provider: unknown provider "nope"`,
	} {
		_, err := r.Start(context.Background(), agent.Request{Prompt: "x", Provider: name})
		var e *toolrouter.Error
		if !errors.As(err, &e) || e.Message != want {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

// A run's plan id follows the router's rule (toolrouter.ValidPlanID): one
// it would refuse fails the run's start, not each of its tool calls.
func TestRunPlanIDIsTheRoutersRule(t *testing.T) {
	r, _ := newRunner(&fakeAdapter{}, echoRouter(nil, nil))
	for _, id := range []string{"plan\n1", "plan\x7f", strings.Repeat("é", toolrouter.MaxPlanID+1),
		"plan\u2028x", "plan\u2029", "plan\u0085"} { // line and paragraph separators, a C1 control (issue 32, finding 14)
		_, err := r.Start(context.Background(), agent.Request{Prompt: "x", Context: &toolrouter.ActorContext{PlanID: id}})
		var e *toolrouter.Error
		if !errors.As(err, &e) || e.Code != toolrouter.EINVALID || e.Field != "context.plan_id" ||
			e.Message != "context.plan_id: must be at most 256 characters, none a control character" {
			t.Errorf("plan id %.20q: %v", id, err)
		}
	}
}

func TestProviderErrorFailsTheRun(t *testing.T) {
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		return llm.Response{}, &llm.ProviderError{Provider: "openai", Status: 400, Message: "Invalid 'messages'"}
	}}
	r, _ := newRunner(a, echoRouter(nil, nil))
	got := run(t, r, agent.Request{Prompt: "x"})
	if got.Status != toolrouter.RunFailed || got.Error == nil || !strings.Contains(*got.Error, "Invalid 'messages'") || got.FinishedAt == nil {
		t.Errorf("run %+v", got)
	}
}

func TestCancellationEndsTheRunCleanly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	rt := fakeRouter{route: func(ctx context.Context, planID string, p map[string]any) (*toolrouter.Result, error) {
		cancel() // the client goes away while the tool runs
		<-ctx.Done()
		msg, cat := "call cancelled: context canceled", toolrouter.CategoryExecution
		return &toolrouter.Result{ToolCallID: "tc_1", ToolName: "test/echo", Error: &msg, ErrorCategory: &cat, DurationMS: 1}, nil
	}}
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		return llm.Response{ToolCalls: []llm.ToolCall{call("c", "test/echo", nil)}}, nil
	}}
	r, st := newRunner(a, rt)
	pr, err := r.Start(ctx, agent.Request{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Execute(ctx, pr, nil)
	if got.Status != toolrouter.RunFailed || !strings.Contains(*got.Error, "cancelled") || len(got.ToolCalls) != 1 {
		t.Errorf("run %+v", got)
	}
	if len(a.reqs) != 1 {
		t.Errorf("the model was called again after cancellation")
	}
	stored, _ := st.GetRun(context.Background(), got.RunID)
	if stored.Status != toolrouter.RunFailed {
		t.Errorf("stored status %s", stored.Status)
	}
}

func TestStaleRunsAreInterrupted(t *testing.T) {
	r, st := newRunner(&fakeAdapter{}, echoRouter(nil, nil))
	r.Heartbeat = 100 * time.Millisecond
	old := time.Now().Add(-time.Minute).UTC()
	st.SaveRun(context.Background(), &toolrouter.Run{RunID: "run_dead", Status: toolrouter.RunRunning, Context: toolrouter.ActorContext{PlanID: "p"}, CreatedAt: old, HeartbeatAt: old, ToolCalls: []toolrouter.ToolCallRecord{}})
	got, err := r.Get(context.Background(), "run_dead")
	if err != nil || got.Status != toolrouter.RunInterrupted || got.FinishedAt == nil {
		t.Errorf("%+v %v", got, err)
	}
}

func TestEvents(t *testing.T) {
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		if n == 0 {
			return llm.Response{ToolCalls: []llm.ToolCall{call("c1", "test/echo", map[string]any{"msg": "hi"})}}, nil
		}
		return llm.Response{Content: "done"}, nil
	}}
	r, _ := newRunner(a, echoRouter(nil, nil))
	pr, _ := r.Start(context.Background(), agent.Request{Prompt: "x"})
	var types []string
	r.Execute(context.Background(), pr, func(e agent.Event) { types = append(types, string(e.Type)) })
	want := "run_started,model_turn,tool_call_started,tool_call_finished,model_turn,run_finished"
	if strings.Join(types, ",") != want {
		t.Errorf("events %v, want %s", types, want)
	}
}

func TestOnlyOfferedToolsRun(t *testing.T) {
	var seen []map[string]any
	var mu sync.Mutex
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		if n == 0 {
			return llm.Response{ToolCalls: []llm.ToolCall{call("a", "test/fail", nil), call("b", "test/echo", map[string]any{"x": 1.0})}}, nil
		}
		return llm.Response{Content: "ok"}, nil
	}}
	r, _ := newRunner(a, echoRouter(&seen, &mu))
	var started []string
	pr, err := r.Start(context.Background(), agent.Request{Prompt: "x", Tools: []string{"test/echo"}})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Execute(context.Background(), pr, func(e agent.Event) {
		if e.Type == agent.EventToolCallStarted {
			started = append(started, e.Data.(agent.ToolCallStarted).ToolName)
		}
	})
	if len(seen) != 1 {
		t.Fatalf("%d tools executed, want only the offered one", len(seen))
	}
	if got.ToolCalls[0].Success || *got.ToolCalls[0].ErrorCategory != toolrouter.CategoryNotFound || !got.ToolCalls[1].Success {
		t.Errorf("records %+v", got.ToolCalls)
	}
	sort.Strings(started) // the calls of a turn run concurrently
	if strings.Join(started, ",") != "test/echo,test/fail" {
		t.Errorf("started events name %v", started)
	}
}

// TestValidListsEveryProblem: a request's own problems come back together,
// each under its field, and Start reports them all in one error.
func TestValidListsEveryProblem(t *testing.T) {
	zero := 0
	req := agent.Request{MaxIterations: &zero, RepeatLimit: -1, ToolChoice: "x", Context: &toolrouter.ActorContext{}}
	got := req.Valid(context.Background())
	for _, f := range []string{"prompt", "max_iterations", "repeat_limit", "tool_choice", "context.plan_id"} {
		if got[f] == "" {
			t.Errorf("Valid does not report %s: %v", f, got)
		}
	}
	if p := (agent.Request{Prompt: "x"}).Valid(context.Background()); len(p) != 0 {
		t.Errorf("a good request has problems: %v", p)
	}
	r, _ := newRunner(&fakeAdapter{}, echoRouter(nil, nil))
	_, err := r.Start(context.Background(), req)
	var e *toolrouter.Error
	if !errors.As(err, &e) || e.Field != "context.plan_id" ||
		e.Message != `context.plan_id: must be a non-empty string; max_iterations: must be in 1..1000, got 0; prompt: must be a non-empty string; repeat_limit: must be >= 0 (0 turns it off), got -1; tool_choice: must be auto, required or none, got "x"` {
		t.Errorf("Start: %v", err)
	}
}

// TestToolResultsAreFormattedByTheAdapter: every call id is answered with
// the adapter's FormatToolResult message, in call order, in the next model
// request.
func TestToolResultsAreFormattedByTheAdapter(t *testing.T) {
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		if n == 0 {
			return llm.Response{ToolCalls: []llm.ToolCall{call("c1", "test/echo", map[string]any{"msg": "hi"}), call("c2", "test/fail", nil)}}, nil
		}
		return llm.Response{Content: "done"}, nil
	}}
	r, _ := newRunner(a, echoRouter(nil, nil))
	run(t, r, agent.Request{Prompt: "x"})
	if len(a.reqs) != 2 {
		t.Fatalf("%d model calls", len(a.reqs))
	}
	msgs := a.reqs[1].Messages
	if len(msgs) != 4 {
		t.Fatalf("messages %+v", msgs)
	}
	for i, want := range []map[string]any{
		{"answers": "c1", "name": "test/echo", "text": `{"msg":"hi"}`},
		{"answers": "c2", "name": "test/fail", "text": "error: RuntimeError: boom"},
	} {
		m := msgs[2+i]
		got, _ := json.Marshal(m.Formatted)
		w, _ := json.Marshal(want)
		if m.Role != llm.RoleTool || string(got) != string(w) {
			t.Errorf("message %d: %s %s, want %s", 2+i, m.Role, got, w)
		}
	}
}

// A run's calls reach the pipeline as calls in their provider's own
// format, built directly (no provider payload forged for the router to
// detect): provider_format anthropic for an anthropic model, not openai
// (issue 31 item 2), with the model's call id, in the run's entry point.
func TestRunCallsCarryTheirProvidersFormat(t *testing.T) {
	t.Parallel()
	for kind, want := range map[string]toolrouter.Format{
		"anthropic": toolrouter.FormatAnthropic, "gemini": toolrouter.FormatGemini, "bedrock": toolrouter.FormatBedrock,
		"openai": toolrouter.FormatOpenAI, "openai-responses": toolrouter.FormatOpenAI, "ollama": toolrouter.FormatOpenAI,
	} {
		a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
			if n == 0 {
				return llm.Response{ToolCalls: []llm.ToolCall{call("toolu_1", "test/echo", map[string]any{"msg": "hi"})}}, nil
			}
			return llm.Response{Content: "done"}, nil
		}}
		var got []*toolrouter.CallRequest
		var mu sync.Mutex
		rt := fakeRouter{route: echoRouter(nil, nil).route, requests: func(req *toolrouter.CallRequest) {
			mu.Lock()
			got = append(got, req)
			mu.Unlock()
		}}
		r, _ := newRunner(a, rt)
		r.Registry = func() agent.Registry {
			return fakeRegistry{kind: kind, tools: []*toolrouter.Tool{{Name: "test/echo", InputSchema: map[string]any{"type": "object"}}}}
		}
		if run := run(t, r, agent.Request{Prompt: "go"}); run.Status != toolrouter.RunCompleted {
			t.Fatalf("%s: run %+v", kind, run)
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d requests", kind, len(got))
		}
		c := got[0]
		if c.Call.Format != want || c.Call.ToolName != "test/echo" || c.Call.ProviderCallID != "toolu_1" || !c.Call.HasProviderCallID ||
			c.Call.Arguments["msg"] != "hi" || c.Entry != toolrouter.EntryRuns || c.RunID == "" || c.Unreadable != nil {
			t.Errorf("%s: request %+v", kind, c)
		}
	}
}

// A run's tools naming a misspelt tool get "did you mean" the closest the
// client may be offered (issue 38), never one out of its scope: the answer
// for a tool out of scope stays that for a missing one.
func TestUnknownToolSuggestsTheClosestInScope(t *testing.T) {
	r, _ := newRunner(&fakeAdapter{}, echoRouter(nil, nil))
	r.Registry = func() agent.Registry {
		return fakeRegistry{tools: []*toolrouter.Tool{{Name: "test/echo"}, {Name: "get_weather"}, {Name: "test/held", Quarantine: "changed"}}}
	}
	cs := access.NewClients(nil, []toolrouter.ClientSpec{
		{Name: "alice", Tools: []string{"*"}, Models: []string{"*"}},
		{Name: "bob", Tools: []string{"test/*"}, Models: []string{"*"}},
	})
	for _, tc := range []struct{ client, tool, want string }{
		{"alice", "get_wether", `tools[0]: unknown tool "get_wether"; did you mean "get_weather"?`},
		{"bob", "test/ecoh", `tools[0]: unknown tool "test/ecoh"; did you mean "test/echo"?`},
		{"bob", "get_wether", `tools[0]: unknown tool "get_wether"`}, // get_weather is out of bob's scope
		{"alice", "test/hels", `tools[0]: unknown tool "test/hels"`}, // a quarantined tool is not offered
		{"alice", "nothing", `tools[0]: unknown tool "nothing"`},
	} {
		ctx := access.NewContext(context.Background(), cs.ByName(tc.client))
		_, err := r.Start(ctx, agent.Request{Prompt: "x", Tools: []string{tc.tool}})
		var e *toolrouter.Error
		if !errors.As(err, &e) || e.Field != "tools[0]" || e.Message != tc.want {
			t.Errorf("%s names %s: %v, want %q", tc.client, tc.tool, err, tc.want)
		}
	}
}
