package router

import (
	"context"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// lookup finds the tool a call names: within the virtual server view of
// ctx when there is one (docs/mcp.md "Virtual servers and tool search"), which
// may rewrite the call (call_tool unwrapped, defaults filled in) or answer
// it itself (local: search_tools); else in the registry. A client bound
// to virtual servers reaches no tool outside them.
func (r *Router) lookup(ctx context.Context, call *toolrouter.Call) (tool *toolrouter.Tool, local *toolrouter.Outcome, ok bool) {
	c := access.FromContext(ctx)
	if v := vserver.FromContext(ctx); v != nil {
		return v.Resolve(c, call)
	}
	if c.Bound() {
		return nil, nil, false
	}
	tool, ok = r.Tools().Lookup(call.ToolName)
	return tool, nil, ok
}

// Canonical is the registry name of the tool a call named name reaches,
// found as Route finds it (lookup: the view of ctx, else the registry),
// whatever the client's scope (as a denied call's audit record names
// it); name itself when it reaches none. The record of a request refused
// as a whole names its tools so (audit.Limiter).
func (r *Router) Canonical(ctx context.Context, name string) string {
	call := toolrouter.Call{ToolName: name}
	if tool, _, ok := r.lookup(ctx, &call); ok && tool != nil {
		return tool.Name
	}
	return name
}
