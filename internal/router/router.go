// Package router routes provider-shaped tool calls to registry tools: it
// normalizes the call, gives it a stable id, validates the arguments,
// executes the tool and classifies the outcome.
package router

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/lograte"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// Tools looks tools up by canonical name or provider alias.
type Tools interface {
	Lookup(name string) (*toolrouter.Tool, bool)
}

// Executor runs one call on a tool's backend.
type Executor interface {
	Call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome
}

// Sequencer hands out per-plan sequences.
type Sequencer interface {
	NextSequence(ctx context.Context, planID string) (int64, error)
	NextSequences(ctx context.Context, planID string, n int64) (first int64, err error)
}

// Observer records tool call outcomes (metrics) by client (a configured
// client name, "" when the service is open); ctx is the call's, with its
// span (an exemplar).
type Observer interface {
	ToolCall(ctx context.Context, client, tool, outcome string, d time.Duration)
}

// Tracer opens the span of one tool call (telemetry.Telemetry.ToolCall).
type Tracer interface {
	ToolCall(ctx context.Context, planID string, seq int64, id string) (context.Context, func(*toolrouter.Result))
}

// Results keeps route results by tool_call_id, each with the audit records
// of its call in the same transaction.
type Results interface {
	SaveResult(ctx context.Context, res *toolrouter.Result, audit ...toolrouter.AuditRecord) error
}

// Auditor writes the audit record of each tool call attempt (audit.Trail);
// save, when not nil, stores the records with the call's result.
type Auditor interface {
	RecordWith(ctx context.Context, save toolrouter.AuditSaver, recs ...toolrouter.AuditRecord)
}

// Router routes tool calls. Its fields are set once at construction.
type Router struct {
	Tools            func() Tools // the registry in force (it may be swapped by a reload)
	Exec             Executor     // HTTP tools
	MCP              Executor     // tools of MCP servers (Tool.MCPServer set); nil: MCP is not enabled
	Seq              Sequencer
	Results          Results  // may be nil
	Observer         Observer // may be nil
	Tracer           Tracer   // may be nil
	Audit            Auditor  // may be nil
	BatchConcurrency int      // tool calls of one batch executed at once (at least 1)
	// MaxBatchOutput caps the output bytes the results of one batch hold
	// together (TOOLROUTER_MAX_BATCH_OUTPUT_BYTES); a call whose output
	// does not fit fails as resource. 0 means no cap.
	MaxBatchOutput int64
	saves          toolrouter.Saves // the contexts of result saves
	final          sync.Map         // ids of approved approvals whose result is final (SettleAbandoned)
	// Guardrails run before and after every call (docs/trusting-tools.md "Trusting
	// tools"); nil: none.
	Guardrails Guardrails
	// Approvals holds the calls that wait for an approver (docs/approvals.md
	// "Approvals"); nil: no call waits.
	Approvals Approvals
	// ApprovalTTL is how long a call waits before it expires
	// (TOOLROUTER_APPROVAL_TTL, default 1h).
	ApprovalTTL time.Duration
	// MaxPendingApprovals caps the pending approvals of one client
	// (TOOLROUTER_MAX_PENDING_APPROVALS): a call over it fails as resource
	// instead of being held. 0 means no cap.
	MaxPendingApprovals int
	holdMu              sync.Mutex // serializes holding calls while MaxPendingApprovals is set
	waiters             waiters    // streams waiting for a decision made here
	// Settled, when set, hears of every decided (or expired) approval of a
	// /runs run once its final result is stored and committed: the run
	// resumes (agent.Runner.ResumeLater).
	Settled func(ctx context.Context, a *toolrouter.Approval)
	// LogLimit rate-limits the errors of a failing store (a flood of
	// failed saves is a few lines with a count); nil: not limited.
	LogLimit *lograte.Limiter
	// Client finds a client by name (access.Clients.ByName): an approved
	// call runs only while its client exists and may call the tool. Nil:
	// no named client's approved call runs.
	Client func(name string) *access.Client
	// Shape fits outputs into their tool's budget (docs/output-budgets.md "Output
	// budgets"); nil: outputs are never shaped.
	Shape Shaper
	// Views are the virtual servers in force: an approved call of a
	// client bound to them runs only while one of them holds the tool.
	// Nil: no bound client's approved call runs.
	Views func() *vserver.Set
	Now   func() time.Time
}

