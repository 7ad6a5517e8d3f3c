package router_test

import (
	"context"
	"sync"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/approval"
	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/guardrail"
	"github.com/toolrouterd/toolrouterd/internal/lograte"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/router"
	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// rig is a router with the pipeline service.New builds, made on first
// use from its fields, and the edges' part: the payloads of its Route,
// Stream, RouteWith and Batch are normalised as /route normalises them,
// and what the test's context names with the helpers below (a view, a
// budget, an entry point, a relay, a run) goes into the CallRequest, as
// the edges put them there.
type rig struct {
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
	Shape               *shape.Shaper
	Now                 func() time.Time

	once   sync.Once
	rt     *router.Router
	keeper *approval.Keeper
}

func (g *rig) build() {
	g.once.Do(func() {
		fin := &router.Finisher{Results: g.Results, Observer: g.Observer, Audit: g.Audit, LogLimit: g.LogLimit, Now: g.Now}
		var results approval.Results
		if g.Results != nil {
			results = g.Results
		}
		g.keeper = &approval.Keeper{Store: g.Approvals, Results: results, Finish: fin, Tools: func() approval.Tools { return g.Tools() },
			TTL: g.ApprovalTTL, MaxPending: g.MaxPendingApprovals, Client: g.Client, Views: g.Views, Settled: g.Settled, Now: g.Now}
		stages := []toolrouter.Stage{pipeline.Resolve(g.Tools), pipeline.Validate}
		if g.Guardrails != nil {
			stages = append(stages, g.Guardrails.BeforeStage)
		}
		if g.Approvals != nil {
			stages = append(stages, g.keeper.Stage)
		}
		stages = append(stages, pipeline.BatchBudget)
		if g.Shape != nil {
			stages = append(stages, g.Shape.Stage)
		}
		if g.Guardrails != nil {
			stages = append(stages, g.Guardrails.RedactStage, g.Guardrails.AfterStage)
		}
		stages = append(stages, pipeline.CheckOutput)
		g.rt = router.New(router.Options{Exec: g.Exec, MCP: g.MCP, Seq: g.Seq, Finish: fin, Tracer: g.Tracer, Stages: stages,
			BatchConcurrency: g.BatchConcurrency, MaxBatchOutput: g.MaxBatchOutput})
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

func inView(ctx context.Context, v *vserver.View) context.Context {
	return with(ctx, func(in *rigInputs) {
		if v != nil {
			in.view = v
		}
	})
}

func withBudget(ctx context.Context, b toolrouter.OutputBudget) context.Context {
	return with(ctx, func(in *rigInputs) { in.budget = b })
}

func withEntry(ctx context.Context, e string) context.Context {
	return with(ctx, func(in *rigInputs) { in.entry = e })
}

func withRelay(ctx context.Context, r *toolrouter.Relay) context.Context {
	return with(ctx, func(in *rigInputs) { in.relay = r })
}

func withRunID(ctx context.Context, id string) context.Context {
	return with(ctx, func(in *rigInputs) { in.runID = id })
}

// request is payload's CallRequest as an edge makes it in ctx.
func request(ctx context.Context, planID string, payload any, meta map[string]any) *toolrouter.CallRequest {
	call, err := format.Normalize(payload)
	in := inputsOf(ctx)
	return &toolrouter.CallRequest{PlanID: planID, Call: call, Unreadable: err, Meta: meta, View: in.view,
		OutputBudget: in.budget, Entry: in.entry, Relay: in.relay, RunID: in.runID}
}

func (g *rig) Route(ctx context.Context, planID string, payload any, meta map[string]any) (*toolrouter.Result, error) {
	g.build()
	return g.rt.Do(ctx, request(ctx, planID, payload, meta))
}

func (g *rig) Stream(ctx context.Context, planID string, payload any, meta map[string]any, emit func(toolrouter.Update)) (*toolrouter.Result, error) {
	g.build()
	req := request(ctx, planID, payload, meta)
	req.Emit = emit
	return g.rt.Do(ctx, req)
}

func (g *rig) RouteWith(ctx context.Context, planID string, payload any, meta, extra map[string]any) (*toolrouter.Result, error) {
	g.build()
	req := request(ctx, planID, payload, meta)
	req.Extra = extra
	return g.rt.Do(ctx, req)
}

func (g *rig) Batch(ctx context.Context, planID string, payloads []any, meta map[string]any) ([]*toolrouter.Result, error) {
	g.build()
	reqs := make([]*toolrouter.CallRequest, len(payloads))
	for i, p := range payloads {
		reqs[i] = request(ctx, planID, p, meta)
	}
	return g.rt.Batch(ctx, planID, reqs)
}

func (g *rig) Decide(ctx context.Context, id string, approve bool, reason string) (*toolrouter.Approval, *toolrouter.Result, error) {
	g.build()
	return g.keeper.Decide(ctx, id, approve, reason)
}

func (g *rig) ExpireDue(ctx context.Context) (int, error) {
	g.build()
	return g.keeper.ExpireDue(ctx)
}

func (g *rig) SettleAbandoned(ctx context.Context) (int, error) {
	g.build()
	return g.keeper.SettleAbandoned(ctx)
}

func (g *rig) WatchDecision(ctx context.Context, toolCallID string) (<-chan struct{}, func()) {
	g.build()
	return g.keeper.WatchDecision(ctx, toolCallID)
}

func (g *rig) Result(ctx context.Context, toolCallID, owner string) (*toolrouter.Result, error) {
	g.build()
	return g.keeper.Result(ctx, toolCallID, owner)
}

func (g *rig) Canonical(ctx context.Context, name string) string {
	return pipeline.Canonical(ctx, g.Tools(), inputsOf(ctx).view, name)
}
