package router

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Shaper fits outputs into output budgets (shape.Shaper).
type Shaper interface {
	Output(raw json.RawMessage, b toolrouter.OutputBudget, where string) (json.RawMessage, bool)
	MCPResult(raw json.RawMessage, limit int, keep []string, where string) json.RawMessage
}

// shape fits a successful output into the budget of its tool, tightened by
// the budget of ctx (a virtual server's, a /runs model's share of its
// context window): shaped, not failed (docs/output-budgets.md "Output budgets"). The
// whole output stays in out.FullOutput for the stored result. An MCP
// backend's result is cut to the size of the shaped output.
func (r *Router) shape(ctx context.Context, req toolrouter.ExecRequest, out toolrouter.Outcome) toolrouter.Outcome {
	if r.Shape == nil || !out.Success() {
		return out
	}
	b := req.Tool.Budget.Tighter(shape.FromContext(ctx))
	if b.IsZero() {
		return out
	}
	where := "GET /results/" + req.ToolCallID
	shaped, cut := r.Shape.Output(out.Output, b, where)
	if !cut {
		return out
	}
	out.Note = fmt.Sprintf("output: %d bytes shaped to %d (%s); the whole output: %s", len(out.Output), len(shaped), describe(b), where)
	out.FullOutput, out.Output = out.Output, shaped
	if out.MCPResult != nil {
		out.MCPResult = r.Shape.MCPResult(out.MCPResult, max(len(shaped), shape.MinBytes), b.Keep, where)
	}
	return out
}

func describe(b toolrouter.OutputBudget) string {
	switch {
	case b.Bytes > 0 && b.Tokens > 0:
		return fmt.Sprintf("max_output_bytes %d, max_output_tokens %d", b.Bytes, b.Tokens)
	case b.Bytes > 0:
		return fmt.Sprintf("max_output_bytes %d", b.Bytes)
	}
	return fmt.Sprintf("max_output_tokens %d", b.Tokens)
}
