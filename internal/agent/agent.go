// Package agent runs the tool-calling loop of /runs (seed 001): it asks the
// LLM provider for a turn, executes every tool call the model asks for
// through the router, feeds the results back, and stops when the model
// answers or a limit is hit.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// DefaultMaxIterations is the iteration limit of a run that sets none, and
// MaxIterationsLimit the largest a run may ask for.
const (
	DefaultMaxIterations = 10
	MaxIterationsLimit   = 1000
)

// Router executes one tool call (router.Router); extra is added to the
// arguments the tool gets after they were validated.
type Router interface {
	RouteWith(ctx context.Context, planID string, payload any, meta, extra map[string]any) (*toolrouter.Result, error)
}

// Registry is the registry in force: its tools and LLM providers.
type Registry interface {
	Tools() []*toolrouter.Tool
	Lookup(name string) (*toolrouter.Tool, bool)
	Provider(name string) (registry.Provider, bool)
	DefaultProvider() string
}

// Runs stores runs.
type Runs interface {
	SaveRun(ctx context.Context, run *toolrouter.Run) error
	GetRun(ctx context.Context, runID string) (*toolrouter.Run, error)
	ListRuns(ctx context.Context, planID string, limit int) ([]*toolrouter.Run, error)
	InterruptStale(ctx context.Context, before time.Time) (int, error)
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
	Router   Router
	Registry func() Registry
	// Adapter returns the adapter for a provider of the registry.
	Adapter func(p registry.Provider) (llm.Adapter, error)
	Runs    Runs
	// Owner identifies this replica in the runs it owns.
	Owner string
	// Heartbeat is how often a running run says it is alive (default 5s);
	// a run silent for 3 heartbeats is interrupted by any replica.
	Heartbeat time.Duration
	// ToolConcurrency bounds the parallel tool calls of one turn (default 16).
	ToolConcurrency int
	Now             func() time.Time
	Tracer          Tracer   // may be nil
	Observer        Observer // may be nil

	bg sync.WaitGroup // background runs
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
}

// Event is one step of a run, streamed to SSE clients.
type Event struct {
	Type string `json:"-"` // run_started, model_turn, tool_call_started, tool_call_finished, run_finished
	Data any    `json:"-"`
}

