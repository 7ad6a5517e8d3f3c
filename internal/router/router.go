// Package router takes typed tool calls (toolrouter.CallRequest) through
// the pipeline: it gives each a stable id and sequence, runs it through the
// stages it was built with, executes it on its tool's backend and
// finishes its result (provider result, metrics, audit record, storage,
// updates). The policies are stages of their own packages
// (docs/architecture.md); the router sees none of them.
package router

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Executor runs one call on a tool's backend.
type Executor interface {
	Call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome
}

// CodeRunner runs the program of an execute_code call (codemode.Runner):
// its inner calls come back through the router, each its own call.
type CodeRunner interface {
	RunCode(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome
}

// Sequencer hands out per-plan sequences.
type Sequencer interface {
	NextSequence(ctx context.Context, planID string) (int64, error)
	NextSequences(ctx context.Context, planID string, n int64) (first int64, err error)
}

// Tracer opens the span of one tool call (telemetry.Telemetry.ToolCall).
type Tracer interface {
	ToolCall(ctx context.Context, planID string, seq int64, id string) (context.Context, func(*toolrouter.Result))
}

// Options are what a Router is built from.
type Options struct {
	Exec Executor // HTTP tools
	MCP  Executor // tools of MCP servers (Tool.MCPServer set); nil: MCP is not enabled
	// Code runs execute_code's programs (Tool.Code, discovery: code);
	// nil: code mode is not enabled.
	Code CodeRunner
	Seq  Sequencer
	// Finish completes, records and stores each result.
	Finish *Finisher
	Tracer Tracer // may be nil
	// Stages are the pipeline's stages, outermost first
	// (docs/architecture.md "The pipeline of a call").
	Stages           []toolrouter.Stage
	BatchConcurrency int // tool calls of one batch executed at once (at least 1)
	// MaxBatchOutput caps the output bytes the results of one batch hold
	// together (TOOLROUTER_MAX_BATCH_OUTPUT_BYTES); a call whose output
	// does not fit fails as resource. 0 means no cap.
	MaxBatchOutput int64
}

// Router routes tool calls through its pipeline, built once by New.
type Router struct {
	o        Options
	pipeline toolrouter.Next
}

// New builds the router of o: its stages in front of the execution.
func New(o Options) *Router {
	r := &Router{o: o}
	r.pipeline = toolrouter.Chain(r.exec, o.Stages...)
	return r
}

// Do routes one call. A plan id that is not valid is an EINVALID error,
// a sequence the store cannot allocate a store error; everything that
// goes wrong with the call itself is a Result with success false.
func (r *Router) Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
	if err := toolrouter.CheckPlanID(req.PlanID); err != nil {
		return nil, err
	}
	seq, err := r.o.Seq.NextSequence(ctx, planKey(ctx, req.PlanID))
	if err != nil {
		return nil, toolrouter.StoreError(fmt.Errorf("allocate sequence for plan %q: %w", req.PlanID, err))
	}
	return r.route(ctx, req, seq), nil
}

// Batch routes several calls of one plan (that of the first) concurrently
// (bounded by BatchConcurrency) and returns their results in input order.
// Sequences are allocated in input order before any call runs; the calls
// share the batch's output budget.
func (r *Router) Batch(ctx context.Context, planID string, reqs []*toolrouter.CallRequest) ([]*toolrouter.Result, error) {
	if err := toolrouter.CheckPlanID(planID); err != nil {
		return nil, err
	}
	results := make([]*toolrouter.Result, len(reqs))
	if len(reqs) == 0 {
		return results, nil
	}
	// One contiguous block of sequences, in input order, in one statement.
	first, err := r.o.Seq.NextSequences(ctx, planKey(ctx, planID), int64(len(reqs)))
	if err != nil {
		return nil, toolrouter.StoreError(fmt.Errorf("allocate sequences for plan %q: %w", planID, err))
	}
	var budget *toolrouter.Budget
	if r.o.MaxBatchOutput > 0 {
		budget = toolrouter.NewBudget(r.o.MaxBatchOutput)
	}
	var g errgroup.Group
	g.SetLimit(max(r.o.BatchConcurrency, 1))
	for i, req := range reqs {
		req.PlanID, req.Batch = planID, budget
		g.Go(func() error {
			results[i] = r.route(ctx, req, first+int64(i))
			return nil
		})
	}
	_ = g.Wait()
	return results, nil
}

