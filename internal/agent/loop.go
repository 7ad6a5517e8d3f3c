package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// Event is one step of a run, streamed to SSE clients as an event named
// Type whose data is Data (docs/runs.md "Run the whole tool-calling loop";
// api/openapi.yaml, POST /runs).
type Event struct {
	Type EventType
	// Data is *toolrouter.Run (run_started, run_finished), ModelTurn,
	// ToolCallStarted or toolrouter.ToolCallRecord (tool_call_finished).
	Data any
}

// EventType names an Event.
type EventType string

// The events of a run, in the order they come.
const (
	EventRunStarted       EventType = "run_started"
	EventModelTurn        EventType = "model_turn"
	EventToolCallStarted  EventType = "tool_call_started"
	EventToolCallFinished EventType = "tool_call_finished"
	EventRunFinished      EventType = "run_finished"
	// EventAwaitingApproval ends the events of a run that paused for
	// approvals (data: the run, with its pending_approvals); the run goes
	// on, on whichever replica, once they are decided.
	EventAwaitingApproval EventType = "awaiting_approval"
)

// ModelTurn is the data of a model_turn event: what the model answered,
// its tool calls under their canonical names.
type ModelTurn struct {
	Iteration int            `json:"iteration"`
	Content   string         `json:"content"`
	ToolCalls []llm.ToolCall `json:"tool_calls"`
}

// ToolCallStarted is the data of a tool_call_started event: the arguments
// as the tool gets them (the model's plus the actor context's).
type ToolCallStarted struct {
	Iteration      int            `json:"iteration"`
	ProviderCallID string         `json:"provider_call_id"`
	ToolName       string         `json:"tool_name"`
	Arguments      map[string]any `json:"arguments"`
}

// execution is one run being executed: the loop's state between its steps.
type execution struct {
	r        *Runner
	run      *toolrouter.Run
	p        *plan
	log      zerolog.Logger
	mu       sync.Mutex // guards run against the heartbeat
	emitMu   sync.Mutex // events of concurrent tool calls come one at a time
	emitTo   func(Event)
	cancel   context.CancelCauseFunc // ends the run's context (POST /runs/{id}/cancel)
	messages []llm.Message
	lastCall string // the last tool call and how often in a row it came (repeat_limit)
	repeats  int
	found    []string // the names search_tools found and the loop offers since (search_mode: inject)
}

// outcome is how a run ends: its status, the limit that stopped it, its
// error.
type outcome struct {
	status toolrouter.RunStatus
	reason string
	err    string
}

// Execute runs the loop to its end and stores every step. emit (may be
// nil) receives the run's events in order. Cancelling ctx ends the run as
// failed ("run cancelled"), with every record kept.
func (r *Runner) Execute(ctx context.Context, pr *Pending, emit func(Event)) *toolrouter.Run {
	x := r.newExecution(ctx, pr.Run, pr.plan, emit)
	x.emit(EventRunStarted, x.run)
	if x.p.req.System != "" {
		x.messages = append(x.messages, llm.Message{Role: llm.RoleSystem, Content: x.p.req.System})
	}
	x.messages = append(x.messages, llm.Message{Role: llm.RoleUser, Content: x.p.req.Prompt})
	return r.drive(ctx, x, 1, nil)
}

func (r *Runner) newExecution(ctx context.Context, run *toolrouter.Run, p *plan, emit func(Event)) *execution {
	return &execution{r: r, run: run, p: p, emitTo: emit,
		log: zerolog.Ctx(ctx).With().Str("run_id", run.RunID).Str("plan_id", run.Context.PlanID).Logger()}
}

// drive executes x from iteration first to its end (or its pause) while
// heartbeating, traced and counted; before, when set, runs first and may
// end the run.
func (r *Runner) drive(ctx context.Context, x *execution, first int, before func(ctx context.Context) *outcome) *toolrouter.Run {
	endRun := func(*toolrouter.Run) {}
	if r.Tracer != nil {
		ctx, endRun = r.Tracer.Run(ctx, x.run)
	}
	run := r.execute(ctx, x, first, before)
	endRun(run)
	if r.Observer != nil && run.Status != toolrouter.RunAwaitingApproval {
		r.Observer.RunFinished(string(run.Status))
	}
	return run
}