// plan is a validated request, ready to run.
type plan struct {
	req      Request
	provider registry.Provider
	adapter  llm.Adapter
	model    string
	maxIter  int
	tools    []llm.Tool
	// allowed are the canonical names of the tools offered, when the
	// request named them; nil means every registry tool.
	allowed map[string]bool
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

// prepare validates a request; errors are EINVALID naming the field.
func (r *Runner) prepare(req Request) (*plan, error) {
	if req.Prompt == "" {
		return nil, toolrouter.Invalid("prompt", "prompt: must be a non-empty string")
	}
	p := &plan{req: req, maxIter: DefaultMaxIterations}
	if req.MaxIterations != nil {
		if *req.MaxIterations < 1 || *req.MaxIterations > MaxIterationsLimit {
			return nil, toolrouter.Invalid("max_iterations", "max_iterations: must be in 1..%d, got %d", MaxIterationsLimit, *req.MaxIterations)
		}
		p.maxIter = *req.MaxIterations
	}
	if req.RepeatLimit < 0 {
		return nil, toolrouter.Invalid("repeat_limit", "repeat_limit: must be >= 0 (0 turns it off), got %d", req.RepeatLimit)
	}
	switch req.ToolChoice {
	case "", "auto", "required", "none":
	default:
		return nil, toolrouter.Invalid("tool_choice", "tool_choice: must be auto, required or none, got %q", req.ToolChoice)
	}
	if req.Context != nil && req.Context.PlanID == "" {
		return nil, toolrouter.Invalid("context.plan_id", "context.plan_id: must be a non-empty string")
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
		return nil, toolrouter.Invalid("provider", "provider: unknown provider %q", name)
	}
	p.provider = prov
	p.model = prov.Model
	if req.Model != "" {
		p.model = req.Model
	}
	adapter, err := r.Adapter(prov)
	if err != nil {
		return nil, toolrouter.Invalid("provider", "provider %q: %v", name, err)
	}
	p.adapter = adapter
	var offered []*toolrouter.Tool
	if req.Tools == nil {
		offered = reg.Tools()
	} else {
		p.allowed = make(map[string]bool, len(req.Tools))
		for i, n := range req.Tools {
			t, ok := reg.Lookup(n)
			if !ok {
				return nil, toolrouter.Invalid(fmt.Sprintf("tools[%d]", i), "tools[%d]: unknown tool %q", i, n)
			}
			offered = append(offered, t)
			p.allowed[t.Name] = true
		}
	}
	for _, t := range offered {
		p.tools = append(p.tools, llm.Tool{
			Name:        toolrouter.ExportName(toolrouter.FormatOpenAI, t.Name),
			Description: t.Description,
			Parameters:  t.InputSchema,
		})
	}
	return p, nil
}

// Start validates a request and stores a new running run for it. The run
// executes when Execute is called with the returned handle.
func (r *Runner) Start(ctx context.Context, req Request) (*Pending, error) {
	p, err := r.prepare(req)
	if err != nil {
		return nil, err
	}
	actor := toolrouter.ActorContext{}
	if req.Context != nil {
		actor = *req.Context
	}
	if actor.PlanID == "" {
		actor.PlanID = "plan_" + randomHex(12)
	}
	now := r.now()
	run := &toolrouter.Run{
		RunID:       "run_" + randomHex(12),
		Status:      toolrouter.RunRunning,
		Provider:    p.provider.Name,
		Model:       p.model,
		ToolCalls:   []toolrouter.ToolCallRecord{},
		Context:     actor,
		Prompt:      req.Prompt,
		CreatedAt:   now,
		Owner:       r.Owner,
		HeartbeatAt: now,
	}
	if err := r.Runs.SaveRun(ctx, run); err != nil {
		return nil, toolrouter.StoreError(fmt.Errorf("save new run: %w", err))
	}
	return &Pending{Run: run, plan: p}, nil
}

// Pending is a started run waiting to be executed.
type Pending struct {
	Run  *toolrouter.Run
	plan *plan
}

// Execute runs the loop to its end and stores every step. emit (may be
// nil) receives the run's events in order. Cancelling ctx ends the run as
// failed ("run cancelled"), with every record kept.
func (r *Runner) Execute(ctx context.Context, pr *Pending, emit func(Event)) *toolrouter.Run {
	if emit == nil {
		emit = func(Event) {}
	}
	run, p := pr.Run, pr.plan
	endRun, endIter := func(*toolrouter.Run) {}, func() {}
	if r.Tracer != nil {
		ctx, endRun = r.Tracer.Run(ctx, run)
	}
	log := zerolog.Ctx(ctx).With().Str("run_id", run.RunID).Str("plan_id", run.Context.PlanID).Logger()
	emit(Event{Type: "run_started", Data: run})

	var mu sync.Mutex // guards run against the heartbeat
	stopBeat := r.heartbeat(ctx, run, &mu, log)
	defer stopBeat()

	save := func() {
		mu.Lock()
		defer mu.Unlock()
		run.HeartbeatAt = r.now()
		// Storing must outlive a cancelled request.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := r.Runs.SaveRun(sctx, run); err != nil {
			log.Error().Err(err).Msg("save run")
		}
	}
	finish := func(status toolrouter.RunStatus, reason string, errMsg string) *toolrouter.Run {
		mu.Lock()
		run.Status = status
		if reason != "" {
			run.TerminatedReason = &reason
			run.TerminatedByLimit = true
		}
		if errMsg != "" {
			run.Error = &errMsg
		}
		t := r.now()
		run.FinishedAt = &t
		mu.Unlock()
		save()
		emit(Event{Type: "run_finished", Data: run})
		endIter()
		endRun(run)
		if r.Observer != nil {
			r.Observer.RunFinished(string(status))
		}
		log.Info().Str("status", string(status)).Int("iterations", run.Iterations).Int("tool_calls", len(run.ToolCalls)).Msg("run finished")
		return run
	}

	messages := make([]llm.Message, 0, 8)
	if p.req.System != "" {
		messages = append(messages, llm.Message{Role: llm.RoleSystem, Content: p.req.System})
	}
	messages = append(messages, llm.Message{Role: llm.RoleUser, Content: p.req.Prompt})
	var lastCall string
	repeats := 0
	for iter := 1; iter <= p.maxIter; iter++ {
		if ctx.Err() != nil {
			return finish(toolrouter.RunFailed, "", "run cancelled: "+context.Cause(ctx).Error())
		}
		ictx := ctx
		if r.Tracer != nil {
			endIter()
			ictx, endIter = r.Tracer.Iteration(ctx, iter)
		}
		resp, err := p.adapter.Chat(ictx, llm.Request{Model: p.model, Messages: messages, Tools: p.tools, ToolChoice: p.req.ToolChoice})
		mu.Lock()
		run.Iterations = iter
		mu.Unlock()
		if err != nil {
			if ctx.Err() != nil {
				return finish(toolrouter.RunFailed, "", "run cancelled: "+context.Cause(ctx).Error())
			}
			var pe *llm.ProviderError
			if !errors.As(err, &pe) {
				log.Warn().Err(err).Msg("model call failed")
			}
			return finish(toolrouter.RunFailed, "", err.Error())
		}
		mu.Lock()
		addUsage(run, resp.Usage)
		run.Content = resp.Content
		mu.Unlock()
		asked := make([]llm.ToolCall, len(resp.ToolCalls))
		for i, tc := range resp.ToolCalls {
			tc.Name = r.canonical(tc.Name) // the registry's name, not the provider-safe alias
			asked[i] = tc
		}
		emit(Event{Type: "model_turn", Data: map[string]any{"iteration": iter, "content": resp.Content, "tool_calls": asked}})
		if len(resp.ToolCalls) == 0 {
			return finish(toolrouter.RunCompleted, "", "")
		}
		messages = append(messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
		records := r.callTools(ictx, run, p, iter, resp.ToolCalls, emit)
		mu.Lock()
		run.ToolCalls = append(run.ToolCalls, records...)
		mu.Unlock()
		// Every call id is answered, in call order, whatever happened.
		for i, tc := range resp.ToolCalls {
			rec := records[i]
			res := llm.ToolResult{Success: rec.Success}
			if rec.Success {
				res.Output, _ = json.Marshal(rec.Output)
			} else if rec.Error != nil {
				res.Error = *rec.Error
			}
			messages = append(messages, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: res.Text(), IsError: !rec.Success})
		}
		save()
		if p.req.RepeatLimit > 0 {
			for _, tc := range resp.ToolCalls {
				key := callKey(tc)
				if key == lastCall {
					repeats++
				} else {
					lastCall, repeats = key, 1
				}
			}
			if repeats >= p.req.RepeatLimit {
				return finish(toolrouter.RunTerminated, toolrouter.ReasonRepeatLimit,
					fmt.Sprintf("the model repeated the identical call %s %d times in a row", r.canonical(resp.ToolCalls[len(resp.ToolCalls)-1].Name), repeats))
			}
		}
	}
	return finish(toolrouter.RunTerminated, toolrouter.ReasonMaxIterations, "")
}