// Route routes one tool call payload (a decoded JSON value, or a
// *format.Normalized call) for a plan.
// A payload that is not an object, or an empty plan id, is an EINVALID
// error; everything that goes wrong with the call itself is a Result with
// success false.
func (r *Router) Route(ctx context.Context, planID string, payload any, meta map[string]any) (*toolrouter.Result, error) {
	return r.Stream(ctx, planID, payload, meta, nil)
}

// RouteWith routes one call like Route and adds extra to the arguments the
// tool receives after they were validated against its input schema: the
// actor context's sandbox_root and resource_bindings of /runs (CONTRACT §4)
// are the service's additions, not the model's, and a tool with a strict
// schema must still accept the model's call.
func (r *Router) RouteWith(ctx context.Context, planID string, payload any, meta, extra map[string]any) (*toolrouter.Result, error) {
	if err := checkPayload(planID, payload); err != nil {
		return nil, err
	}
	seq, err := r.Seq.NextSequence(ctx, planKey(ctx, planID))
	if err != nil {
		return nil, toolrouter.StoreError(fmt.Errorf("allocate sequence for plan %q: %w", planID, err))
	}
	return r.route(ctx, planID, seq, payload, meta, nil, extra), nil
}

// Stream routes one call like Route and reports its progress to emit:
// pending once the id is assigned, running before the tool is called, then
// complete when the tool answered (successfully or with a failure it
// reported) or error when the call could not be made or the tool gave no
// usable answer.
func (r *Router) Stream(ctx context.Context, planID string, payload any, meta map[string]any, emit func(toolrouter.Update)) (*toolrouter.Result, error) {
	if err := checkPayload(planID, payload); err != nil {
		return nil, err
	}
	seq, err := r.Seq.NextSequence(ctx, planKey(ctx, planID))
	if err != nil {
		return nil, toolrouter.StoreError(fmt.Errorf("allocate sequence for plan %q: %w", planID, err))
	}
	return r.route(ctx, planID, seq, payload, meta, emit, nil), nil
}

