package agent_test

import (
	"sync"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/agent"
	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestToolOutputsBudgetedAgainstTheContextWindow: each tool call of a turn
// is routed with its share of what the model's window leaves (docs/output-budgets.md
// "Budgets against the model's context window in /runs"); a model of
// unknown window gets none.
func TestToolOutputsBudgetedAgainstTheContextWindow(t *testing.T) {
	for _, tt := range []struct {
		model string
		want  int
	}{
		{"gpt-4o", (128000 - 128000/8 - 100002) / 2}, // the window from the model's name
		{"m", 0}, // unknown
	} {
		t.Run(tt.model, func(t *testing.T) {
			a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
				if n == 0 {
					return llm.Response{ToolCalls: []llm.ToolCall{call("c1", "test/echo", nil), call("c2", "test/echo", nil)},
						Usage: &llm.Usage{InputTokens: 100000, OutputTokens: 2}}, nil
				}
				return llm.Response{Content: "done"}, nil
			}}
			var mu sync.Mutex
			var budgets []int
			echo := echoRouter(nil, nil)
			rt := fakeRouter{route: echo.route, requests: func(req *toolrouter.CallRequest) {
				mu.Lock()
				budgets = append(budgets, req.OutputBudget.Tokens)
				mu.Unlock()
			}}
			r, _ := newRunner(a, rt)
			if got := run(t, r, agent.Request{Prompt: "go", Model: tt.model}); got.Status != toolrouter.RunCompleted {
				t.Fatalf("run %+v", got)
			}
			if len(budgets) != 2 || budgets[0] != tt.want || budgets[1] != tt.want {
				t.Errorf("token budgets %v, want two of %d", budgets, tt.want)
			}
		})
	}
}
