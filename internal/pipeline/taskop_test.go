package pipeline_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/guardrail"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestTaskPollSkipsWhatOnlyTheCallConcerns: a request to a backend task
// (TaskOp) is resolved again, but neither validated against the tool's
// input schema, nor held for approval, nor given to the before-hooks (the
// call that made the task passed them); a task's unfinished state skips
// the after-hooks (no output yet) but not redaction, while a completed
// task's result goes through both as a call's result does.
func TestTaskPollSkipsWhatOnlyTheCallConcerns(t *testing.T) {
	reg, err := registry.Parse("test.yaml", []byte(`tools:
  - name: held
    endpoint: http://127.0.0.1:9/held
    approval: required
    input_schema: {type: object, properties: {msg: {type: string}}, required: [msg]}
guardrails:
  - {name: gate, endpoint: "http://127.0.0.1:9/deny", tools: [held], phase: before}
  - {name: after-gate, endpoint: "http://127.0.0.1:9/deny", tools: [held], phase: after}
  - {name: secrets, builtin: redact_secrets, tools: ["*"]}
`), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "AKIAZ4RT7YUIOPL2QW3E"
	exec := &stubExec{}
	client := guardrail.NewClient(nil)
	t.Cleanup(client.CloseIdleConnections)
	rt := &rig{Tools: func() pipeline.Tools { return reg }, Exec: exec, Seq: memory.New(), Approvals: memory.New(),
		Guardrails: &guardrail.Guards{Registry: func() guardrail.Registry { return reg }, Client: client}}
	ctx := context.Background()

	// The call itself is refused before it runs (no msg; the gate is down).
	if res, err := rt.Route(ctx, "p", map[string]any{"name": "held", "arguments": map[string]any{}}, nil); err != nil || res.Success {
		t.Fatalf("the call without its argument: %+v %v", res, err)
	}

	exec.Out = toolrouter.Outcome{Answered: true, Output: []byte(`null`), MCPResult: []byte(`{"statusMessage":"using ` + secret + `"}`),
		Task: &toolrouter.BackendTask{ID: "bk", Status: toolrouter.TaskWorking}}
	op := &toolrouter.TaskOp{Method: "tasks/get", ID: "bk", Server: "fx"}
	res, err := rt.Poll(ctx, "p", "held", op)
	if err != nil || !res.Success || res.BackendTask == nil || exec.Req.TaskOp != op || res.Status == toolrouter.ResultAwaitingApproval {
		t.Fatalf("a poll: %+v %v; the backend got %+v", res, err, exec.Req.TaskOp)
	}
	if strings.Contains(string(res.MCPResult), secret) || !strings.Contains(string(res.MCPResult), "statusMessage") {
		t.Fatalf("a working task's state was not redacted: %s", res.MCPResult)
	}

	// A JSON-RPC error the backend answered (carried as a TaskState's
	// error): redacted as the working state is.
	exec.Out.MCPResult = []byte(`{"error":{"code":-32603,"message":"using ` + secret + `"}}`)
	exec.Out.Task = &toolrouter.BackendTask{ID: "bk", RPCError: []byte(`{"code":-32603,"message":"using ` + secret + `"}`)}
	if res, err = rt.Poll(ctx, "p", "held", op); err != nil || strings.Contains(string(res.MCPResult), secret) || !strings.Contains(string(res.MCPResult), `"error"`) {
		t.Fatalf("a backend's JSON-RPC error was not redacted: %+v %v", res, err)
	}

	// Completed: the after-hooks run (the gate is down: refused).
	exec.Out.Task = &toolrouter.BackendTask{ID: "bk", Status: toolrouter.TaskCompleted}
	if res, err = rt.Poll(ctx, "p", "held", op); err != nil || res.Success || !strings.Contains(*res.Error, "after-gate") {
		t.Fatalf("a completed task's result did not reach the after-hooks: %+v %v", res, err)
	}

	if res, err := rt.Poll(ctx, "p", "nope", op); err != nil || res.Success || *res.ErrorCategory != toolrouter.CategoryNotFound {
		t.Fatalf("a poll of a tool that is gone: %+v %v", res, err)
	}
}