func (r *Runner) execute(ctx context.Context, x *execution, first int, before func(ctx context.Context) *outcome) *toolrouter.Run {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	x.cancel = cancel
	defer r.track(x.run.RunID, x.p.client, cancel)()
	stopBeat := r.heartbeat(ctx, x.run.RunID, cancel, x.log)
	defer stopBeat()

	if before != nil {
		if end := before(ctx); end != nil {
			return x.finish(ctx, *end)
		}
	}
	for iter := first; iter <= x.p.maxIter; iter++ {
		ictx, endIter := ctx, func() {}
		if r.Tracer != nil {
			ictx, endIter = r.Tracer.Iteration(ctx, iter)
		}
		end := x.turn(ictx, iter)
		endIter()
		if end != nil && end.status == toolrouter.RunAwaitingApproval {
			return x.run // paused: stored, and nothing here holds it any more
		}
		if end != nil {
			return x.finish(ctx, *end)
		}
	}
	return x.finish(ctx, outcome{status: toolrouter.RunTerminated, reason: toolrouter.ReasonMaxIterations})
}

// MaxTurnToolCalls is the most tool calls a model may ask for in one
// turn, as many as a POST /route/batch holds.
const MaxTurnToolCalls = 1024

// turn is one iteration: ask the model, run the tools it asked for, answer
// every call. It returns how the run ends, or nil to go on.
func (x *execution) turn(ctx context.Context, iter int) *outcome {
	// Before each model call: a cancel requested on another replica is
	// seen now, not only at the next heartbeat.
	if err := x.r.beat(ctx, x.run.RunID, x.cancel, x.r.every()); err != nil {
		x.log.Warn().Err(err).Msg("run heartbeat")
	}
	if ctx.Err() != nil {
		return cancelled(ctx)
	}
	resp, err := x.ask(ctx, iter)
	if err != nil {
		if ctx.Err() != nil {
			return cancelled(ctx)
		}
		if end, ok := budgetOutcome(err); ok {
			return end
		}
		var pe *llm.ProviderError
		if !errors.As(err, &pe) {
			x.log.Warn().Err(err).Msg("model call failed")
		}
		return &outcome{status: toolrouter.RunFailed, err: err.Error()}
	}
	if len(resp.ToolCalls) == 0 {
		return &outcome{status: toolrouter.RunCompleted}
	}
	if n := len(resp.ToolCalls); n > MaxTurnToolCalls {
		// A model's answer (up to 32 MiB) could otherwise ask for some
		// 150,000 calls, each run, recorded and stored.
		return &outcome{status: toolrouter.RunFailed, err: fmt.Sprintf("the model asked for %d tool calls in one turn; at most %d (as in a batch), none was run", n, MaxTurnToolCalls)}
	}
	x.messages = append(x.messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls, Provider: resp.Provider})
	records := x.callTools(ctx, iter, resp.ToolCalls, x.budget(resp))
	if x.p.inject {
		x.injectFound(records)
	}
	if held(records) {
		return x.pause(ctx, iter, resp.ToolCalls, records)
	}
	budgetRefused := x.addToolCosts(iter, records)
	x.answer(resp.ToolCalls, records)
	x.save(ctx)
	if budgetRefused {
		// A spend limit refused a call of the turn: the run ends here,
		// every call answered (docs/costs.md "Spend limits").
		return &outcome{status: toolrouter.RunTerminated, reason: toolrouter.ReasonBudgetExhausted, err: "a spend limit refused a tool call of the run"}
	}
	return x.checkRepeats(ctx, resp.ToolCalls)
}

// budgeted gives each tool output of the turn its share of the model's
// context window (docs/output-budgets.md "Budgets against the model's
// context window in /runs", shape.RunShare).
func (x *execution) budget(resp llm.Response) toolrouter.OutputBudget {
	used := 0
	if u := resp.Usage; u != nil {
		used = int(u.InputTokens + u.OutputTokens)
	}
	share := shape.RunShare(shape.ContextWindow(x.p.model, x.p.provider.ContextWindow), used, len(resp.ToolCalls))
	return toolrouter.OutputBudget{Tokens: share} // 0: none
}

