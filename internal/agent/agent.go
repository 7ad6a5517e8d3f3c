// Package agent runs the tool-calling loop of /runs (docs/runs.md "Run the
// whole tool-calling loop"; features/runtime.feature): it asks the LLM
// provider for a turn, executes every tool call the model asks for through
// the router, feeds the results back, and stops when the model answers or a
// limit is hit.
package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/randid"
	"github.com/toolrouterd/toolrouterd/internal/suggest"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// DefaultMaxIterations is the iteration limit of a run that sets none, and
// MaxIterationsLimit the largest a run may ask for.
const (
	DefaultMaxIterations = 10
	MaxIterationsLimit   = 1000
)

// Router takes one tool call through the pipeline (router.Router); the
// request's Extra is added to the arguments the tool gets after they were
// validated.
type Router interface {
	Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error)
}

// Registry is the registry in force: its tools and LLM providers.
type Registry interface {
	Tools() []*toolrouter.Tool
	Lookup(name string) (*toolrouter.Tool, bool)
	Provider(name string) (toolrouter.Provider, bool)
	Providers() []toolrouter.Provider
	DefaultProvider() string
}

// TurnLimiter counts n model turns of client c against its model_turns.
type TurnLimiter interface {
	Take(ctx context.Context, c *access.Client, n int) (access.Verdict, error)
}

// Limiter counts the tool calls of the client in ctx against its rate
// limit (access.Window).
type Limiter interface {
	Take(ctx context.Context, c *access.Client, calls toolrouter.Calls) (access.Verdict, error)
}

// Runs stores runs.
type Runs interface {
	SaveRun(ctx context.Context, run *toolrouter.Run) error
	GetRun(ctx context.Context, runID string) (*toolrouter.Run, error)
	ListRuns(ctx context.Context, planID string, limit int) ([]*toolrouter.Run, error)
	ListClientRuns(ctx context.Context, client, planID string, limit int) ([]*toolrouter.Run, error)
	InterruptStale(ctx context.Context, before time.Time) (int, error)
	Heartbeat(ctx context.Context, runID string, at time.Time) (cancelRequested bool, err error)
	RequestCancel(ctx context.Context, runID string) (*toolrouter.Run, error)
	// TransitionRun replaces a run whose stored status is from, once
	// (store.RunAdmin): how one replica claims a paused run.
	TransitionRun(ctx context.Context, run *toolrouter.Run, from toolrouter.RunStatus) (bool, error)
	// GetResult reads a call's current result by its scoped key: a
	// paused run's held calls, once decided.
	GetResult(ctx context.Context, key string) (*toolrouter.Result, error)
}

// Tracer opens the spans of a run and of its loop iterations
// (telemetry.Telemetry).
type Tracer interface {
	Run(ctx context.Context, run *toolrouter.Run) (context.Context, func(*toolrouter.Run))
	Iteration(ctx context.Context, n int) (context.Context, func())
}

// Observer counts finished runs by status (metrics).
type Observer interface {
	RunFinished(status string)
}

