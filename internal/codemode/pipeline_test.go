package codemode_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/codemode"
	"github.com/toolrouterd/toolrouterd/internal/pipeline/pipelinetest"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

type spanKey struct{}

// spans records each tool call span and the span it is a child of.
type spans struct {
	mu     sync.Mutex
	parent map[string]string // tc_ id -> parent tc_ id ("" for a root)
}

func (s *spans) ToolCall(ctx context.Context, _ string, _ int64, id string) (context.Context, func(*toolrouter.Result)) {
	parent, _ := ctx.Value(spanKey{}).(string)
	s.mu.Lock()
	s.parent[id] = parent
	s.mu.Unlock()
	return context.WithValue(ctx, spanKey{}, id), func(*toolrouter.Result) {}
}

// TestExecuteCodeThroughThePipeline: execute_code in a code view, through
// the pipeline service.New builds: each inner call is routed on its own
// (its tool's backend called), its output redacted before the program
// sees it, its audit record naming the execution as parent, and its span
// a child of the execution's.
func TestExecuteCodeThroughThePipeline(t *testing.T) {
	out := `{"msg":"key AKIAZ4RT7YUIOPL2QW3E here"}`
	rig, exec, aud := pipelinetest.Guarded(t, toolrouter.Outcome{Output: json.RawMessage(out), Answered: true},
		"guardrails:\n  - {name: secrets, builtin: redact_secrets}\nvirtual_servers:\n  - {name: coder, tools: [\"test/*\"], discovery: code}\n")
	tr := &spans{parent: map[string]string{}}
	rig.Tracer = tr
	rig.Code = &codemode.Runner{Engine: codemode.NewEngine(codemode.DefaultLimits(), 1)}
	reg := rig.Tools().(vserver.Registry)
	view, err := vserver.Build(reg).For(nil, "coder")
	if err != nil {
		t.Fatal(err)
	}
	ctx := pipelinetest.InView(context.Background(), view)
	res, err := rig.Route(ctx, "plan", map[string]any{"name": "execute_code", "arguments": map[string]any{
		"code": `const a = await tools["test/echo"]({msg: "one"}); const b = await tools["test/echo"]({msg: "two"}); return [a.msg, b.msg];`}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || strings.Contains(string(res.Output), "AKIA") || !strings.Contains(string(res.Output), "[REDACTED:aws-access-token]") {
		t.Fatalf("execute_code: %+v %s", res, res.Output)
	}
	if string(exec.Req.ArgsJSON) != `{"msg":"two"}` && exec.Req.Args["msg"] != "two" {
		t.Fatalf("the backend's last call: %+v", exec.Req)
	}
	var children []string
	for _, r := range aud.Recs {
		if r.ParentCallID == res.ToolCallID {
			children = append(children, r.Tool)
			if tr.parent[r.ToolCallID] != res.ToolCallID {
				t.Errorf("span of %s: parent %q, want the execution's %s", r.ToolCallID, tr.parent[r.ToolCallID], res.ToolCallID)
			}
		}
	}
	if strings.Join(children, ",") != "test/echo,test/echo" || len(aud.Recs) != 3 {
		t.Fatalf("audit: %d records, children of the execution %v", len(aud.Recs), children)
	}
	if tr.parent[res.ToolCallID] != "" {
		t.Errorf("the execution's span has a parent")
	}
}

// TestHeldInnerCallSettledWithParent: a call a program made that waited
// for approval is audited, once approved and run, with the execution as
// its parent, as if it had run at once; and the program run again gets
// its result.
func TestHeldInnerCallSettledWithParent(t *testing.T) {
	rig, _, aud := pipelinetest.Guarded(t, toolrouter.Outcome{Output: json.RawMessage(`{"paid":true}`), Answered: true},
		"  - {name: test/pay, endpoint: \"http://127.0.0.1:9/pay\", approval: required}\nvirtual_servers:\n  - {name: coder, tools: [\"test/*\"], discovery: code}\n")
	st := memory.New()
	rig.Seq, rig.Results, rig.Approvals = st, st, st
	aud.Save = true
	run := &codemode.Runner{Engine: codemode.NewEngine(codemode.DefaultLimits(), 1), Results: rig}
	rig.Code = run
	view, err := vserver.Build(rig.Tools().(vserver.Registry)).For(nil, "coder")
	if err != nil {
		t.Fatal(err)
	}
	ctx := pipelinetest.InView(context.Background(), view)
	prog := map[string]any{"name": "execute_code", "arguments": map[string]any{"code": `return await tools["test/pay"]({});`}}
	res, err := rig.Route(ctx, "plan", prog, nil)
	if err != nil || res.Success || !strings.Contains(*res.Error, `"kind":"awaiting_approval"`) {
		t.Fatalf("held: %+v %v", res, err)
	}
	var held struct {
		Error struct {
			ToolCallID string `json:"tool_call_id"`
			ApprovalID string `json:"approval_id"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(*res.Error), &held); err != nil {
		t.Fatal(err)
	}
	if _, fin, err := rig.Decide(context.Background(), held.Error.ApprovalID, true, ""); err != nil || !fin.Success {
		t.Fatalf("approve: %+v %v", fin, err)
	}
	last := aud.Recs[len(aud.Recs)-1]
	if last.ToolCallID != held.Error.ToolCallID || last.ParentCallID != res.ToolCallID || last.Tool != "test/pay" {
		t.Fatalf("settled call's record %+v, want parent %s", last, res.ToolCallID)
	}
	again, err := rig.Route(ctx, "plan", prog, nil)
	if err != nil || !again.Success || !strings.Contains(string(again.Output), `"result":{"paid":true}`) {
		t.Fatalf("rerun: %+v %s %v", again, again.Output, err)
	}
}