func cancelled(ctx context.Context) *outcome {
	status := toolrouter.RunFailed
	if errors.Is(context.Cause(ctx), errCancelRequested) {
		status = toolrouter.RunCancelled
	}
	return &outcome{status: status, err: "run cancelled: " + context.Cause(ctx).Error()}
}

// ask sends the conversation to the model and records its answer.
func (x *execution) ask(ctx context.Context, iter int) (llm.Response, error) {
	if msg, over := x.r.overTurns(ctx); over {
		return llm.Response{}, errors.New(msg)
	}
	spend, metered, err := x.reserveTurn(ctx, iter)
	if err != nil {
		return llm.Response{}, err
	}
	resp, err := x.p.adapter.Chat(ctx, llm.Request{Model: x.p.model, Messages: x.messages, Tools: x.p.tools, ToolChoice: x.p.req.ToolChoice})
	if metered && err != nil {
		x.r.Meter.Drop(ctx, spend.Key())
	} else if metered {
		x.settleTurn(ctx, iter, spend, resp.Usage)
	}
	x.mu.Lock()
	x.run.Iterations = iter
	if err == nil {
		addUsage(x.run, resp.Usage)
		x.run.Content = resp.Content
	}
	x.mu.Unlock()
	if err != nil {
		return resp, err
	}
	asked := make([]llm.ToolCall, len(resp.ToolCalls))
	for i, tc := range resp.ToolCalls {
		tc.Name = x.r.canonical(ctx, x.p.view, tc.Name) // the registry's name, not the provider-safe alias
		asked[i] = tc
	}
	x.emit(EventModelTurn, ModelTurn{Iteration: iter, Content: resp.Content, ToolCalls: asked})
	return resp, nil
}

// answer records a turn's tool calls and answers every call id, in call
// order, whatever happened, with the message the provider expects
// (Adapter.FormatToolResult).
func (x *execution) answer(calls []llm.ToolCall, records []toolrouter.ToolCallRecord) {
	x.mu.Lock()
	x.run.ToolCalls = append(x.run.ToolCalls, records...)
	x.mu.Unlock()
	x.reply(calls, records)
}

// reply answers every call id of a turn with its record, in call order.
func (x *execution) reply(calls []llm.ToolCall, records []toolrouter.ToolCallRecord) {
	for i, tc := range calls {
		rec := records[i]
		res := llm.ToolResult{Success: rec.Success}
		if rec.Success {
			res.Output, _ = json.Marshal(rec.Output)
		} else if rec.Error != nil {
			res.Error = *rec.Error
		}
		x.messages = append(x.messages, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Name: tc.Name,
			Content: res.Text(), IsError: !rec.Success, Formatted: x.p.adapter.FormatToolResult(tc.ID, tc.Name, res)})
	}
}

// checkRepeats ends the run when the model made the identical call
// repeat_limit times in a row.
func (x *execution) checkRepeats(ctx context.Context, calls []llm.ToolCall) *outcome {
	limit := x.p.req.RepeatLimit
	if limit <= 0 {
		return nil
	}
	for _, tc := range calls {
		if key := callKey(tc); key == x.lastCall {
			x.repeats++
		} else {
			x.lastCall, x.repeats = key, 1
		}
	}
	if x.repeats < limit {
		return nil
	}
	return &outcome{status: toolrouter.RunTerminated, reason: toolrouter.ReasonRepeatLimit,
		err: fmt.Sprintf("the model repeated the identical call %s %d times in a row", x.r.canonical(ctx, x.p.view, calls[len(calls)-1].Name), x.repeats)}
}

// save stores the run; storing outlives a cancelled request.
func (x *execution) save(ctx context.Context) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.run.HeartbeatAt = x.r.beatAt(x.r.now())
	limit := x.r.MaxRunBytes
	if limit <= 0 {
		limit = DefaultMaxRunBytes
	}
	capRun(x.run, limit)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := x.r.Runs.SaveRun(sctx, x.run); err != nil {
		x.log.Error().Err(err).Msg("save run")
	}
}

