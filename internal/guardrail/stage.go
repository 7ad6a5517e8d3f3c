package guardrail

import (
	"context"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// callOf is what the guardrails see of req's resolved call.
func callOf(req *toolrouter.CallRequest) Call {
	return Call{Client: req.Result.Client, Tool: req.Tool, Args: req.Call.Arguments, PlanID: req.PlanID, ToolCallID: req.ID}
}

// BeforeStage is the stage of the before-hooks: they see the arguments as
// the tool would get them, validated; a denied call never reaches what
// follows (an approver, the tool); a hook's rewrite replaces the
// arguments.
func (g *Guards) BeforeStage(next toolrouter.Next) toolrouter.Next {
	return func(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
		if req.TaskOp != nil {
			return next(ctx, req) // a poll of a task whose call passed them
		}
		v := g.Before(ctx, callOf(req))
		req.Guards = append(req.Guards, v.Decisions...)
		if v.Deny != "" {
			return toolrouter.Outcome{Err: v.Deny, Category: toolrouter.CategoryPermission}
		}
		if v.Args != nil {
			req.Call.Arguments, req.Result.Arguments = v.Args, v.Args
		}
		return next(ctx, req)
	}
}

// AfterStage is the stage of the after-hooks (After) on the output of
// the call; an output they changed is held to the tool's output schema
// again.
func (g *Guards) AfterStage(next toolrouter.Next) toolrouter.Next {
	return func(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
		out := next(ctx, req)
		if out.Task != nil && out.Task.Status != toolrouter.TaskCompleted {
			// A backend task's handle or unfinished state: no output of
			// the call for the hooks yet (a completed task's result
			// passes here as a call's does). Redaction still reads what
			// the state carries (RedactStage).
			return out
		}
		return afterPhase(ctx, req, out, g.After)
	}
}

// RedactStage is the stage of redact_secrets (Redact): before the call it
// makes what the backend reports while it runs (its progress, the
// request's relay: /route's SSE updates, /mcp's notifications) pass the
// same redaction; after it, it redacts the output. It goes after every
// stage that changes an output but shaping, so that what the caller, the
// model and GET /results see holds no secret it found, whatever the order
// of the registry's guardrails.
func (g *Guards) RedactStage(next toolrouter.Next) toolrouter.Next {
	return func(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
		if text, data := g.Reports(callOf(req)); text != nil {
			req.Progress, req.Relay = toolrouter.FilterReports(req.Progress, req.Relay, text, data)
		}
		return afterPhase(ctx, req, next(ctx, req), g.Redact)
	}
}

// afterPhase runs one phase that works on the call's output (the
// after-hooks, redaction) unless the call is held: its decisions and notes
// go to req, and an output it changed is held to the tool's output schema
// again.
func afterPhase(ctx context.Context, req *toolrouter.CallRequest, out toolrouter.Outcome, phase func(context.Context, Call, toolrouter.Outcome) (toolrouter.Outcome, Verdict)) toolrouter.Outcome {
	if out.Held {
		return out
	}
	out, v := phase(ctx, callOf(req), out)
	req.Guards = append(req.Guards, v.Decisions...)
	req.Notes = append(req.Notes, v.Notes...)
	if v.Changed {
		out = toolrouter.CheckOutput(req.Tool, out, "the output as changed by guardrails does not match the tool's output_schema: ")
	}
	return out
}