// planKey is the store key of a plan of the client in ctx: each client
// has its own sequences, hence its own tc_ ids (docs/security.md "Clients"); the
// tc_ formula of the README still takes the plan_id as sent.
func planKey(ctx context.Context, planID string) string {
	return toolrouter.ScopedKey(access.FromContext(ctx).LabelName(), planID)
}

// noMetadata is the provider_metadata ({}) of calls sent without one. It is
// only read, like the map of a call that has one, which every result of its
// batch shares.
var noMetadata = map[string]any{}

// route takes one call whose sequence is allocated through the pipeline.
func (r *Router) route(ctx context.Context, req *toolrouter.CallRequest, seq int64) *toolrouter.Result {
	x := &routed{}
	req.Result = &x.res
	req.Start = r.o.Finish.now()
	req.ID, _ = toolrouter.ToolCallID(req.PlanID, seq) // the plan id and seq are valid here
	res := req.Result
	if r.o.Tracer != nil {
		var end func(*toolrouter.Result)
		ctx, end = r.o.Tracer.ToolCall(ctx, req.PlanID, seq, req.ID)
		defer end(res)
	}
	res.ToolCallID = req.ID
	res.Client = access.FromContext(ctx).LabelName()
	res.PlanID = req.PlanID
	res.Sequence = seq
	res.ProviderMetadata = req.Meta
	if res.ProviderMetadata == nil {
		res.ProviderMetadata = noMetadata
	}
	res.ProviderFormat = req.Call.Format
	res.ToolName = req.Call.ToolName // "" when the name itself was unreadable
	res.Arguments = req.Call.Arguments
	if req.Unreadable != nil || res.Arguments == nil {
		res.Arguments = map[string]any{}
	}
	if req.Call.HasProviderCallID { // even "": answered as the provider sent it
		x.providerCallID = req.Call.ProviderCallID
		res.ProviderCallID = &x.providerCallID
	}
	if req.Emit != nil {
		req.Emit(toolrouter.Update{ToolCallID: req.ID, Status: toolrouter.StatusPending, ToolName: res.ToolName})
		req.Progress = func(progress, total float64, message string) {
			u := toolrouter.Update{ToolCallID: req.ID, Status: toolrouter.StatusRunning, ToolName: req.Tool.Name, Message: message, Progress: &progress}
			if total > 0 {
				u.Total = &total
			}
			req.Emit(u)
		}
	}
	if req.Unreadable != nil {
		return r.o.Finish.finish(ctx, req, x, toolrouter.Outcome{Err: req.Unreadable.Error(), Category: toolrouter.CategoryParse})
	}
	out := r.pipeline(ctx, req)
	if out.Held {
		return res // awaits its approver: finished when decided (approval.Keeper)
	}
	return r.o.Finish.finish(ctx, req, x, out)
}

// exec is the end of the pipeline: it runs req on the backend of its
// tool, its MCP server's or its HTTP endpoint.
func (r *Router) exec(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
	// Encoded once: the audit record's digest and the arguments the
	// backend sends.
	if r.o.Finish.Audit != nil && req.ArgsJSON == nil {
		if b, sum, err := toolrouter.CanonicalArguments(req.Call.Arguments); err == nil {
			req.ArgsJSON, req.ArgsSHA256 = b, sum
		}
	}
	if req.Emit != nil {
		req.Emit(toolrouter.Update{ToolCallID: req.ID, Status: toolrouter.StatusRunning, ToolName: req.Tool.Name})
	}
	if req.Tool.Code {
		if r.o.Code == nil {
			return toolrouter.Failure(toolrouter.CategoryResource, "execute_code unavailable: code mode is not enabled")
		}
		return r.o.Code.RunCode(ctx, req)
	}
	if req.Tool.MCPServer == "" {
		return r.o.Exec.Call(ctx, req.Exec())
	}
	if r.o.MCP == nil {
		return toolrouter.Failure(toolrouter.CategoryResource, "MCP server %s unavailable: MCP is not enabled", req.Tool.MCPServer)
	}
	return r.o.MCP.Call(ctx, req.Exec())
}
