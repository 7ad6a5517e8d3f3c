// Package pipelinetest runs calls through the pipeline service.New
// assembles (a Rig) for the tests of the stages' packages: each stage is
// tested where it lives, through the whole pipeline.
package pipelinetest

import (
	"context"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/approval"
	"github.com/toolrouterd/toolrouterd/internal/codemode"
	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/guardrail"
	"github.com/toolrouterd/toolrouterd/internal/lograte"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/router"
	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// Rig is a router with the pipeline service.New builds, made on first
// use from its fields, and the edges' part: the payloads of its Route,
// Stream, RouteWith and Batch are normalised as /route normalises them,
// and what the test's context names with the helpers below (a view, a
// budget, an entry point, a relay, a run) goes into the CallRequest, as
// the edges put them there.
type Rig struct {
	Tools               func() pipeline.Tools
	Exec, MCP           router.Executor
	Seq                 router.Sequencer
	Results             interface{ router.Results }
	Observer            router.Observer
	Tracer              router.Tracer
	Audit               router.Auditor
	LogLimit            *lograte.Limiter
	BatchConcurrency    int
	MaxBatchOutput      int64
	Guardrails          *guardrail.Guards
	Approvals           approval.Store
	ApprovalTTL         time.Duration
	MaxPendingApprovals int
	Client              func(name string) *access.Client
	Views               func() *vserver.Set
	Settled             func(ctx context.Context, runID string)
	Subjects            approval.Subjects // nil: no kept tokens
	Shape               *shape.Shaper
	Now                 func() time.Time
	// Code runs execute_code (discovery: code); bound to the rig's
	// router when it is built. Nil: code mode is not enabled.
	Code *codemode.Runner
	// Cost is the cost stage (cost.Meter.Stage), after approval as
	// service.New lists it; nil: none.
	Cost toolrouter.Stage

	once   sync.Once
	rt     *router.Router
	keeper *approval.Keeper
}

func (g *Rig) build() {
	g.once.Do(func() {
		fin := &router.Finisher{Results: g.Results, Observer: g.Observer, Audit: g.Audit, LogLimit: g.LogLimit, Now: g.Now}
		var results approval.Results
		if g.Results != nil {
			results = g.Results
		}
		g.keeper = &approval.Keeper{Store: g.Approvals, Results: results, Finish: fin, Tools: func() approval.Tools { return g.Tools() },
			TTL: g.ApprovalTTL, MaxPending: g.MaxPendingApprovals, Client: g.Client, Views: g.Views, Settled: g.Settled, Now: g.Now}
		if g.Subjects != nil {
			g.keeper.Subjects = g.Subjects
		}
		stages := []toolrouter.Stage{pipeline.Resolve(g.Tools), pipeline.Validate}
		if g.Guardrails != nil {
			stages = append(stages, g.Guardrails.BeforeStage)
		}
		if g.Approvals != nil {
			stages = append(stages, g.keeper.Stage)
		}
		if g.Cost != nil {
			stages = append(stages, g.Cost)
		}
		stages = append(stages, pipeline.BatchBudget)
		if g.Shape != nil {
			stages = append(stages, g.Shape.Stage)
		}
		if g.Guardrails != nil {
			stages = append(stages, g.Guardrails.RedactStage, g.Guardrails.AfterStage)
		}
		stages = append(stages, pipeline.CheckOutput)
		opts := router.Options{Exec: g.Exec, MCP: g.MCP, Seq: g.Seq, Finish: fin, Tracer: g.Tracer, Stages: stages,
			BatchConcurrency: g.BatchConcurrency, MaxBatchOutput: g.MaxBatchOutput}
		if g.Code != nil {
			opts.Code = g.Code
		}
		g.rt = router.New(opts)
		if g.Code != nil {
			g.Code.Bind(g.rt)
		}
	})
}

type rigKey struct{}

// rigInputs are the call inputs a test's context names.
type rigInputs struct {
	view   toolrouter.View
	budget toolrouter.OutputBudget
	entry  string
	relay  *toolrouter.Relay
	runID  string
}

func inputsOf(ctx context.Context) rigInputs {
	in, _ := ctx.Value(rigKey{}).(rigInputs)
	return in
}

func with(ctx context.Context, f func(*rigInputs)) context.Context {
	in := inputsOf(ctx)
	f(&in)
	return context.WithValue(ctx, rigKey{}, in)
}

// InView is ctx naming the view v the calls made with it resolve in.
func InView(ctx context.Context, v *vserver.View) context.Context {
	return with(ctx, func(in *rigInputs) {
		if v != nil {
			in.view = v
		}
	})
}

// WithBudget is ctx naming the output budget of the calls made with it.
func WithBudget(ctx context.Context, b toolrouter.OutputBudget) context.Context {
	return with(ctx, func(in *rigInputs) { in.budget = b })
}

// WithEntry is ctx naming the entry point of the calls made with it.
func WithEntry(ctx context.Context, e string) context.Context {
	return with(ctx, func(in *rigInputs) { in.entry = e })
}

// WithRelay is ctx naming the relay of the calls made with it.
func WithRelay(ctx context.Context, r *toolrouter.Relay) context.Context {
	return with(ctx, func(in *rigInputs) { in.relay = r })
}

// WithRunID is ctx naming the run of the calls made with it.
func WithRunID(ctx context.Context, id string) context.Context {
	return with(ctx, func(in *rigInputs) { in.runID = id })
}

// request is payload's CallRequest as an edge makes it in ctx.
func request(ctx context.Context, planID string, payload any, meta map[string]any) *toolrouter.CallRequest {
	call, err := format.Normalize(payload)
	in := inputsOf(ctx)
	return &toolrouter.CallRequest{PlanID: planID, Call: call, Unreadable: err, Meta: meta, View: in.view,
		OutputBudget: in.budget, Entry: in.entry, Relay: in.relay, RunID: in.runID}
}

// Route routes as the edges do (see Rig).
func (g *Rig) Route(ctx context.Context, planID string, payload any, meta map[string]any) (*toolrouter.Result, error) {
	g.build()
	return g.rt.Do(ctx, request(ctx, planID, payload, meta))
}

// Poll sends a tasks/* request to the backend task of tool through the
// pipeline, as /mcp does for a relayed task (CallRequest.TaskOp).
func (g *Rig) Poll(ctx context.Context, planID, tool string, op *toolrouter.TaskOp) (*toolrouter.Result, error) {
	g.build()
	in := inputsOf(ctx)
	return g.rt.Do(ctx, &toolrouter.CallRequest{PlanID: planID, Call: toolrouter.Call{Format: toolrouter.FormatMCP, ToolName: tool, Arguments: map[string]any{}},
		View: in.view, Entry: in.entry, Relay: in.relay, TaskOp: op})
}

// Stream routes as the edges do (see Rig).
func (g *Rig) Stream(ctx context.Context, planID string, payload any, meta map[string]any, emit func(toolrouter.Update)) (*toolrouter.Result, error) {
	g.build()
	req := request(ctx, planID, payload, meta)
	req.Emit = emit
	return g.rt.Do(ctx, req)
}

// RouteWith routes as the edges do (see Rig).
func (g *Rig) RouteWith(ctx context.Context, planID string, payload any, meta, extra map[string]any) (*toolrouter.Result, error) {
	g.build()
	req := request(ctx, planID, payload, meta)
	req.Extra = extra
	return g.rt.Do(ctx, req)
}

// Batch routes as the edges do (see Rig).
func (g *Rig) Batch(ctx context.Context, planID string, payloads []any, meta map[string]any) ([]*toolrouter.Result, error) {
	g.build()
	reqs := make([]*toolrouter.CallRequest, len(payloads))
	for i, p := range payloads {
		reqs[i] = request(ctx, planID, p, meta)
	}
	return g.rt.Batch(ctx, planID, reqs)
}

// Decide is the approval keeper's Decide.
func (g *Rig) Decide(ctx context.Context, id string, approve bool, reason string) (*toolrouter.Approval, *toolrouter.Result, error) {
	g.build()
	return g.keeper.Decide(ctx, id, approve, reason)
}

// ExpireDue is the approval keeper's ExpireDue.
func (g *Rig) ExpireDue(ctx context.Context) (int, error) {
	g.build()
	return g.keeper.ExpireDue(ctx)
}

// SettleAbandoned is the approval keeper's SettleAbandoned.
func (g *Rig) SettleAbandoned(ctx context.Context) (int, error) {
	g.build()
	return g.keeper.SettleAbandoned(ctx)
}

// WatchDecision is the approval keeper's WatchDecision.
func (g *Rig) WatchDecision(ctx context.Context, toolCallID string) (<-chan struct{}, func()) {
	g.build()
	return g.keeper.WatchDecision(ctx, toolCallID)
}

// Result is the approval keeper's Result.
func (g *Rig) Result(ctx context.Context, toolCallID, owner string) (*toolrouter.Result, error) {
	g.build()
	return g.keeper.Result(ctx, toolCallID, owner)
}

// Canonical is pipeline.Canonical in the view ctx names.
func (g *Rig) Canonical(ctx context.Context, name string) string {
	return pipeline.Canonical(ctx, g.Tools(), inputsOf(ctx).view, name)
}

// StubExec answers every call with Out, records the request, and reports
// progress twice when asked for it.
type StubExec struct {
	Out toolrouter.Outcome
	Req toolrouter.ExecRequest
}

// Call implements router.Executor.
func (s *StubExec) Call(_ context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	s.Req = req
	if req.Progress != nil {
		req.Progress(1, 2, "half")
		req.Progress(3, 0, "")
	}
	return s.Out
}

// Tools is a registry of tools by name.
type Tools map[string]*toolrouter.Tool

// Lookup implements pipeline.Tools.
func (m Tools) Lookup(name string) (*toolrouter.Tool, bool) { t, ok := m[name]; return t, ok }

// Tools implements pipeline.Tools: the tools by name.
func (m Tools) Tools() []*toolrouter.Tool {
	names := slices.Sorted(maps.Keys(m))
	out := make([]*toolrouter.Tool, len(names))
	for i, n := range names {
		out[i] = m[n]
	}
	return out
}

// Registry is a registry file of two tools, test/echo and test/check.
const Registry = `tools:
  - name: test/echo
    description: Echo tool
    endpoint: http://127.0.0.1:9/echo
    kind: tool
    input_schema:
      type: object
      properties: {msg: {type: string}}
    timeout: 10s
  - name: test/check
    description: Validation tool
    endpoint: http://127.0.0.1:9/check
    kind: validation
    input_schema: {type: object}
`

// RecordingAudit keeps the audit records of the calls; with Save, it
// stores their results too, as audit.Trail does.
type RecordingAudit struct {
	Save bool
	mu   sync.Mutex
	Recs []toolrouter.AuditRecord
}

// RecordWith implements router.Auditor.
func (a *RecordingAudit) RecordWith(ctx context.Context, save toolrouter.AuditSaver, recs ...toolrouter.AuditRecord) {
	a.mu.Lock()
	a.Recs = append(a.Recs, recs...)
	a.mu.Unlock()
	if a.Save && save != nil {
		_ = save.SaveAudited(ctx, recs)
	}
}

// Guarded is a Rig of a stub tool answering out, with Registry's tools, a
// tool typed with an output schema and extra (guardrails, more tools),
// the registry's guardrails and a RecordingAudit.
func Guarded(t testing.TB, out toolrouter.Outcome, extra string) (*Rig, *StubExec, *RecordingAudit) {
	t.Helper()
	reg, err := registry.Parse("test.yaml", []byte(Registry+`  - name: typed
    endpoint: http://127.0.0.1:9/typed
    output_schema: {type: object, properties: {n: {type: integer}}, required: [n]}
`+extra), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	exec := &StubExec{Out: out}
	client := guardrail.NewClient(nil)
	t.Cleanup(client.CloseIdleConnections)
	aud := &RecordingAudit{}
	rt := &Rig{Tools: func() pipeline.Tools { return reg }, Exec: exec, Seq: memory.New(), Audit: aud,
		Guardrails: &guardrail.Guards{Registry: func() guardrail.Registry { return reg }, Client: client}}
	return rt, exec, aud
}