// callTools executes one turn's tool calls concurrently and returns their
// records in call order.
func (r *Runner) callTools(ctx context.Context, run *toolrouter.Run, p *plan, iter int, calls []llm.ToolCall, emit func(Event)) []toolrouter.ToolCallRecord {
	records := make([]toolrouter.ToolCallRecord, len(calls))
	limit := r.ToolConcurrency
	if limit <= 0 {
		limit = 16
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var emitMu sync.Mutex
	meta := map[string]any{"run_id": run.RunID, "provider": run.Provider, "model": run.Model, "iteration": iter}
	for i, tc := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := withActor(tc.Arguments, run.Context)
			name := r.canonical(tc.Name)
			emitMu.Lock()
			emit(Event{Type: "tool_call_started", Data: map[string]any{"iteration": iter, "provider_call_id": tc.ID, "tool_name": name, "arguments": args}})
			emitMu.Unlock()
			start := time.Now()
			rec := toolrouter.ToolCallRecord{ProviderCallID: tc.ID, ToolName: name, Inputs: args, Iteration: iter}
			if p.allowed != nil && !p.allowed[name] {
				// Only the tools offered to this run may run, whatever the
				// model (or a prompt injection) asks for.
				msg := fmt.Sprintf("Tool '%s' not found among the tools of this run", tc.Name)
				cat := toolrouter.CategoryNotFound
				rec.Error, rec.ErrorCategory = &msg, &cat
				rec.DurationMS = max(float64(time.Since(start).Microseconds())/1000, 0.001)
			} else if res, err := r.Router.RouteWith(ctx, run.Context.PlanID, map[string]any{"id": tc.ID, "name": tc.Name, "arguments": tc.Arguments}, meta, actorArgs(run.Context)); err != nil {
				msg := "route failed: " + toolrouter.ErrorMessage(err)
				cat := toolrouter.CategoryExecution
				rec.Error, rec.ErrorCategory = &msg, &cat
				rec.DurationMS = max(float64(time.Since(start).Microseconds())/1000, 0.001)
				zerolog.Ctx(ctx).Error().Err(err).Str("tool", tc.Name).Msg("route tool call")
			} else {
				rec.ToolCallID = res.ToolCallID
				if res.ToolName != "" {
					rec.ToolName = res.ToolName
				}
				rec.Inputs = res.Arguments
				rec.Success = res.Success
				if len(res.Output) > 0 {
					rec.Output = json.RawMessage(res.Output)
				}
				rec.Error, rec.ErrorCategory = res.Error, res.ErrorCategory
				rec.DurationMS = res.DurationMS
			}
			records[i] = rec
			emitMu.Lock()
			emit(Event{Type: "tool_call_finished", Data: rec})
			emitMu.Unlock()
		}()
	}
	wg.Wait()
	return records
}