// Runner runs tool-calling loops. Its fields are set once at construction.
type Runner struct {
	// Subjects keeps the caller's JWT of a paused run until it expires
	// (the token vault), so the resumed run can still exchange it (auth
	// mode token_exchange); nil: not kept.
	Subjects Subjects
	Router   Router
	Registry func() Registry
	// Adapter returns the adapter for a provider of the registry.
	Adapter func(p toolrouter.Provider) (llm.Adapter, error)
	Runs    Runs
	// Owner identifies this replica in the runs it owns.
	Owner string
	// Heartbeat is how often a running run says it is alive (default 5s);
	// a run silent for 3 heartbeats is interrupted by any replica.
	Heartbeat time.Duration
	// ToolConcurrency bounds the parallel tool calls of one turn (default 16).
	ToolConcurrency int
	// Limiter, when set, counts every tool call the model makes against
	// the rate limit of the run's client; a call over it is not made.
	Limiter Limiter
	// ModelTurns, when set, counts every model request of a run against
	// the model_turns of the run's client (access.Window or access.Shared
	// counting Client.ModelTurns); a turn over it is not sent and the run
	// fails.
	ModelTurns TurnLimiter
	Now        func() time.Time
	Tracer     Tracer   // may be nil
	Observer   Observer // may be nil
	// MaxActive bounds the runs one client executes at once in this
	// process (default DefaultMaxActive); Start refuses more (429).
	MaxActive int
	// MaxRunBytes caps a run's stored document (default
	// DefaultMaxRunBytes): beyond it outputs and the answer are truncated
	// with a note.
	MaxRunBytes int64
	// Client finds a client by name (access.Clients.ByName): a paused run
	// resumes as the client that started it. Nil: runs of a named client
	// cannot resume.
	Client func(name string) *access.Client
	// Views are the virtual servers of the registry in force (docs/mcp.md
	// "Virtual servers and tool search"); nil: none.
	Views func() *vserver.Set
	// Meter prices model turns and holds them to the spend limits
	// (docs/costs.md); nil: not metered.
	Meter Meter

	bg  sync.WaitGroup // background runs
	mu  sync.Mutex     // guards act
	act active
}

// Request is a POST /runs body.
type Request struct {
	Prompt        string                   `json:"prompt"`
	System        string                   `json:"system,omitempty"`
	Provider      string                   `json:"provider,omitempty"`
	Model         string                   `json:"model,omitempty"`
	MaxIterations *int                     `json:"max_iterations,omitempty"`
	RepeatLimit   int                      `json:"repeat_limit,omitempty"`
	Tools         []string                 `json:"tools,omitempty"`
	ToolChoice    string                   `json:"tool_choice,omitempty"`
	Context       *toolrouter.ActorContext `json:"context,omitempty"`

	// Server names the virtual server whose tools the run offers.
	Server string `json:"server,omitempty"`
	// SearchMode is how the run uses a server in search mode: call (the
	// model calls call_tool) or inject (the tools search_tools found join
	// the next turn's tools); "" takes the provider's search_mode.
	SearchMode string `json:"search_mode,omitempty"`
}

