package toolrouter

import (
	"context"
	"encoding/json"
	"time"
)

// CallRequest is one tool call on its way through the pipeline
// (docs/architecture.md "The pipeline of a call"): the normalised call and
// every input that shapes it, set by the edge that received it (/route,
// /route/batch, /mcp, /runs), then the state the router and the stages
// record on it as it goes. The caller's identity (access.FromContext) and
// the request id stay in the context; nothing else of a call does.
//
// A CallRequest is used by one call, by one goroutine at a time, and passed
// by pointer: stages write to it.
type CallRequest struct {
	// PlanID is the plan the call belongs to (its tc_ id and sequence).
	PlanID string
	// Call is the normalised call. The edges that receive provider
	// payloads normalise them (format.Normalize); the others build it.
	Call Call
	// Unreadable, when set, is why the edge could not normalise the
	// payload: the call takes a sequence and fails as parse, with what
	// could be read of it in Call.
	Unreadable error
	// Meta is the caller's provider_metadata (nil: {}), only read.
	Meta map[string]any
	// Extra are arguments added after validation, except those the view
	// fixes: a /runs actor context's sandbox_root and resource_bindings.
	Extra map[string]any
	// View is the virtual server the call resolves in; nil: the registry
	// as it is (a client bound to virtual servers then reaches nothing).
	View View
	// OutputBudget is the request's own output budget (a view's, a /runs
	// model's share of its context window); it tightens the tool's.
	OutputBudget OutputBudget
	// Batch is the output bytes the calls of one batch share; nil: none.
	Batch *Budget
	// Relay takes what the backend reports while the call runs (/mcp);
	// nil: nothing is relayed.
	Relay *Relay
	// RunID names the /runs run that made the call ("" for none).
	RunID string
	// Entry is the entry point the call came in by (EntryRoute when "").
	Entry string
	// Parent is the tc_ id of the execute_code call whose program made
	// this call (docs/code-mode.md); "" for a call a client made.
	Parent string
	// Emit, when set, receives the call's progress (pending, running,
	// awaiting_approval, then complete or error).
	Emit func(Update)
	// TaskOp, when set, is a tasks/* request to the backend task of the
	// tool Call names (docs/mcp.md "Tasks"), not a call of it.
	TaskOp *TaskOp

	// The state of the call, set by the router and the stages.

	// ID is the call's tc_ id, Result its result as it is built, Start
	// when the router took it.
	ID     string
	Result *Result
	Start  time.Time
	// Tool is the tool the call resolved to; nil until resolved.
	Tool *Tool
	// SentName is the name the call came under when a view rewrote it
	// (call_tool); "" when it did not.
	SentName string
	// Denied names the tool that exists but is outside the client's
	// scope, for the audit record only ("" when not denied).
	Denied string
	// Guards are the guardrails' decisions and Notes what they changed in
	// the output (docs/trusting-tools.md "Trusting tools").
	Guards []GuardrailDecision
	Notes  []string
	// ArgsJSON and ArgsSHA256 are the arguments as the backend gets them,
	// encoded once for the request and the audit record (nil, "": not
	// encoded).
	ArgsJSON   json.RawMessage
	ArgsSHA256 string
	// Progress receives the progress the backend reports (nil: none).
	Progress func(progress, total float64, message string)
	// Cost is what the call cost, set by the cost stage (docs/costs.md);
	// nil when it did not run.
	Cost *Cost
	// Spend is the call's settled spend ledger entry, set by the cost
	// stage with Cost: the finisher puts it on the call's audit record, so
	// that the store writes it in the same transaction as the result and
	// the record (docs/costs.md "The ledger"); nil when it did not run.
	Spend *SpendEntry
	// RetryAfter is when a spend limit that refused the call resets.
	RetryAfter time.Time
}

// EntryPoint is the entry point the call came in by.
func (r *CallRequest) EntryPoint() string {
	if r.Entry == "" {
		return EntryRoute
	}
	return r.Entry
}

// Exec is the request the backend of r's resolved tool gets.
func (r *CallRequest) Exec() ExecRequest {
	return ExecRequest{Tool: r.Tool, Args: r.Call.Arguments, ArgsJSON: r.ArgsJSON, PlanID: r.PlanID, ToolCallID: r.ID,
		Progress: r.Progress, Relay: r.Relay, Batch: r.Batch, TaskOp: r.TaskOp}
}

// View is a virtual server's view over the registry (vserver.View,
// docs/mcp.md "Virtual servers and tool search").
type View interface {
	// ResolveCall finds the tool call names for the client in ctx, and
	// may rewrite call (call_tool unwrapped, defaults filled in) or
	// answer it itself (local: search_tools).
	ResolveCall(ctx context.Context, call *Call) (tool *Tool, local *Outcome, ok bool)
	// Fixes reports whether the view fixes (hides or defaults) argument
	// arg of the tool call names.
	Fixes(call, arg string) bool
	// OutputBudget is the view's own output budget (zero: none).
	OutputBudget() OutputBudget
	// Callable is the names the client in ctx may call through the view
	// (the "did you mean" of a name it does not have).
	Callable(ctx context.Context) []string
}

// Next carries a call on through the rest of the pipeline and returns its
// outcome.
type Next func(ctx context.Context, req *CallRequest) Outcome

// Stage is one policy of the pipeline (go-sdk middleware style): it gets
// the rest of the pipeline and returns the pipeline with itself in front.
// Its work before next runs in the order the stages are listed, its work
// after next in the reverse order. A stage that answers without calling
// next (a refused call, a held one) stops the call there.
type Stage func(next Next) Next

// Chain is final behind stages, the first of them outermost. It is built
// once, not per call.
func Chain(final Next, stages ...Stage) Next {
	for i := len(stages) - 1; i >= 0; i-- {
		final = stages[i](final)
	}
	return final
}
