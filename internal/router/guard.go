package router

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/guardrail"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Guardrails runs the registry's guardrails around each call
// (guardrail.Guards, docs/trusting-tools.md "Trusting tools").
type Guardrails interface {
	Before(ctx context.Context, c guardrail.Call) guardrail.Verdict
	After(ctx context.Context, c guardrail.Call, out toolrouter.Outcome) (toolrouter.Outcome, guardrail.Verdict)
	Reports(c guardrail.Call) (text func(string) string, data func(json.RawMessage) json.RawMessage)
}

// guardCall is what the guardrails see of rc's call of tool.
func guardCall(rc *routeCall, tool *toolrouter.Tool) guardrail.Call {
	res := &rc.r.res
	return guardrail.Call{Client: res.Client, Tool: tool, Args: rc.call.Arguments, PlanID: res.PlanID, ToolCallID: rc.id}
}

// guardBefore runs the before-hooks on rc's validated call: it returns
// the failure of a denied call (which never reaches the tool), or rewrites
// the call's arguments when a hook did.
func (r *Router) guardBefore(ctx context.Context, rc *routeCall, tool *toolrouter.Tool) (toolrouter.Outcome, bool) {
	if r.Guardrails == nil {
		return toolrouter.Outcome{}, false
	}
	v := r.Guardrails.Before(ctx, guardCall(rc, tool))
	rc.guards = append(rc.guards, v.Decisions...)
	if v.Deny != "" {
		return toolrouter.Outcome{Err: v.Deny, Category: toolrouter.CategoryPermission}, true
	}
	if v.Args != nil {
		rc.call.Arguments, rc.r.res.Arguments = v.Args, v.Args
	}
	return toolrouter.Outcome{}, false
}

// redactReports makes what the backend of rc's call of tool reports while
// it runs (req's progress, the relay of ctx: /route's SSE updates, /mcp's
// notifications) pass the redaction the output passes, and returns the
// context to run the call in.
func (r *Router) redactReports(ctx context.Context, rc *routeCall, tool *toolrouter.Tool, req *toolrouter.ExecRequest) context.Context {
	if r.Guardrails == nil {
		return ctx
	}
	text, data := r.Guardrails.Reports(guardCall(rc, tool))
	if text == nil {
		return ctx
	}
	if p := req.Progress; p != nil {
		req.Progress = func(progress, total float64, message string) { p(progress, total, text(message)) }
	}
	relay := toolrouter.RelayFrom(ctx)
	if relay == nil {
		return ctx
	}
	cp := *relay
	if p := relay.Progress; p != nil {
		cp.Progress = func(progress, total float64, message string) { p(progress, total, text(message)) }
	}
	if l := relay.Log; l != nil {
		cp.Log = func(level, logger string, raw json.RawMessage) { l(level, logger, data(raw)) }
	}
	return toolrouter.WithRelay(ctx, &cp)
}

// afterExec holds the tool's output to its output schema (HTTP tools: an
// MCP tool's was checked by mcpclient), then runs the after-phase
// guardrails, and checks the output again if they changed it.
func (r *Router) afterExec(ctx context.Context, rc *routeCall, tool *toolrouter.Tool, out toolrouter.Outcome) toolrouter.Outcome {
	if tool.MCPServer == "" {
		out = checkOutput(tool, out, "the tool's output does not match its output_schema: ")
	}
	if r.Guardrails == nil {
		return out
	}
	out, v := r.Guardrails.After(ctx, guardCall(rc, tool), out)
	rc.guards = append(rc.guards, v.Decisions...)
	rc.notes = append(rc.notes, v.Notes...)
	if v.Changed {
		out = checkOutput(tool, out, "the output as changed by guardrails does not match the tool's output_schema: ")
	}
	return out
}

// checkOutput turns a successful outcome whose output does not match the
// tool's output schema into a schema failure naming the mismatch.
func checkOutput(tool *toolrouter.Tool, out toolrouter.Outcome, prefix string) toolrouter.Outcome {
	if tool.ValidateOutput == nil || !out.Success() {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(out.Output))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	if err == nil {
		err = tool.ValidateOutput(v)
	}
	if err == nil {
		return out
	}
	return toolrouter.Outcome{Err: prefix + strings.TrimPrefix(err.Error(), "schema validation failed: "),
		Category: toolrouter.CategorySchema, Status: out.Status, Attempts: out.Attempts, Answered: true}
}