// finish ends the run with o, stores it and says so.
func (x *execution) finish(ctx context.Context, o outcome) *toolrouter.Run {
	x.mu.Lock()
	x.run.Status = o.status
	if o.reason != "" {
		x.run.TerminatedReason = &o.reason
		x.run.TerminatedByLimit = true
	}
	if o.err != "" {
		x.run.Error = &o.err
	}
	t := x.r.now()
	x.run.FinishedAt = &t
	x.mu.Unlock()
	x.save(ctx)
	x.emit(EventRunFinished, x.run)
	x.log.Info().Str("status", string(o.status)).Int("iterations", x.run.Iterations).Int("tool_calls", len(x.run.ToolCalls)).Msg("run finished")
	return x.run
}

func (x *execution) emit(t EventType, data any) {
	if x.emitTo == nil {
		return
	}
	x.emitMu.Lock()
	defer x.emitMu.Unlock()
	x.emitTo(Event{Type: t, Data: data})
}

// callTools executes one turn's tool calls concurrently (bounded by
// ToolConcurrency) and returns their records in call order. The calls
// that may run are counted against the client's rate limit together, as
// a batch: over it, none runs, and the refusal is one audit record.
func (x *execution) callTools(ctx context.Context, iter int, calls []llm.ToolCall, budget toolrouter.OutputBudget) []toolrouter.ToolCallRecord {
	var names []string
	for _, tc := range calls {
		if name := x.r.canonical(ctx, x.p.view, tc.Name); x.p.allowed == nil || x.p.allowed[name] {
			names = append(names, name)
		}
	}
	refused, _ := x.r.overLimit(ctx, x.view(), names)
	records := make([]toolrouter.ToolCallRecord, len(calls))
	limit := x.r.ToolConcurrency
	if limit <= 0 {
		limit = 16
	}
	meta := map[string]any{"run_id": x.run.RunID, "provider": x.run.Provider, "model": x.run.Model, "iteration": iter}
	var g errgroup.Group
	g.SetLimit(limit)
	for i, tc := range calls {
		g.Go(func() error {
			records[i] = x.callTool(ctx, iter, tc, meta, budget, refused)
			return nil
		})
	}
	_ = g.Wait()
	return records
}

// callTool executes one tool call through the router and records it;
// refused, when not "", is why the rate limit refused its turn.
func (x *execution) callTool(ctx context.Context, iter int, tc llm.ToolCall, meta map[string]any, budget toolrouter.OutputBudget, refused string) toolrouter.ToolCallRecord {
	args := withActor(tc.Arguments, x.run.Context)
	name := x.r.canonical(ctx, x.p.view, tc.Name)
	x.emit(EventToolCallStarted, ToolCallStarted{Iteration: iter, ProviderCallID: tc.ID, ToolName: name, Arguments: args})
	start := time.Now()
	rec := toolrouter.ToolCallRecord{ProviderCallID: tc.ID, ToolName: name, Inputs: args, Iteration: iter}
	failed := func(msg string, cat toolrouter.ErrorCategory) {
		rec.Error, rec.ErrorCategory = &msg, &cat
		rec.DurationMS = max(float64(time.Since(start).Microseconds())/1000, 0.001)
	}
	if x.p.allowed != nil && !x.p.allowed[name] {
		// Only the tools offered to this run may run, whatever the model
		// (or a prompt injection) asks for.
		failed(fmt.Sprintf("Tool '%s' not found among the tools of this run", tc.Name), toolrouter.CategoryNotFound)
	} else if refused != "" {
		failed(refused, toolrouter.CategoryResource)
	} else if res, err := x.r.Router.Do(ctx, x.request(tc, meta, budget)); err != nil {
		failed("route failed: "+toolrouter.ErrorMessage(err), toolrouter.CategoryExecution)
		x.log.Error().Err(err).Str("tool", tc.Name).Msg("route tool call")
	} else {
		// A call held for approval (res.Status awaiting_approval) pauses
		// the run once the turn's other calls are done (pause.go).
		record(&rec, res)
		if x.p.inject && rec.Success && rec.ToolName == toolrouter.SearchToolsName {
			rec.Output = exportFound(rec.Output)
		}
	}
	x.emit(EventToolCallFinished, rec)
	return rec
}

