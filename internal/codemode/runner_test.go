package codemode

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// fakeView is a view whose callable names are fixed.
type fakeView struct{ names []string }

func (v fakeView) ResolveCall(context.Context, *toolrouter.Call) (*toolrouter.Tool, *toolrouter.Outcome, bool) {
	return nil, nil, false
}
func (v fakeView) Fixes(string, string) bool             { return false }
func (v fakeView) OutputBudget() toolrouter.OutputBudget { return toolrouter.OutputBudget{} }
func (v fakeView) Callable(context.Context) []string     { return v.names }

// fakeRouter answers inner calls: add sums, held_echo is held until
// decided, anything else is not found.
type fakeRouter struct {
	reqs    []*toolrouter.CallRequest
	decided map[string]*toolrouter.Result
}

func (f *fakeRouter) Do(_ context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
	f.reqs = append(f.reqs, req)
	id := "tc_" + strings.Repeat("x", len(f.reqs))
	switch req.Call.ToolName {
	case "add":
		a, _ := req.Call.Arguments["a"].(float64)
		b, _ := req.Call.Arguments["b"].(float64)
		out, _ := json.Marshal(map[string]any{"sum": a + b})
		return &toolrouter.Result{ToolCallID: id, Success: true, Output: out}, nil
	case "held_echo":
		return &toolrouter.Result{ToolCallID: id, Status: toolrouter.ResultAwaitingApproval, ApprovalID: "ap_" + id}, nil
	}
	msg, cat := "Tool '"+req.Call.ToolName+"' not found", toolrouter.CategoryNotFound
	return &toolrouter.Result{ToolCallID: id, Error: &msg, ErrorCategory: &cat}, nil
}

func (f *fakeRouter) Result(_ context.Context, id, _ string) (*toolrouter.Result, error) {
	if r, ok := f.decided[id]; ok {
		return r, nil
	}
	return &toolrouter.Result{ToolCallID: id, Status: toolrouter.ResultAwaitingApproval, ApprovalID: "ap_" + id}, nil
}

type denyAll struct{}

func (denyAll) Take(context.Context, *access.Client, toolrouter.Calls) (access.Verdict, error) {
	return access.Verdict{Allowed: false, Reset: time.Second}, nil
}

func runCode(t *testing.T, r *Runner, code string) (toolrouter.Outcome, map[string]any) {
	t.Helper()
	req := &toolrouter.CallRequest{ID: "tc_parent", PlanID: "plan-1", RunID: "run-1", Entry: toolrouter.EntryMCP,
		Call: toolrouter.Call{ToolName: "execute_code", Arguments: map[string]any{"code": code}}, View: fakeView{[]string{"add", "held_echo"}}}
	out := r.RunCode(context.Background(), req)
	text := out.Output
	if !out.Success() {
		text = json.RawMessage(out.Err)
	}
	var m map[string]any
	if err := json.Unmarshal(text, &m); err != nil {
		t.Fatalf("outcome %+v: %v", out, err)
	}
	return out, m
}

// TestRunnerInnerCalls: each inner call is a CallRequest of its own in
// the parent's plan, view, run and entry point, with the parent's id.
func TestRunnerInnerCalls(t *testing.T) {
	rt := &fakeRouter{}
	r := &Runner{Engine: NewEngine(testLimits(), 1)}
	r.Bind(rt)
	out, m := runCode(t, r, "const a = await tools.add({a: 1, b: 2}); return (await tools.add({a: a.sum, b: 39})).sum;")
	if !out.Success() || m["result"] != 42.0 {
		t.Fatalf("outcome %+v", out)
	}
	for _, q := range rt.reqs {
		if q.Parent != "tc_parent" || q.PlanID != "plan-1" || q.RunID != "run-1" || q.Entry != toolrouter.EntryMCP || q.View == nil {
			t.Fatalf("inner request %+v", q)
		}
	}
	// A name out of the view's reach is called, and refused.
	out, _ = runCode(t, r, "return await tools.secret({});")
	if out.Category != toolrouter.CategoryPermission || !strings.Contains(out.Err, `"kind":"refused"`) || !strings.Contains(out.Err, "not found") {
		t.Fatalf("refused: %+v", out)
	}
	// Not a program: a schema failure.
	req := &toolrouter.CallRequest{Call: toolrouter.Call{ToolName: "execute_code", Arguments: map[string]any{"code": 1}}, View: fakeView{}}
	if o := r.RunCode(context.Background(), req); o.Category != toolrouter.CategorySchema {
		t.Fatalf("code not a string: %+v", o)
	}
}

// TestRunnerHeldCall: a held call stops the program naming it; a rerun
// before the decision stops again without a new call; after it, the
// rerun gets the approved result once.
func TestRunnerHeldCall(t *testing.T) {
	rt := &fakeRouter{decided: map[string]*toolrouter.Result{}}
	r := &Runner{Engine: NewEngine(testLimits(), 1), Results: rt}
	r.Bind(rt)
	prog := "const e = await tools.held_echo({msg: 'hi'}); return e.msg;"
	out, _ := runCode(t, r, prog)
	if !strings.Contains(out.Err, `"kind":"awaiting_approval"`) || !strings.Contains(out.Err, `"approval_id":"ap_tc_x"`) {
		t.Fatalf("held: %+v", out)
	}
	if out, _ = runCode(t, r, prog); !strings.Contains(out.Err, `"approval_id":"ap_tc_x"`) || len(rt.reqs) != 1 {
		t.Fatalf("rerun before the decision: %+v, %d calls", out, len(rt.reqs))
	}
	rt.decided["tc_x"] = &toolrouter.Result{ToolCallID: "tc_x", Success: true, Output: json.RawMessage(`{"msg":"hi"}`)}
	if out, m := runCode(t, r, prog); !out.Success() || m["result"] != "hi" || len(rt.reqs) != 1 {
		t.Fatalf("rerun after the approval: %+v, %d calls", out, len(rt.reqs))
	}
	// Used once: the next run calls the tool again (and is held again).
	if out, _ := runCode(t, r, prog); !strings.Contains(out.Err, "awaiting_approval") || len(rt.reqs) != 2 {
		t.Fatalf("third run: %+v, %d calls", out, len(rt.reqs))
	}
}

// TestRunnerRateLimit: each inner call counts; over the limit the
// program stops.
func TestRunnerRateLimit(t *testing.T) {
	rt := &fakeRouter{}
	r := &Runner{Engine: NewEngine(testLimits(), 1), Limiter: denyAll{}}
	r.Bind(rt)
	out, _ := runCode(t, r, "return await tools.add({a: 1, b: 2});")
	if out.Category != toolrouter.CategoryResource || !strings.Contains(out.Err, `"kind":"rate_limited"`) || len(rt.reqs) != 0 {
		t.Fatalf("rate limited: %+v", out)
	}
}