// plan is a validated request, ready to run.
type plan struct {
	req      Request
	provider toolrouter.Provider
	adapter  llm.Adapter
	model    string
	maxIter  int
	tools    []llm.Tool
	// allowed are the canonical names of the tools offered, when the
	// request named them; nil means every registry tool.
	allowed map[string]bool
	client  string // counted against MaxActive
	// view is the virtual server (or search mode) view the run's tools
	// come from; nil: the registry. inject adds the tools search_tools
	// finds to the next turn's.
	view   *vserver.View
	inject bool
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

// Valid reports what is wrong with a request on its own, by field (the
// provider and the tools are checked against the registry by Start).
func (req Request) Valid(context.Context) map[string]string {
	problems := map[string]string{}
	if req.Prompt == "" {
		problems["prompt"] = "must be a non-empty string"
	}
	if m := req.MaxIterations; m != nil && (*m < 1 || *m > MaxIterationsLimit) {
		problems["max_iterations"] = fmt.Sprintf("must be in 1..%d, got %d", MaxIterationsLimit, *m)
	}
	if req.RepeatLimit < 0 {
		problems["repeat_limit"] = fmt.Sprintf("must be >= 0 (0 turns it off), got %d", req.RepeatLimit)
	}
	if req.SearchMode != "" && req.SearchMode != "call" && req.SearchMode != "inject" {
		problems["search_mode"] = fmt.Sprintf("must be call or inject, got %q", req.SearchMode)
	}
	switch req.ToolChoice {
	case "", "auto", "required", "none":
	default:
		problems["tool_choice"] = fmt.Sprintf("must be auto, required or none, got %q", req.ToolChoice)
	}
	if req.Context != nil && req.Context.PlanID == "" {
		problems["context.plan_id"] = "must be a non-empty string"
	} else if req.Context != nil && !toolrouter.ValidPlanID(req.Context.PlanID) {
		problems["context.plan_id"] = fmt.Sprintf("must be at most %d characters, none a control character", toolrouter.MaxPlanID)
	}
	return problems
}

// prepare validates a request; errors are EINVALID naming the field.
func (r *Runner) prepare(ctx context.Context, req Request) (*plan, error) {
	if problems := req.Valid(ctx); len(problems) > 0 {
		return nil, toolrouter.InvalidFields(problems)
	}
	p := &plan{req: req, maxIter: DefaultMaxIterations}
	if req.MaxIterations != nil {
		p.maxIter = *req.MaxIterations
	}
	reg := r.Registry()
	name := req.Provider
	if name == "" {
		name = reg.DefaultProvider()
		if name == "" {
			return nil, toolrouter.Invalid("provider", "provider: the registry defines no LLM providers (add a providers section)")
		}
	}
	prov, ok := reg.Provider(name)
	if !ok {
		return nil, toolrouter.Invalid("provider", "provider: unknown provider %q%s", name, didYouMeanProvider(name, reg.Providers()))
	}
	p.provider = prov
	p.model = prov.Model
	if req.Model != "" {
		p.model = req.Model
	}
	// The client's models scope, before anything reaches the provider
	// (docs/security.md "Model scopes").
	if c := access.FromContext(ctx); !c.AllowsModel(prov.Name, p.model) {
		field := "provider"
		if req.Model != "" {
			field = "model"
		}
		return nil, &toolrouter.Error{Code: toolrouter.EFORBIDDEN, Field: field,
			Message: fmt.Sprintf("client %q may not use model %q of provider %q (%s/%s matches none of its models)", c.Name, p.model, prov.Name, prov.Name, p.model)}
	}
	adapter, err := r.Adapter(prov)
	if err != nil {
		return nil, toolrouter.Invalid("provider", "provider %q: %v", name, err)
	}
	p.adapter = adapter
	// The client in ctx sees only its tools: one outside its scope is
	// neither offered nor accepted in tools, exactly like a missing one.
	client := access.FromContext(ctx)
	if r.Views != nil {
		v, err := r.Views().For(client, req.Server)
		if err != nil {
			return nil, toolrouter.Invalid("server", "server: unknown virtual server %q", req.Server)
		}
		p.view = v
	} else if req.Server != "" {
		return nil, toolrouter.Invalid("server", "server: unknown virtual server %q", req.Server)
	}
	if p.view != nil {
		return p, r.prepareView(p, client)
	}
	var offered []*toolrouter.Tool
	if req.Tools == nil {
		for _, t := range reg.Tools() {
			if client.Allows(t.Name) {
				offered = append(offered, t)
			}
		}
	} else {
		p.allowed = make(map[string]bool, len(req.Tools))
		for i, n := range req.Tools {
			t, ok := reg.Lookup(n)
			if !ok || !client.Allows(t.Name) || t.Quarantine != "" { // quarantined: not offered (docs/trusting-tools.md "Pinned definitions")
				var names []string
				for _, t := range reg.Tools() {
					if client.Allows(t.Name) && t.Quarantine == "" {
						names = append(names, t.Name)
					}
				}
				return nil, unknownTool(i, n, names)
			}
			offered = append(offered, t)
			p.allowed[t.Name] = true
		}
	}
	p.offer(offered)
	return p, nil
}

func (p *plan) offer(tools []*toolrouter.Tool) {
	for _, t := range tools {
		if !t.ModelVisible() {
			continue // an MCP Apps tool for its app only (docs/mcp.md "MCP Apps")
		}
		p.tools = append(p.tools, llm.Tool{
			Name:        toolrouter.ExportName(toolrouter.FormatOpenAI, t.Name),
			Description: t.Description,
			Parameters:  t.InputSchema,
		})
	}
}

// prepareView offers the tools of the run's view: its exported tools
// (those named in tools, else all the client may use), or the
// meta-tools in search mode.
func (r *Runner) prepareView(p *plan, client *access.Client) error {
	v, req := p.view, p.req
	if v.Search {
		if req.Tools != nil {
			return toolrouter.Invalid("tools", "tools: a server in search mode offers search_tools and call_tool; name no tools")
		}
		p.inject = req.SearchMode == "inject" || req.SearchMode == "" && p.provider.SearchMode == "inject"
	}
	if v.Code && req.Tools != nil {
		return toolrouter.Invalid("tools", "tools: a server in code mode offers search_tools and execute_code; name no tools")
	}
	if req.Tools == nil {
		p.offer(v.Tools(client))
		return nil
	}
	p.allowed = make(map[string]bool, len(req.Tools))
	for i, n := range req.Tools {
		e, ok := v.Lookup(n)
		if !ok || !client.Allows(e.Real.Name) {
			var names []string
			for _, t := range v.Tools(client) {
				names = append(names, t.Name)
			}
			return unknownTool(i, n, names)
		}
		p.offer([]*toolrouter.Tool{e.Exported})
		p.allowed[e.Real.Name] = true
	}
	return nil
}

// Start validates a request and stores a new running run for it. The run
// executes when Execute is called with the returned handle.
func (r *Runner) Start(ctx context.Context, req Request) (*Pending, error) {
	p, err := r.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	client, err := r.admit(ctx)
	if err != nil {
		return nil, err
	}
	p.client = client
	actor := toolrouter.ActorContext{}
	if req.Context != nil {
		actor = *req.Context
	}
	if actor.PlanID == "" {
		actor.PlanID = "plan_" + randid.Hex(12)
	}
	now := r.now()
	run := &toolrouter.Run{
		RunID:       "run_" + randid.Hex(12),
		Status:      toolrouter.RunRunning,
		Provider:    p.provider.Name,
		Model:       p.model,
		ToolCalls:   []toolrouter.ToolCallRecord{},
		Context:     actor,
		Prompt:      req.Prompt,
		CreatedAt:   now,
		Owner:       r.Owner,
		HeartbeatAt: r.beatAt(now),
		Client:      access.FromContext(ctx).LabelName(),
	}
	if err := r.Runs.SaveRun(ctx, run); err != nil {
		r.track(run.RunID, client, nil)() // not admitted after all
		return nil, toolrouter.StoreError(fmt.Errorf("save new run: %w", err))
	}
	return &Pending{Run: run, plan: p}, nil
}

// Pending is a started run waiting to be executed.
type Pending struct {
	Run  *toolrouter.Run
	plan *plan
}

// canonical is the registry name of a tool the model called under its
// provider-safe alias (the name itself when the registry has no such tool,
// or the tool is outside the scope of the client in ctx).
func (r *Runner) canonical(ctx context.Context, v *vserver.View, name string) string {
	if v != nil {
		if e, ok := v.Lookup(name); ok && access.FromContext(ctx).Allows(e.Real.Name) {
			return e.Real.Name
		}
		return name
	}
	if t, ok := r.Registry().Lookup(name); ok && access.FromContext(ctx).Allows(t.Name) {
		return t.Name
	}
	return name
}

// overLimit counts the tool calls of a turn (their tools' names) of the
// run's client; over its rate limit it returns the message their records
// get instead of results.
func (r *Runner) overLimit(ctx context.Context, view toolrouter.View, names []string) (string, bool) {
	if r.Limiter == nil || len(names) == 0 {
		return "", false
	}
	c := access.FromContext(ctx)
	v, err := r.Limiter.Take(ctx, c, toolrouter.Calls{N: len(names), Entry: toolrouter.EntryRuns, View: view, Names: func() []string { return names }})
	if err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("rate limiter")
		return "rate limiter unavailable; the tool was not called", true
	}
	if !v.Allowed {
		return v.Message(c.LabelName()), true
	}
	return "", false
}

