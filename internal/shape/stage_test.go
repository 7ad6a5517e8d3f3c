package shape_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestOutputShapedToBudget: an output over its tool's budget (tightened
// by the budget of the context) is answered shaped and marked, and stored
// with the whole output; one within budget is untouched.
func TestOutputShapedToBudget(t *testing.T) {
	whole := strings.Repeat("0123456789", 10000)
	raw, _ := json.Marshal(whole)
	st := memory.New()
	exec := &stubExec{Out: toolrouter.Outcome{Output: raw, Answered: true}}
	tools := toolMap{
		"big":   {Name: "big", Budget: toolrouter.OutputBudget{Bytes: 4000}},
		"plain": {Name: "plain"},
	}
	r := &rig{Tools: func() pipeline.Tools { return tools }, Exec: exec, Seq: st, Results: st, Shape: shape.New()}
	call := func(ctx context.Context, name string) *toolrouter.Result {
		t.Helper()
		res, err := r.Route(ctx, "p", map[string]any{"name": name, "arguments": map[string]any{}}, nil)
		if err != nil || !res.Success {
			t.Fatalf("route %s: %v %+v", name, err, res)
		}
		return res
	}

	for _, tt := range []struct {
		name  string
		ctx   context.Context
		limit int
	}{
		{"the tool's budget", context.Background(), 4000},
		{"a tighter budget in the context", withBudget(context.Background(), toolrouter.OutputBudget{Bytes: 1000}), 1000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := call(tt.ctx, "big")
			if !res.Truncated || len(res.Output) > tt.limit || !strings.Contains(string(res.Output), "the whole output: GET /results/"+res.ToolCallID) {
				t.Errorf("truncated %v, %d bytes: %.200s", res.Truncated, len(res.Output), res.Output)
			}
			if strings.Contains(string(res.JSON), "full_output") || res.FullOutput != nil {
				t.Error("the answer carries the whole output")
			}
			if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "100002 bytes shaped to") {
				t.Errorf("notes %v", res.Notes)
			}
			stored, err := st.GetResult(context.Background(), toolrouter.ScopedKey("", res.ToolCallID))
			if err != nil || string(stored.FullOutput) != string(raw) || string(stored.Output) != string(res.Output) || !stored.Truncated {
				t.Errorf("stored: %v, full %d bytes, truncated %v", err, len(stored.FullOutput), stored.Truncated)
			}
		})
	}
	if res := call(context.Background(), "plain"); res.Truncated || string(res.Output) != string(raw) {
		t.Errorf("a tool without a budget was shaped")
	}
}

// TestShapedAfterRedaction: an output over its budget is redacted whole
// before it is shaped, so neither the answer nor the full copy kept for
// GET /results holds a secret, wherever in the output it was; and the
// output schema is checked on the whole output, not on its shaped cut.
func TestShapedAfterRedaction(t *testing.T) {
	const secret = "AKIAZ4RT7YUIOPL2QW3E"
	whole, _ := json.Marshal(strings.Repeat("0123456789", 2000) + " aws " + secret + " " + strings.Repeat("9876543210", 2000))
	rt, _, _ := guardedRouter(t, toolrouter.Outcome{Output: whole, Answered: true},
		"  - name: big\n    endpoint: http://127.0.0.1:9/big\n    max_output_bytes: 1000\n"+
			"guardrails:\n  - name: secrets\n    builtin: redact_secrets\n")
	st := memory.New()
	rt.Results, rt.Shape, rt.Audit = st, shape.New(), nil
	res, err := rt.Route(context.Background(), "p", echoCall(t, "big", `{}`), nil)
	if err != nil || !res.Success || !res.Truncated {
		t.Fatalf("route: %v %+v", err, res)
	}
	stored, err := st.GetResult(context.Background(), toolrouter.ScopedKey("", res.ToolCallID))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored.FullOutput), secret) || !strings.Contains(string(stored.FullOutput), "[REDACTED:aws-access-token]") {
		t.Errorf("the full output kept for GET /results holds the secret: %.100s…", stored.FullOutput)
	}
	if strings.Contains(string(res.Output), secret) {
		t.Errorf("the answer holds the secret")
	}
}

func echoCall(t *testing.T, tool, args string) any {
	t.Helper()
	b, _ := json.Marshal(args)
	var v any
	if err := json.Unmarshal([]byte(`{"id":"call_1","type":"function","function":{"name":"`+tool+`","arguments":`+string(b)+`}}`), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestShapedOutputIsMarkedChecked: a shaped output is valid JSON by
// construction and handed along marked (issue 37), whether the output it
// was shaped from was marked or not.
func TestShapedOutputIsMarkedChecked(t *testing.T) {
	raw, _ := json.Marshal(map[string]string{"text": strings.Repeat("0123456789", 1000)})
	for _, marked := range []bool{true, false} {
		in := toolrouter.Outcome{Output: raw, Answered: true}
		if marked {
			in.MarkChecked()
		}
		stage := shape.New().Stage(func(context.Context, *toolrouter.CallRequest) toolrouter.Outcome { return in })
		req := &toolrouter.CallRequest{Tool: &toolrouter.Tool{Name: "big", Budget: toolrouter.OutputBudget{Bytes: 500}}}
		out := stage(context.Background(), req)
		if len(out.Output) > 500 || !json.Valid(out.Output) || !out.OutputChecked() {
			t.Errorf("marked %v: shaped to %d bytes, valid %v, checked %v", marked, len(out.Output), json.Valid(out.Output), out.OutputChecked())
		}
	}
}
