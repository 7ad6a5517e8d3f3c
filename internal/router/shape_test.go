package router_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/router"
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
	exec := &stubExec{out: toolrouter.Outcome{Output: raw, Answered: true}}
	tools := toolMap{
		"big":   {Name: "big", Budget: toolrouter.OutputBudget{Bytes: 4000}},
		"plain": {Name: "plain"},
	}
	r := &router.Router{Tools: func() router.Tools { return tools }, Exec: exec, Seq: st, Results: st, Shape: shape.New()}
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
		{"a tighter budget in the context", shape.WithBudget(context.Background(), toolrouter.OutputBudget{Bytes: 1000}), 1000},
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
