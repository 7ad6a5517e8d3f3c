package shape

import (
	"context"
	"fmt"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Stage is the stage that fits a successful output into the budget of its
// tool, tightened by the request's (a virtual server's, a /runs model's
// share of its context window): shaped, not failed (docs/output-budgets.md
// "Output budgets"). The whole output stays in Outcome.FullOutput for the
// stored result. An MCP backend's result is cut to the size of the shaped
// output. It goes after every stage that changes an output: the schema
// holds for the whole output, and the full copy kept for GET /results
// holds no secret a guardrail redacted.
func (s *Shaper) Stage(next toolrouter.Next) toolrouter.Next {
	return func(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
		out := next(ctx, req)
		if !out.Success() || out.Held {
			return out
		}
		b := req.Tool.Budget.Tighter(req.OutputBudget)
		if b.IsZero() {
			return out
		}
		where := "GET /results/" + req.ID
		shaped, cut := s.output(out.Output, b, where, out.OutputChecked())
		if !cut {
			return out
		}
		out.Note = fmt.Sprintf("output: %d bytes shaped to %d (%s); the whole output: %s", len(out.Output), len(shaped), describe(b), where)
		out.Shaped(shaped) // valid JSON by construction; the whole output keeps its mark
		if out.MCPResult != nil {
			out.MCPResult = s.MCPResult(out.MCPResult, max(len(shaped), MinBytes), b.Keep, where)
		}
		return out
	}
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