// request is the pipeline's request of the model's call tc: in the
// provider's own format, within the run's view, its output held to the
// turn's budget, with the actor context's arguments added.
func (x *execution) request(tc llm.ToolCall, meta map[string]any, budget toolrouter.OutputBudget) *toolrouter.CallRequest {
	args := tc.Arguments
	if args == nil {
		args = map[string]any{}
	}
	return &toolrouter.CallRequest{PlanID: x.run.Context.PlanID, Meta: meta, Extra: actorArgs(x.run.Context),
		Call: toolrouter.Call{ToolName: tc.Name, Arguments: args, ProviderCallID: tc.ID, HasProviderCallID: true,
			Format: callFormat(x.p.provider.Kind)},
		View: x.view(), OutputBudget: budget, RunID: x.run.RunID, Entry: toolrouter.EntryRuns}
}

// view is the run's view as the pipeline takes it; nil: the registry.
func (x *execution) view() toolrouter.View {
	if x.p.view == nil {
		return nil
	}
	return x.p.view
}

// record fills rec from the router's result of its call.
func record(rec *toolrouter.ToolCallRecord, res *toolrouter.Result) {
	rec.ToolCallID = res.ToolCallID
	if res.ToolName != "" {
		rec.ToolName = res.ToolName
	}
	rec.Inputs = res.Arguments
	rec.Success = res.Success
	rec.Output = nil
	if len(res.Output) > 0 {
		rec.Output = json.RawMessage(res.Output)
	}
	rec.Error, rec.ErrorCategory = res.Error, res.ErrorCategory
	rec.DurationMS = res.DurationMS
	rec.ApprovalID, rec.Status, rec.ConnectURL = res.ApprovalID, "", ""
	rec.Cost = res.Cost
	switch res.Status {
	case toolrouter.ResultAwaitingApproval:
		rec.Status = toolrouter.ResultAwaitingApproval
	case toolrouter.ResultAuthRequired:
		rec.Status, rec.ConnectURL = toolrouter.ResultAuthRequired, res.ConnectURL
	}
}

// exportFound names the tools a search_tools output lists as the model is
// offered them once found (search_mode: inject): the view's name, such as
// sx/big, is no function name a provider takes, so the model read a name
// it could not call.
func exportFound(out any) any {
	raw, ok := out.(json.RawMessage)
	if !ok {
		return out
	}
	var found struct {
		Tools []vserver.Found `json:"tools"`
	}
	if json.Unmarshal(raw, &found) != nil {
		return out
	}
	for i := range found.Tools {
		found.Tools[i].Name = toolrouter.ExportName(toolrouter.FormatOpenAI, found.Tools[i].Name)
	}
	b, err := json.Marshal(found)
	if err != nil {
		return out
	}
	return json.RawMessage(b)
}

// injectFound adds the tools a turn's search_tools calls found to the
// tools of the next turns (search_mode: inject), with their definitions as
// the view exports them.
func (x *execution) injectFound(records []toolrouter.ToolCallRecord) {
	for _, rec := range records {
		if rec.ToolName != toolrouter.SearchToolsName || !rec.Success {
			continue
		}
		var out struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		b, _ := json.Marshal(rec.Output)
		if json.Unmarshal(b, &out) != nil {
			continue
		}
		for _, f := range out.Tools {
			x.offerFound(f.Name)
		}
	}
}

// offerFound adds the tool a search found to the tools of the next turns,
// once; a resumed run offers again those its state lists.
func (x *execution) offerFound(found string) {
	e, ok := x.p.view.Lookup(found)
	name := toolrouter.ExportName(toolrouter.FormatOpenAI, found)
	if !ok || slices.ContainsFunc(x.p.tools, func(t llm.Tool) bool { return t.Name == name }) {
		return
	}
	x.p.tools = append(x.p.tools, llm.Tool{Name: name, Description: e.Exported.Description, Parameters: e.Exported.InputSchema})
	x.found = append(x.found, found)
}

// callFormat is the format of the tool calls of a provider of kind (a
// registry provider's kind): the calls of a run are recorded in their
// provider's own terms. Ollama's and the Responses API's calls are
// OpenAI's function calls.
func callFormat(kind string) toolrouter.Format {
	switch kind {
	case "anthropic":
		return toolrouter.FormatAnthropic
	case "gemini":
		return toolrouter.FormatGemini
	case "bedrock":
		return toolrouter.FormatBedrock
	}
	return toolrouter.FormatOpenAI
}
