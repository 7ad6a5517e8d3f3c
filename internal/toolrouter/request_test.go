package toolrouter_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Chain puts the first stage outermost: the stages' work before Next runs
// in list order, their work on the outcome in reverse; a stage that
// answers without calling Next stops the call there.
func TestChainOrder(t *testing.T) {
	var trace []string
	stage := func(name string, stop bool) toolrouter.Stage {
		return func(next toolrouter.Next) toolrouter.Next {
			return func(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
				trace = append(trace, name+">")
				if stop {
					return toolrouter.Outcome{Held: true}
				}
				out := next(ctx, req)
				trace = append(trace, "<"+name)
				return out
			}
		}
	}
	exec := func(context.Context, *toolrouter.CallRequest) toolrouter.Outcome {
		trace = append(trace, "exec")
		return toolrouter.Outcome{}
	}
	toolrouter.Chain(exec, stage("a", false), stage("b", false))(context.Background(), &toolrouter.CallRequest{})
	if got := strings.Join(trace, " "); got != "a> b> exec <b <a" {
		t.Errorf("trace %q", got)
	}
	trace = nil
	out := toolrouter.Chain(exec, stage("a", false), stage("hold", true), stage("c", false))(context.Background(), &toolrouter.CallRequest{})
	if got := strings.Join(trace, " "); got != "a> hold> <a" || !out.Held {
		t.Errorf("trace %q, held %v", got, out.Held)
	}
}