// overTurns counts one model turn of the run's client; over its
// model_turns it returns the message the run fails with, and the turn is
// not sent.
func (r *Runner) overTurns(ctx context.Context) (string, bool) {
	if r.ModelTurns == nil {
		return "", false
	}
	c := access.FromContext(ctx)
	v, err := r.ModelTurns.Take(ctx, c, 1)
	if err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("model turn limiter")
		return "model turn limiter unavailable; the model was not asked", true
	}
	if !v.Allowed {
		return v.TurnsMessage(c.LabelName()), true
	}
	return "", false
}

// actorArgs are the arguments the actor context adds to every tool call
// (docs/runs.md "Run the whole tool-calling loop"): its sandbox root and resource bindings, when set.
func actorArgs(actor toolrouter.ActorContext) map[string]any {
	out := map[string]any{}
	if actor.SandboxRoot != "" {
		out["sandbox_root"] = actor.SandboxRoot
	}
	if actor.ResourceBindings != nil {
		out["resource_bindings"] = actor.ResourceBindings
	}
	return out
}

// withActor is a call's arguments as the tool gets them: the model's plus
// the actor context's, without touching the model's map.
func withActor(args map[string]any, actor toolrouter.ActorContext) map[string]any {
	extra := actorArgs(actor)
	out := make(map[string]any, len(args)+len(extra))
	for k, v := range args {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func addUsage(run *toolrouter.Run, u *llm.Usage) {
	if u == nil {
		return
	}
	if run.Usage == nil {
		run.Usage = &toolrouter.Usage{}
	}
	run.Usage.InputTokens += u.InputTokens
	run.Usage.OutputTokens += u.OutputTokens
	run.Usage.CachedInputTokens += u.CachedInputTokens
	run.Usage.TotalTokens = run.Usage.InputTokens + run.Usage.OutputTokens
}

// callKey identifies a call by name and arguments (encoding/json sorts map
// keys, so equal arguments give equal keys).
func callKey(tc llm.ToolCall) string {
	b, _ := json.Marshal(tc.Arguments)
	return tc.Name + "\x00" + string(b)
}

// heartbeat refreshes the run's heartbeat (one column of the store) until
// stopped, and cancels the run when its cancellation was requested.
func (r *Runner) heartbeat(ctx context.Context, runID string, cancel context.CancelCauseFunc, log zerolog.Logger) (stop func()) {
	every := r.every()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := r.beat(ctx, runID, cancel, every); err != nil {
					log.Warn().Err(err).Msg("run heartbeat")
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// defaultHeartbeat is Heartbeat's default.
const defaultHeartbeat = 5 * time.Second

func (r *Runner) every() time.Duration {
	if r.Heartbeat <= 0 {
		return defaultHeartbeat
	}
	return r.Heartbeat
}

// beatAt is what a run's heartbeat column holds when this replica says at
// now that the run is alive: now, shifted by 3 × (this replica's interval
// − the default). Replicas may run with different intervals (a rolling
// change of TOOLROUTER_RUN_HEARTBEAT): reap, on any replica, interrupts a
// run whose column is older than 3 default intervals, that is, one silent
// for 3 intervals of the replica running it, never of the one reaping.
// With the default interval the column holds now itself.
func (r *Runner) beatAt(now time.Time) time.Time {
	return now.Add(3 * (r.every() - defaultHeartbeat))
}

// Get returns a run, first interrupting runs whose replica stopped
// heartbeating.
func (r *Runner) Get(ctx context.Context, id string) (*toolrouter.Run, error) {
	return r.get(ctx, id, true)
}

// get returns a run the caller sees; read says the caller only reads it,
// so an approver may see a run that waits for its decision too.
func (r *Runner) get(ctx context.Context, id string, read bool) (*toolrouter.Run, error) {
	r.reap(ctx)
	run, err := r.Runs.GetRun(ctx, id)
	if c := access.FromContext(ctx); err == nil && !sees(c, run) && !(read && decides(c, run)) {
		// Another client's run is a run that does not exist (docs/security.md "Clients").
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "run %q not found", id)
	}
	if err == nil && run.Status == toolrouter.RunAwaitingApproval {
		// Its approvals may be decided while the replica that decided the
		// last one stopped before resuming it: whoever reads it, resumes it.
		r.ResumeLater(ctx, id)
	}
	return run, toolrouter.StoreError(err)
}

// decides reports whether c, an approver, may decide an approval run waits
// for: it reads such a run (read-only) to decide, so the console's link
// from an approval to its run works (issue 21 item 14). Its own calls' are
// for others to decide, but c sees its own runs anyway.
func decides(c *access.Client, run *toolrouter.Run) bool {
	return c.MayApprove() && run.Status == toolrouter.RunAwaitingApproval && len(run.PendingApprovals) > 0
}

// sees reports whether c may read and act on run: its own, or any when c
// is an admin or the caller of an open service. An approver reads (only)
// the runs that wait for its decision: decides.
func sees(c *access.Client, run *toolrouter.Run) bool {
	return c == nil || c.Admin || run.Client == c.Name
}

// List returns a plan's runs (every plan's when planID is ""), newest
// first: a client's own, every client's for an admin.
func (r *Runner) List(ctx context.Context, planID string, limit int) ([]*toolrouter.Run, error) {
	r.reap(ctx)
	var runs []*toolrouter.Run
	var err error
	if c := access.FromContext(ctx); c == nil || c.Admin {
		runs, err = r.Runs.ListRuns(ctx, planID, limit)
	} else {
		runs, err = r.Runs.ListClientRuns(ctx, c.Name, planID, limit)
	}
	return runs, toolrouter.StoreError(err)
}

// reap marks as interrupted the running runs whose heartbeat expired:
// silent for 3 heartbeats of their own replica (beatAt).
func (r *Runner) reap(ctx context.Context) {
	if n, err := r.Runs.InterruptStale(ctx, r.now().Add(-3*defaultHeartbeat)); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("interrupt stale runs")
	} else if n > 0 {
		zerolog.Ctx(ctx).Info().Int("runs", n).Msg("interrupted runs whose replica stopped")
	}
}

// Background executes a pending run detached from the request that started
// it; Wait waits for every background run.
func (r *Runner) Background(ctx context.Context, pr *Pending) {
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		r.Execute(context.WithoutCancel(ctx), pr, nil)
	}()
}

// Wait blocks until every background run finished or ctx is done.
func (r *Runner) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { r.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// unknownTool is the error of tools[i], n, naming no tool the run's
// client may be offered, with the closest of names (those it may be
// offered: never one out of its scope, so that the answer for a tool out
// of scope stays that for a missing one) when one is close.
func unknownTool(i int, n string, names []string) error {
	field := fmt.Sprintf("tools[%d]", i)
	if s, ok := suggest.Closest(n, names); ok {
		return toolrouter.Invalid(field, "%s: unknown tool %q; did you mean %q?", field, n, s)
	}
	return toolrouter.Invalid(field, "%s: unknown tool %q", field, n)
}

// didYouMeanProvider is "; did you mean "x"?" for the provider of the
// registry closest to a misspelt name, "" when none is close. Provider
// names are not hidden from clients (a model scope's refusal names the
// provider), so every provider is a candidate.
func didYouMeanProvider(name string, providers []toolrouter.Provider) string {
	names := make([]string, len(providers))
	for i, p := range providers {
		names[i] = p.Name
	}
	if s, ok := suggest.Closest(name, names); ok {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}