// canonical is the registry name of a tool the model called under its
// provider-safe alias (the name itself when the registry has no such tool).
func (r *Runner) canonical(name string) string {
	if t, ok := r.Registry().Lookup(name); ok {
		return t.Name
	}
	return name
}

// actorArgs are the arguments the actor context adds to every tool call
// (CONTRACT §4): its sandbox root and resource bindings, when set.
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
	run.Usage.TotalTokens = run.Usage.InputTokens + run.Usage.OutputTokens
}

// callKey identifies a call by name and arguments (encoding/json sorts map
// keys, so equal arguments give equal keys).
func callKey(tc llm.ToolCall) string {
	b, _ := json.Marshal(tc.Arguments)
	return tc.Name + "\x00" + string(b)
}

// heartbeat refreshes the run's heartbeat until stopped.
func (r *Runner) heartbeat(ctx context.Context, run *toolrouter.Run, mu *sync.Mutex, log zerolog.Logger) (stop func()) {
	every := r.Heartbeat
	if every <= 0 {
		every = 5 * time.Second
	}
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
				mu.Lock()
				run.HeartbeatAt = r.now()
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), every)
				if err := r.Runs.SaveRun(sctx, run); err != nil {
					log.Warn().Err(err).Msg("run heartbeat")
				}
				cancel()
				mu.Unlock()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// Get returns a run, first interrupting runs whose replica stopped
// heartbeating.
func (r *Runner) Get(ctx context.Context, id string) (*toolrouter.Run, error) {
	r.reap(ctx)
	run, err := r.Runs.GetRun(ctx, id)
	return run, toolrouter.StoreError(err)
}

// List returns a plan's runs, newest first.
func (r *Runner) List(ctx context.Context, planID string, limit int) ([]*toolrouter.Run, error) {
	if planID == "" {
		return nil, toolrouter.Invalid("plan_id", "plan_id: query parameter required")
	}
	r.reap(ctx)
	runs, err := r.Runs.ListRuns(ctx, planID, limit)
	return runs, toolrouter.StoreError(err)
}

// reap marks as interrupted the running runs whose heartbeat expired.
func (r *Runner) reap(ctx context.Context) {
	every := r.Heartbeat
	if every <= 0 {
		every = 5 * time.Second
	}
	if n, err := r.Runs.InterruptStale(ctx, r.now().Add(-3*every)); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("interrupt stale runs")
	} else if n > 0 {
		zerolog.Ctx(ctx).Info().Int("runs", n).Msg("interrupted runs whose replica stopped")
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
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