// Batch routes several calls of one plan concurrently (bounded by
// BatchConcurrency) and returns their results in input order. Sequences are
// allocated in input order before any call runs.
func (r *Router) Batch(ctx context.Context, planID string, payloads []any, meta map[string]any) ([]*toolrouter.Result, error) {
	if err := checkPlanID(planID); err != nil {
		return nil, err
	}
	if payloads == nil {
		return nil, toolrouter.Invalid("tool_calls", "tool_calls must be a list")
	}
	for i, p := range payloads {
		if _, ok := p.(map[string]any); !ok {
			return nil, toolrouter.Invalid(fmt.Sprintf("tool_calls[%d]", i), "tool_calls[%d]: payload must be a dict (JSON object), got %s", i, toolrouter.JSONKind(p))
		}
	}
	results := make([]*toolrouter.Result, len(payloads))
	if len(payloads) == 0 {
		return results, nil
	}
	// One contiguous block of sequences, in input order, in one statement.
	first, err := r.Seq.NextSequences(ctx, planKey(ctx, planID), int64(len(payloads)))
	if err != nil {
		return nil, toolrouter.StoreError(fmt.Errorf("allocate sequences for plan %q: %w", planID, err))
	}
	if r.MaxBatchOutput > 0 {
		ctx = toolrouter.WithBudget(ctx, toolrouter.NewBudget(r.MaxBatchOutput))
	}
	var g errgroup.Group
	g.SetLimit(max(r.BatchConcurrency, 1))
	for i, p := range payloads {
		g.Go(func() error {
			results[i] = r.route(ctx, planID, first+int64(i), p, meta, nil, nil)
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

func checkPayload(planID string, payload any) error {
	if err := checkPlanID(planID); err != nil {
		return err
	}
	if _, ok := payload.(*format.Normalized); ok {
		return nil
	}
	if _, ok := payload.(map[string]any); !ok {
		return toolrouter.Invalid("tool_call", "tool_call: payload must be a dict (JSON object), got %s", toolrouter.JSONKind(payload))
	}
	return nil
}

// checkPlanID refuses a plan id before any sequence of it is taken.
func checkPlanID(planID string) error {
	if !toolrouter.ValidPlanID(planID) {
		return toolrouter.Invalid("plan_id", "plan_id must be a string of 1 to %d characters without control characters", toolrouter.MaxPlanID)
	}
	return nil
}

// noMetadata is the provider_metadata ({}) of calls sent without one. It is
// only read, like the map of a call that has one, which every result of its
// batch shares.
var noMetadata = map[string]any{}

// routed is a result with room for what its pointer fields point to, so
// that a route allocates them together.
type routed struct {
	res            toolrouter.Result
	providerCallID string
	errMsg         string
	errCat         toolrouter.ErrorCategory
	// The saving of the result (SaveAudited): the router and the route's
	// context, for its log.
	router *Router
	ctx    context.Context
	// full is the whole output of a shaped one: stored, not answered.
	full json.RawMessage
}

// SaveAudited stores the result with its audit records (Results).
func (x *routed) SaveAudited(sctx context.Context, recs []toolrouter.AuditRecord) error {
	res := &x.res
	if x.full != nil {
		stored := x.res
		stored.FullOutput, stored.JSON = x.full, nil
		res = &stored
	}
	err := x.router.Results.SaveResult(sctx, res, recs...)
	if err != nil {
		x.router.LogLimit.Event(zerolog.Ctx(x.ctx), zerolog.ErrorLevel, "store route result").Err(err).Str("tool_call_id", x.res.ToolCallID).Int("audit_records", len(recs)).Msg("store route result")
	}
	return err
}

// routeCall is the state of one route between its steps.
type routeCall struct {
	// cred is the backend credential the call was made with, for its
	// audit record (nil: static headers).
	cred  *toolrouter.CredentialUse
	now   func() time.Time
	start time.Time
	id    string
	call  toolrouter.Call
	emit  func(toolrouter.Update) // nil when not streaming
	r     *routed
	// denied names the tool that exists but is outside the client's
	// scope, for the audit record only ("" when not denied).
	denied string
	// sentName is the name the call came under when a view rewrote it
	// (call_tool); "" when it did not.
	sentName string
	// argsSHA256 is the digest of the arguments the tool got, when the
	// route encoded them ("": auditRecord digests res.Arguments).
	argsSHA256 string
	// guards are the guardrails' decisions and notes what they changed in
	// the output (docs/trusting-tools.md "Trusting tools").
	guards []toolrouter.GuardrailDecision
	notes  []string
}

// route does the work of one call whose sequence is allocated.
func (r *Router) route(ctx context.Context, planID string, seq int64, payload any, meta map[string]any, emit func(toolrouter.Update), extra map[string]any) *toolrouter.Result {
	rc := routeCall{now: r.now(), emit: emit, r: &routed{}}
	rc.start = rc.now()
	rc.id, _ = toolrouter.ToolCallID(planID, seq) // planID and seq are valid here
	id := rc.id
	res := &rc.r.res
	if r.Tracer != nil {
		var end func(*toolrouter.Result)
		ctx, end = r.Tracer.ToolCall(ctx, planID, seq, id)
		defer end(res)
	}
	res.ToolCallID = id
	res.Client = access.FromContext(ctx).LabelName()
	res.PlanID = planID
	res.Sequence = seq
	res.ProviderMetadata = meta
	if res.ProviderMetadata == nil {
		res.ProviderMetadata = noMetadata
	}

	var err error
	rc.call, err = format.Normalize(payload)
	res.ProviderFormat = rc.call.Format
	res.ToolName = rc.call.ToolName // "" when the name itself was unreadable
	res.Arguments = rc.call.Arguments
	if err != nil {
		res.Arguments = map[string]any{}
	}
	if rc.call.HasProviderCallID { // even "": answered as the provider sent it
		rc.r.providerCallID = rc.call.ProviderCallID
		res.ProviderCallID = &rc.r.providerCallID
	}
	if emit != nil {
		emit(toolrouter.Update{ToolCallID: id, Status: toolrouter.StatusPending, ToolName: res.ToolName})
	}

	if err != nil {
		return r.finish(ctx, &rc, toolrouter.Outcome{Err: err.Error(), Category: toolrouter.CategoryParse}, false)
	}
	sent := rc.call.ToolName
	tool, local, ok := r.lookup(ctx, &rc.call)
	if rc.call.ToolName != sent {
		rc.sentName = sent
	}
	res.ToolName, res.Arguments = rc.call.ToolName, rc.call.Arguments // a view's call_tool unwrapped, defaults filled in
	if local != nil {
		return r.finish(ctx, &rc, *local, local.Answered)
	}
	// A tool outside the scope of the client in ctx is a tool that does
	// not exist: same result, not called (docs/security.md "Clients").
	if !ok || !access.FromContext(ctx).Allows(tool.Name) {
		if ok {
			rc.denied = tool.Name
		}
		return r.finish(ctx, &rc, toolrouter.Outcome{Err: fmt.Sprintf("Tool '%s' not found", rc.call.ToolName), Category: toolrouter.CategoryNotFound}, false)
	}
	res.ToolName = tool.Name
	res.IsValidation = tool.Kind == toolrouter.KindValidation
	if tool.ValidateArgs != nil {
		if err := tool.ValidateArgs(rc.call.Arguments); err != nil {
			return r.finish(ctx, &rc, toolrouter.Outcome{Err: err.Error(), Category: toolrouter.CategorySchema}, false)
		}
	}
	if len(extra) > 0 {
		// A run's actor context: added to the arguments, except those a
		// virtual server fixes (hidden or defaulted), which no caller sets.
		v := vserver.FromContext(ctx)
		args := make(map[string]any, len(rc.call.Arguments)+len(extra))
		for k, val := range rc.call.Arguments {
			args[k] = val
		}
		for k, val := range extra {
			if v == nil || !v.Fixes(rc.call.ToolName, k) {
				args[k] = val
			}
		}
		rc.call.Arguments, res.Arguments = args, args
	}
	// Before-hooks see the arguments as the tool would get them, validated;
	// a denied call waits for no approver and never reaches the tool.
	if out, denied := r.guardBefore(ctx, &rc, tool); denied {
		return r.finish(ctx, &rc, out, false)
	}
	if r.needsApproval(ctx, tool) {
		return r.hold(ctx, &rc)
	}
	req := toolrouter.ExecRequest{Tool: tool, Args: rc.call.Arguments, PlanID: planID, ToolCallID: id}
	// Encoded once: the audit record's digest and the arguments the
	// backend sends.
	if r.Audit != nil {
		if b, sum, err := toolrouter.CanonicalArguments(rc.call.Arguments); err == nil {
			req.ArgsJSON, rc.argsSHA256 = b, sum
		}
	}
	if emit != nil {
		emit(toolrouter.Update{ToolCallID: id, Status: toolrouter.StatusRunning, ToolName: tool.Name})
		req.Progress = func(progress, total float64, message string) {
			u := toolrouter.Update{ToolCallID: id, Status: toolrouter.StatusRunning, ToolName: tool.Name, Message: message, Progress: &progress}
			if total > 0 {
				u.Total = &total
			}
			emit(u)
		}
	}
	// The output is checked, hooked and redacted whole, then shaped to its
	// budget: the schema holds for the whole output, and the full copy kept
	// for GET /results holds no secret a guardrail redacted.
	out := r.shape(ctx, req, r.afterExec(ctx, &rc, tool, r.exec(r.redactReports(ctx, &rc, tool, &req), req)))
	// An executor that does not take from the batch's budget itself (MCP)
	// is held to it here.
	if b := toolrouter.BudgetFrom(ctx); b != nil && out.Success() && !out.Budgeted && !b.Take(int64(len(out.Output))) {
		status, attempts := out.Status, out.Attempts
		out = b.Exceeded(int64(len(out.Output)))
		out.Status, out.Attempts = status, attempts
	}
	return r.finish(ctx, &rc, out, out.Answered)
}

// exec runs req on the backend of its tool: its MCP server's, or its HTTP
// endpoint.
func (r *Router) exec(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	if req.Tool.MCPServer == "" {
		return r.Exec.Call(ctx, req)
	}
	if r.MCP == nil {
		return toolrouter.Failure(toolrouter.CategoryResource, "MCP server %s unavailable: MCP is not enabled", req.Tool.MCPServer)
	}
	return r.MCP.Call(ctx, req)
}

// finish completes the result of rc and emits its terminal update;
// answered says the tool gave an answer of its own (complete) rather than
// none (error).
func (r *Router) finish(ctx context.Context, rc *routeCall, out toolrouter.Outcome, answered bool) *toolrouter.Result {
	res := &rc.r.res
	rc.cred = out.Credential
	elapsed := rc.now().Sub(rc.start) // one clock reading for the result and the metric
	res.DurationMS = float64(elapsed.Nanoseconds()) / 1e6
	if res.DurationMS <= 0 {
		res.DurationMS = 0.001
	}
	res.Success = out.Success()
	res.Output = out.Output
	if out.InvalidUTF8 {
		res.Notes = append(res.Notes, toolrouter.NoteInvalidUTF8)
	}
	res.Notes = append(res.Notes, rc.notes...)
	res.MCPResult = out.MCPResult
	if out.FullOutput != nil {
		res.Truncated = true
		res.Notes = append(res.Notes, out.Note)
		rc.r.full = out.FullOutput
	}
	if !res.Success {
		rc.r.errMsg, rc.r.errCat = out.Err, out.Category
		if rc.r.errCat == "" {
			rc.r.errCat = toolrouter.ClassifyError(rc.r.errMsg)
		}
		res.Error, res.ErrorCategory = &rc.r.errMsg, &rc.r.errCat
	}
	if res.IsValidation && res.Success {
		res.ValidationPassed = validationPassed(out.Output)
	}
	call := rc.call
	call.Format = res.ProviderFormat
	if rc.sentName != "" {
		call.ToolName = rc.sentName // answered under the name the model called (call_tool)
	}
	if !call.HasProviderCallID {
		// The provider sent no id (Ollama, Gemini, legacy function_call):
		// answer under the stable id so the message still has one.
		call.ProviderCallID = rc.id
	}
	res.ProviderResult = format.ToolResultContent(call, res.Success, out.Output, out.Err, out.MCPResult)
	if rc.emit != nil {
		status := toolrouter.StatusComplete
		if !answered {
			status = toolrouter.StatusError
		}
		u := toolrouter.Update{ToolCallID: rc.id, Status: status, ToolName: res.ToolName}
		if !res.Success {
			u.Message = out.Err
		}
		rc.emit(u)
	}
	if r.Observer != nil {
		outcome := "success"
		if !res.Success {
			outcome = string(*res.ErrorCategory)
		}
		name := res.ToolName
		if name == "" || !answered && (*res.ErrorCategory == toolrouter.CategoryNotFound || *res.ErrorCategory == toolrouter.CategoryParse) {
			name = "(unknown)" // keep metric label cardinality bounded
		}
		r.Observer.ToolCall(ctx, access.FromContext(ctx).LabelName(), name, outcome, elapsed)
	}
	// Final: encoded once, for the store and the answer (nil on failure:
	// each then encodes it, and reports the error, as before).
	res.JSON, _ = json.Marshal(res)
	var save toolrouter.AuditSaver
	if r.Results != nil {
		// The tool ran: keep its result, with its audit record in the same
		// transaction (docs/security.md "Audit trail"), even if the caller went away
		// (the Auditor's ctx outlives it).
		rc.r.router, rc.r.ctx = r, ctx
		save = rc.r
	}
	if r.Audit != nil {
		r.Audit.RecordWith(ctx, save, auditRecord(ctx, rc, res))
	} else if save != nil {
		_ = save.SaveAudited(r.saves.Context(ctx), nil)
	}
	return res
}

// auditRecord is the audit record of a finished call (docs/security.md "Audit
// trail"): the digest of its arguments, never the arguments.
func auditRecord(ctx context.Context, rc *routeCall, res *toolrouter.Result) toolrouter.AuditRecord {
	a := toolrouter.AuditRecord{Time: rc.start.UTC(), Client: res.Client, EntryPoint: toolrouter.EntryPoint(ctx),
		PlanID: res.PlanID, Sequence: &res.Sequence, ToolCallID: res.ToolCallID, ToolName: rc.call.ToolName,
		ArgsSHA256: rc.argsSHA256, Outcome: toolrouter.AuditSuccess, DurationMS: res.DurationMS}
	if a.ArgsSHA256 == "" {
		a.ArgsSHA256 = toolrouter.ArgsDigest(res.Arguments)
	}
	if res.ErrorCategory != nil {
		a.Outcome, a.ErrorCategory = toolrouter.AuditFailure, string(*res.ErrorCategory)
	}
	if res.ErrorCategory == nil || *res.ErrorCategory != toolrouter.CategoryNotFound {
		a.Tool = res.ToolName
	}
	if rc.denied != "" {
		a.Tool, a.Outcome = rc.denied, toolrouter.AuditDenied
	}
	a.Guardrails = rc.guards
	a.Credential = rc.cred
	return a
}

// validationPassed reads the boolean `passed` of a validation tool's
// output, decoding only that field.
func validationPassed(out json.RawMessage) *bool {
	var v struct {
		Passed *bool `json:"passed"`
	}
	if json.Unmarshal(out, &v) != nil || v.Passed == nil {
		f := false
		return &f
	}
	return v.Passed
}

func (r *Router) now() func() time.Time {
	if r.Now != nil {
		return r.Now
	}
	return time.Now
}
