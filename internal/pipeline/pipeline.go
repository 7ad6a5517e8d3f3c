// Package pipeline holds the stages of a call that belong to no policy of
// their own (docs/architecture.md "The pipeline of a call"): resolving
// the tool a call names, validating its arguments, holding its output to
// the tool's output schema, and the output bytes a batch shares. The
// policies' stages live with their policy (guardrail, approval, shape);
// all are toolrouter.Stage, and none sees the router.
package pipeline

import (
	"context"
	"fmt"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/suggest"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Tools looks tools up by canonical name or provider alias (the registry
// in force), and lists them (for the "did you mean" of a missing one).
type Tools interface {
	Lookup(name string) (*toolrouter.Tool, bool)
	Tools() []*toolrouter.Tool
}

// Lookup finds the tool call names: within view when there is one
// (docs/mcp.md "Virtual servers and tool search"), which may rewrite the
// call (call_tool unwrapped, defaults filled in) or answer it itself
// (local: search_tools); else in the registry. A client bound to virtual
// servers reaches no tool outside them.
func Lookup(ctx context.Context, tools Tools, view toolrouter.View, call *toolrouter.Call) (tool *toolrouter.Tool, local *toolrouter.Outcome, ok bool) {
	if view != nil {
		return view.ResolveCall(ctx, call)
	}
	if access.FromContext(ctx).Bound() {
		return nil, nil, false
	}
	tool, ok = tools.Lookup(call.ToolName)
	return tool, nil, ok
}

// Canonical is the registry name of the tool a call named name reaches in
// view (nil: tools), found as Resolve finds it, whatever the client's
// scope (as a denied call's audit record names it); name itself when it
// reaches none. The record of a request refused as a whole names its
// tools so (audit.Limiter).
func Canonical(ctx context.Context, tools Tools, view toolrouter.View, name string) string {
	call := toolrouter.Call{ToolName: name}
	if tool, _, ok := Lookup(ctx, tools, view, &call); ok && tool != nil {
		return tool.Name
	}
	return name
}

// Resolve is the stage that finds the tool of a call (Lookup in the
// request's view, else in the registry tools returns) and sets req.Tool.
// A tool outside the scope of the client in ctx is a tool that does not
// exist: same result, not called (docs/security.md "Clients").
func Resolve(tools func() Tools) toolrouter.Stage {
	return func(next toolrouter.Next) toolrouter.Next {
		return func(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
			sent := req.Call.ToolName
			reg := tools()
			tool, local, ok := Lookup(ctx, reg, req.View, &req.Call)
			if req.Call.ToolName != sent {
				req.SentName = sent
			}
			res := req.Result
			res.ToolName, res.Arguments = req.Call.ToolName, req.Call.Arguments // a view's call_tool unwrapped, defaults filled in
			if local != nil {
				return *local
			}
			// execute_code (Tool.Code) is the meta-tool of a view in code
			// mode, in reach of whoever may use the view: each call its
			// program makes is resolved, and its scope checked, here.
			if !ok || !tool.Code && !access.FromContext(ctx).Allows(tool.Name) {
				if ok {
					req.Denied = tool.Name
				}
				return toolrouter.Outcome{Err: notFound(ctx, reg, req.View, req.Call.ToolName), Category: toolrouter.CategoryNotFound}
			}
			req.Tool = tool
			if req.View != nil { // the view's budget tightens its tools' own
				req.OutputBudget = req.OutputBudget.Tighter(req.View.OutputBudget())
			}
			res.ToolName = tool.Name
			res.IsValidation = tool.Kind == toolrouter.KindValidation
			return next(ctx, req)
		}
	}
}

// notFound is the error of a call naming no tool the client may call:
// "Tool 'x' not found", and the closest name it may call when one is close
// (suggest.Closest). The names come from what the client may call (its
// view's, else the registry's within its scope; none for a client bound
// to virtual servers calling outside them), so the message never names a
// tool out of its reach, and is the same for a missing tool and one out of
// scope (docs/security.md "Clients").
func notFound(ctx context.Context, tools Tools, view toolrouter.View, name string) string {
	msg := fmt.Sprintf("Tool '%s' not found", name)
	if s, ok := suggest.Closest(name, callable(ctx, tools, view)); ok {
		msg += fmt.Sprintf("; did you mean '%s'?", s)
	}
	return msg
}

// callable is the names the client in ctx may call: in view, or in tools
// within the client's scope.
func callable(ctx context.Context, tools Tools, view toolrouter.View) []string {
	if view != nil {
		return view.Callable(ctx)
	}
	c := access.FromContext(ctx)
	if c.Bound() {
		return nil
	}
	var out []string
	for _, t := range tools.Tools() {
		if c.Allows(t.Name) {
			out = append(out, t.Name)
		}
	}
	return out
}

// Validate is the stage that checks a resolved call's arguments against
// its tool's input schema, then adds the request's Extra arguments (a
// run's actor context) except those its view fixes (hidden or
// defaulted), which no caller sets.
func Validate(next toolrouter.Next) toolrouter.Next {
	return func(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
		if req.TaskOp != nil {
			return next(ctx, req) // a poll of a task: its call's arguments were validated
		}
		if v := req.Tool.ValidateArgs; v != nil {
			if err := v(req.Call.Arguments); err != nil {
				return toolrouter.Outcome{Err: err.Error(), Category: toolrouter.CategorySchema}
			}
		}
		if len(req.Extra) > 0 {
			args := make(map[string]any, len(req.Call.Arguments)+len(req.Extra))
			for k, val := range req.Call.Arguments {
				args[k] = val
			}
			for k, val := range req.Extra {
				if req.View == nil || !req.View.Fixes(req.Call.ToolName, k) {
					args[k] = val
				}
			}
			req.Call.Arguments, req.Result.Arguments = args, args
		}
		return next(ctx, req)
	}
}

// CheckOutput is the stage that holds an HTTP tool's output to its output
// schema (an MCP tool's was checked by mcpclient), before anything after
// the call sees it.
func CheckOutput(next toolrouter.Next) toolrouter.Next {
	return func(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
		out := next(ctx, req)
		if req.Tool.MCPServer == "" {
			out = toolrouter.CheckOutput(req.Tool, out, "the tool's output does not match its output_schema: ")
		}
		return out
	}
}

// BatchBudget is the stage that holds the output of a call of a batch to
// the bytes the batch's calls share (TOOLROUTER_MAX_BATCH_OUTPUT_BYTES),
// when its executor did not take it from them itself (MCP): the call then
// fails as resource.
func BatchBudget(next toolrouter.Next) toolrouter.Next {
	return func(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
		out := next(ctx, req)
		if b := req.Batch; b != nil && out.Success() && !out.Budgeted && !out.Held && !b.Take(int64(len(out.Output))) {
			status, attempts := out.Status, out.Attempts
			out = b.Exceeded(int64(len(out.Output)))
			out.Status, out.Attempts = status, attempts
		}
		return out
	}
}
