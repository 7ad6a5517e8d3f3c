package router

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Approvals keeps the calls held for an approver (docs/approvals.md "Approvals") and
// the results they are routed into (store.Store).
type Approvals interface {
	CreateApproval(ctx context.Context, a *toolrouter.Approval) error
	GetApproval(ctx context.Context, id string) (*toolrouter.Approval, error)
	ListApprovals(ctx context.Context, f toolrouter.ApprovalFilter) ([]*toolrouter.Approval, error)
	DecideApproval(ctx context.Context, id string, d toolrouter.Decision) (*toolrouter.Approval, error)
	ExpireApprovals(ctx context.Context, now time.Time) ([]*toolrouter.Approval, error)
	CountPendingApprovals(ctx context.Context, client string) (int, error)
	GetResult(ctx context.Context, toolCallID string) (*toolrouter.Result, error)
}

type runIDKey struct{}

// WithRunID marks ctx as the context of a /runs run's calls: approvals
// they wait for name the run.
func WithRunID(ctx context.Context, runID string) context.Context {
	return context.WithValue(ctx, runIDKey{}, runID)
}

// ApprovalID is the id of the approval of a tool call: "ap_" and the
// call's id digits, so either names the other.
func ApprovalID(client, toolCallID string) string {
	if client == "" {
		return "ap_" + strings.TrimPrefix(toolCallID, "tc_")
	}
	// Two clients may hold the same tc_ id (their plans are their own).
	sum := sha256.Sum256([]byte(toolrouter.ScopedKey(client, toolCallID)))
	return "ap_" + hex.EncodeToString(sum[:12])
}

// needsApproval reports whether a call of tool by the client in ctx waits
// for an approver: the tool's approval: required, or the client's
// approval patterns.
func (r *Router) needsApproval(ctx context.Context, tool *toolrouter.Tool) bool {
	return r.Approvals != nil && (tool.Approval || access.FromContext(ctx).NeedsApproval(tool.Name))
}

// hold stores a validated call as a pending approval instead of calling
// the tool, and returns (and stores) its awaiting_approval result.
func (r *Router) hold(ctx context.Context, rc *routeCall) *toolrouter.Result {
	res := &rc.r.res
	args, sum, err := toolrouter.CanonicalArguments(rc.call.Arguments)
	if err != nil {
		return r.finish(ctx, rc, toolrouter.Failure(toolrouter.CategorySchema, "arguments: %v", err), false)
	}
	unlock := func() {}
	if r.MaxPendingApprovals > 0 {
		// Counted and created under one lock: the calls of a batch are
		// held concurrently, and each must see the ones before it.
		r.holdMu.Lock()
		var once sync.Once
		unlock = func() { once.Do(r.holdMu.Unlock) }
		defer unlock()
		if msg := r.overPendingCap(ctx); msg != "" {
			unlock()
			return r.finish(ctx, rc, toolrouter.Failure(toolrouter.CategoryResource, "%s", msg), false)
		}
	}
	now := rc.now()
	runID, _ := ctx.Value(runIDKey{}).(string)
	a := &toolrouter.Approval{
		ID: ApprovalID(access.FromContext(ctx).LabelName(), rc.id), Status: toolrouter.ApprovalPending, ToolCallID: rc.id, PlanID: res.PlanID,
		Sequence: res.Sequence, ToolName: res.ToolName, Arguments: args, ArgumentsSHA256: sum,
		Client: access.FromContext(ctx).LabelName(), RunID: runID,
		CreatedAt: now.UTC(), ExpiresAt: now.Add(r.approvalTTL()).UTC(),
		// Kept for its audit record: it is settled in another request.
		EntryPoint: toolrouter.EntryPoint(ctx), CalledAs: rc.call.ToolName,
	}
	// The request's budget is kept with the call: the approval is decided
	// in another request, which has none of it.
	if b := shape.FromContext(ctx); !b.IsZero() {
		a.OutputBudget = &toolrouter.HeldBudget{MaxOutputBytes: b.Bytes, MaxOutputTokens: b.Tokens}
	}
	res.Status, res.ApprovalID = toolrouter.ResultAwaitingApproval, a.ID
	res.DurationMS = 0
	if r.Results != nil {
		// The pending result first: whoever sees the approval can read it.
		// Committed now, not with the next group commit: an approver on
		// another replica may decide at once, and settling reads it.
		err := r.Results.SaveResult(ctx, res)
		if err == nil {
			err = r.commitResults(ctx)
		}
		if err != nil {
			unlock()
			res.Status, res.ApprovalID = "", ""
			return r.finish(ctx, rc, toolrouter.Failure(toolrouter.CategoryResource, "approval could not be stored; retry later"), false)
		}
	}
	err = r.Approvals.CreateApproval(ctx, a)
	unlock()
	if err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Str("tool_call_id", rc.id).Msg("store approval")
		res.Status, res.ApprovalID = "", ""
		return r.finish(ctx, rc, toolrouter.Failure(toolrouter.CategoryResource, "approval could not be stored; retry later"), false)
	}
	// The before-hooks' decisions of a held call are logged here: its
	// audit record, written when it is settled, has the after phase's.
	zerolog.Ctx(ctx).Info().Str("approval_id", a.ID).Str("tool_call_id", rc.id).Str("tool", a.ToolName).
		Str("client", a.Client).Str("arguments_sha256", sum).Interface("guardrails", rc.guards).Msg("call awaits approval")
	if rc.emit != nil {
		rc.emit(toolrouter.Update{ToolCallID: rc.id, Status: toolrouter.StatusAwaitingApproval, ToolName: res.ToolName, Message: a.ID})
	}
	return res
}

// overPendingCap says why the client in ctx may not hold one more call
// ("" when it may): it has MaxPendingApprovals pending already (issue 21
// item 5: 20 batches made 20,480 pending approvals in 24 s). Exact within
// a replica (holdMu); replicas holding one client's calls at the same
// instant may pass it by the calls in flight.
func (r *Router) overPendingCap(ctx context.Context) string {
	client := access.FromContext(ctx).LabelName()
	n, err := r.Approvals.CountPendingApprovals(ctx, client)
	if err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("count pending approvals")
		return "approval could not be stored; retry later"
	}
	if n >= r.MaxPendingApprovals {
		return fmt.Sprintf("too many calls awaiting approval: this client has %d pending (TOOLROUTER_MAX_PENDING_APPROVALS is %d); retry once some are decided or expired", n, r.MaxPendingApprovals)
	}
	return ""
}

// commitResults commits the results saved so far when the store queues
// them for a group commit (it has Flush); a store without one commits each
// save at once.
func (r *Router) commitResults(ctx context.Context) error {
	if f, ok := r.Results.(interface{ Flush(context.Context) error }); ok {
		return f.Flush(ctx)
	}
	return nil
}

func (r *Router) approvalTTL() time.Duration {
	if r.ApprovalTTL > 0 {
		return r.ApprovalTTL
	}
	return time.Hour
}

// Decide records an approver's decision on a pending approval, exactly
// once (ECONFLICT for a second one, or one after its expiry), then settles
// the call: approved runs the stored call with the stored arguments,
// denied stores a permission failure. The caller in ctx must be an
// approver (EFORBIDDEN otherwise).
func (r *Router) Decide(ctx context.Context, id string, approve bool, reason string) (*toolrouter.Approval, *toolrouter.Result, error) {
	c := access.FromContext(ctx)
	if !c.MayApprove() {
		return nil, nil, toolrouter.Errorf(toolrouter.EFORBIDDEN, "client %q may not decide approvals (it needs admin: true or approver: true)", c.LabelName())
	}
	if r.Approvals == nil {
		return nil, nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "approval %q not found", id)
	}
	// Four eyes: a client's held calls are decided by someone else,
	// unless the decider is an admin (or the service is open).
	if !c.IsAdmin() {
		a, err := r.Approvals.GetApproval(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if a.Client == c.Name {
			return nil, nil, toolrouter.Errorf(toolrouter.EFORBIDDEN, "client %q may not decide approvals of its own calls: another approver or an admin must (four-eyes principle)", c.Name)
		}
	}
	by := c.LabelName()
	if by == "" {
		by = "anonymous"
	}
	d := toolrouter.Decision{Status: toolrouter.ApprovalDenied, By: by, Reason: reason, At: r.now()()}
	if approve {
		d.Status = toolrouter.ApprovalApproved
	}
	a, err := r.Approvals.DecideApproval(ctx, id, d)
	if errors.Is(err, toolrouter.ErrApprovalExpired) {
		r.ExpireDue(ctx) // settle it now, so its result says so
	}
	if err != nil {
		return nil, nil, err
	}
	zerolog.Ctx(ctx).Info().Str("approval_id", a.ID).Str("tool_call_id", a.ToolCallID).Str("tool", a.ToolName).
		Str("decision", string(a.Status)).Str("by", by).Str("reason", reason).Str("client", a.Client).Msg("approval decided")
	res, err := r.settle(ctx, a)
	return a, res, err
}

// ExpireDue expires the pending approvals past their time and stores
// their calls' results (denied, "approval expired"); it returns how many.
func (r *Router) ExpireDue(ctx context.Context) (int, error) {
	if r.Approvals == nil {
		return 0, nil
	}
	as, err := r.Approvals.ExpireApprovals(ctx, r.now()())
	if err != nil {
		return 0, fmt.Errorf("expire approvals: %w", err)
	}
	for _, a := range as {
		zerolog.Ctx(ctx).Info().Str("approval_id", a.ID).Str("tool_call_id", a.ToolCallID).Str("tool", a.ToolName).
			Str("decision", string(a.Status)).Str("client", a.Client).Msg("approval expired")
		if _, err := r.settle(ctx, a); err != nil {
			zerolog.Ctx(ctx).Error().Err(err).Str("approval_id", a.ID).Msg("settle expired approval")
		}
	}
	return len(as), nil
}

// errAbandoned is the error of an approved call whose replica stopped
// while it ran (docs/approvals.md "Approvals").
const errAbandoned = "the replica running this approved call stopped; the tool may have run — not run again"

// SettleAbandoned fails the approved calls whose result is still
// awaiting_approval past their grace after the decision: the replica that
// ran them stopped. As a lapsed Idempotency-Key lease (docs/operations.md "Storage and
// durability"), such a call is abandoned, never run again: its result
// fails as execution and the run that waits for it resumes. Any replica
// may sweep; two writing the same failure is harmless. It returns how
// many it settled.
func (r *Router) SettleAbandoned(ctx context.Context) (int, error) {
	if r.Approvals == nil {
		return 0, nil
	}
	// The newest approved ones only: an abandoned call is found within its
	// grace of minutes, long before a thousand later approvals bury it, and
	// the sweep stays bounded however many approvals the store keeps.
	as, err := r.Approvals.ListApprovals(ctx, toolrouter.ApprovalFilter{Status: toolrouter.ApprovalApproved, Limit: abandonScan})
	if err != nil {
		return 0, fmt.Errorf("list approved approvals: %w", err)
	}
	now, n := r.now()(), 0
	for _, a := range as {
		if _, done := r.final.Load(a.ID); done || a.DecidedAt == nil || now.Before(a.DecidedAt.Add(r.abandonGrace(a.ToolName))) {
			continue
		}
		res, err := r.settleWith(ctx, a, r.failAbandoned)
		switch {
		case err != nil:
			zerolog.Ctx(ctx).Error().Err(err).Str("approval_id", a.ID).Msg("settle abandoned approval")
		case res != nil:
			n++
			zerolog.Ctx(ctx).Warn().Str("approval_id", a.ID).Str("tool_call_id", a.ToolCallID).Str("tool", a.ToolName).
				Str("client", a.Client).Msg("approved call abandoned: its replica stopped")
			fallthrough
		default:
			r.final.Store(a.ID, struct{}{}) // final now: never read again
		}
	}
	return n, nil
}

// abandonScan is how many of the newest approved approvals a sweep reads.
const abandonScan = 1000

// failAbandoned stores the abandoned failure of a's call if its stored
// result, read just now, still awaits; nil when it is final.
func (r *Router) failAbandoned(ctx context.Context, a *toolrouter.Approval) (*toolrouter.Result, error) {
	rc, status, err := r.pendingCall(ctx, a)
	if err != nil || status != toolrouter.ResultAwaitingApproval {
		return nil, err
	}
	return r.finish(ctx, rc, toolrouter.Failure(toolrouter.CategoryExecution, errAbandoned), false), nil
}

// abandonGrace is how long after its approval a call may still be running:
// its tool's timeout (default 30s) for each attempt, and a minute; ten
// minutes for a tool the registry no longer has.
func (r *Router) abandonGrace(tool string) time.Duration {
	t, ok := r.Tools().Lookup(tool)
	if !ok {
		return 10 * time.Minute
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return timeout*time.Duration(t.Retries+1) + time.Minute
}

// settle routes a decided approval's call to its final result, from the
// stored pending result and the approval's own arguments: for an approved
// call those arguments, checked against their digest, are what the tool
// gets — never anything the approver sent.
func (r *Router) settle(ctx context.Context, a *toolrouter.Approval) (*toolrouter.Result, error) {
	return r.settleWith(ctx, a, r.settleCall)
}

// settleWith stores a's final result as call makes it, commits it and
// tells the run that waits for it (Settled); call returns nil when it
// stored nothing.
func (r *Router) settleWith(ctx context.Context, a *toolrouter.Approval, call func(context.Context, *toolrouter.Approval) (*toolrouter.Result, error)) (*toolrouter.Result, error) {
	ctx = context.WithoutCancel(ctx) // a decided call completes even if its decider leaves
	if a.EntryPoint != "" {
		ctx = toolrouter.WithEntryPoint(ctx, a.EntryPoint) // where the call came in, not the decision
	}
	res, err := call(ctx, a)
	if err != nil || res == nil {
		return res, err
	}
	// Committed, not only queued here: its caller, or the run that waits
	// for it, may read it on another replica at once.
	if err := r.commitResults(ctx); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("approval_id", a.ID).Msg("commit a decided result")
	}
	r.waiters.wake(a)
	if a.RunID != "" && r.Settled != nil {
		r.Settled(ctx, a)
	}
	return res, nil
}

// pendingCall reads the stored result of a's call and readies it to be
// finished; it returns the status the stored result had.
func (r *Router) pendingCall(ctx context.Context, a *toolrouter.Approval) (*routeCall, string, error) {
	pending, err := r.Approvals.GetResult(ctx, toolrouter.ScopedKey(a.Client, a.ToolCallID))
	if err != nil {
		return nil, "", fmt.Errorf("approval %s: pending result: %w", a.ID, err)
	}
	rc := &routeCall{now: r.now(), id: a.ToolCallID, r: &routed{res: *pending}}
	rc.start = rc.now()
	res := &rc.r.res
	res.Client = a.Client // the stored result does not keep its owner: stored again under its key
	res.Status = toolrouter.ResultComplete
	res.Error, res.ErrorCategory, res.Output, res.ProviderResult = nil, nil, nil, nil
	rc.call = toolrouter.Call{ToolName: res.ToolName, Format: res.ProviderFormat, HasProviderCallID: res.ProviderCallID != nil}
	if a.CalledAs != "" {
		rc.call.ToolName = a.CalledAs // as the caller named it: its audit record, its provider result
	}
	if res.ProviderCallID != nil {
		rc.r.providerCallID = *res.ProviderCallID
		res.ProviderCallID = &rc.r.providerCallID
		rc.call.ProviderCallID = rc.r.providerCallID
	}
	return rc, pending.Status, nil
}

func (r *Router) settleCall(ctx context.Context, a *toolrouter.Approval) (*toolrouter.Result, error) {
	rc, _, err := r.pendingCall(ctx, a)
	if err != nil {
		return nil, err
	}
	res := &rc.r.res
	// The call is settled as its client's, not as the approver's (whose
	// request this is, if any): its metrics, and what its backend is told.
	if a.Client != "" && r.Client != nil {
		if c := r.Client(a.Client); c != nil {
			ctx = access.NewContext(ctx, c)
		}
	}
	// Never the approver's user: a backend credential is never chosen
	// for the person who decided (docs/backend-auth.md); the caller's
	// token is not kept, so the call has no user.
	ctx = access.NewUserContext(ctx, nil)
	switch a.Status {
	case toolrouter.ApprovalDenied:
		reason := ""
		if a.Reason != nil && *a.Reason != "" {
			reason = ": " + *a.Reason
		}
		return r.finish(ctx, rc, toolrouter.Failure(toolrouter.CategoryPermission, "denied by %s%s", *a.DecidedBy, reason), true), nil
	case toolrouter.ApprovalExpired:
		return r.finish(ctx, rc, toolrouter.Failure(toolrouter.CategoryPermission, "approval expired"), true), nil
	case toolrouter.ApprovalApproved:
	default:
		return nil, fmt.Errorf("approval %s is %s, not decided", a.ID, a.Status)
	}
	sum := sha256.Sum256(a.Arguments)
	var args map[string]any
	if hex.EncodeToString(sum[:]) != a.ArgumentsSHA256 || json.Unmarshal(a.Arguments, &args) != nil || args == nil {
		return r.finish(ctx, rc, toolrouter.Failure(toolrouter.CategoryPermission, "approval %s: the stored arguments do not match their SHA-256; not run", a.ID), false), nil
	}
	rc.call.Arguments, res.Arguments = args, args
	tool, ok := r.Tools().Lookup(a.ToolName)
	if !ok {
		return r.finish(ctx, rc, toolrouter.Failure(toolrouter.CategoryNotFound, "Tool '%s' not found", a.ToolName), false), nil
	}
	// The client as it is now: a reload may have narrowed its scope or
	// removed it since the call was held.
	if a.Client != "" {
		var c *access.Client
		if r.Client != nil {
			c = r.Client(a.Client)
		}
		if c == nil || !c.Allows(a.ToolName) || c.Bound() && (r.Views == nil || !r.Views().Reaches(c, a.ToolName)) {
			return r.finish(ctx, rc, toolrouter.Failure(toolrouter.CategoryPermission, "the client may no longer call %s", a.ToolName), false), nil
		}
	}
	if b := a.OutputBudget; b != nil { // the budget of the request that held it (a view's, a run's)
		ctx = shape.WithBudget(ctx, toolrouter.OutputBudget{Bytes: b.MaxOutputBytes, Tokens: b.MaxOutputTokens})
	}
	req := toolrouter.ExecRequest{Tool: tool, Args: args, PlanID: a.PlanID, ToolCallID: a.ToolCallID}
	out := r.shape(ctx, req, r.afterExec(ctx, rc, tool, r.exec(ctx, req)))
	return r.finish(ctx, rc, out, out.Answered), nil
}

// Approval returns an approval, expiring it first when its time is past.
func (r *Router) Approval(ctx context.Context, id string) (*toolrouter.Approval, error) {
	if r.Approvals == nil {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "approval %q not found", id)
	}
	if _, err := r.ExpireDue(ctx); err != nil {
		return nil, toolrouter.Unavailable("store", err)
	}
	a, err := r.Approvals.GetApproval(ctx, id)
	if err != nil {
		return nil, err
	}
	if !mayRead(access.FromContext(ctx), a.Client) {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "approval %q not found", id)
	}
	return a, nil
}

// ListApprovals lists approvals the caller may see: approvers and admins
// see all, other clients their own calls'.
func (r *Router) ListApprovals(ctx context.Context, f toolrouter.ApprovalFilter) ([]*toolrouter.Approval, error) {
	if r.Approvals == nil {
		return []*toolrouter.Approval{}, nil
	}
	if _, err := r.ExpireDue(ctx); err != nil {
		return nil, toolrouter.Unavailable("store", err)
	}
	if c := access.FromContext(ctx); !c.MayApprove() {
		f.Client = c.LabelName() // in the store: never another client's rows
	}
	as, err := r.Approvals.ListApprovals(ctx, f)
	if err != nil {
		return nil, toolrouter.Unavailable("store", err)
	}
	return as, nil
}

// Result returns the current result of a tool call (awaiting_approval,
// then final) to whoever may see it: the client that made the call, an
// approver (of a call that waited for approval) or an admin; for a call
// that never waited, the client that made it while its scope holds its
// tool. Anyone else gets ENOTFOUND, as for an unknown id.
//
// tc_ ids are per client (each client's plans are its own): owner names the
// client whose call it is, "" for the caller's own; only approvers and
// admins may name another.
func (r *Router) Result(ctx context.Context, toolCallID, owner string) (*toolrouter.Result, error) {
	notFound := toolrouter.Errorf(toolrouter.ENOTFOUND, "tool call %q not found", toolCallID)
	c := access.FromContext(ctx)
	if owner == "" {
		owner = c.LabelName()
	}
	if r.Approvals == nil || owner != c.LabelName() && !c.MayApprove() {
		return nil, notFound
	}
	if _, err := r.ExpireDue(ctx); err != nil {
		return nil, toolrouter.Unavailable("store", err)
	}
	res, err := r.Approvals.GetResult(ctx, toolrouter.ScopedKey(owner, toolCallID))
	if toolrouter.ErrorCode(err) == toolrouter.ENOTFOUND {
		return nil, notFound // the store names its per-client key, not the id asked for
	}
	if err != nil {
		return nil, err
	}
	if res.ApprovalID == "" {
		// Approvers read another client's results only through an approval.
		if c.IsAdmin() || owner == c.LabelName() && c.Allows(res.ToolName) {
			return res, nil
		}
		return nil, notFound
	}
	a, err := r.Approvals.GetApproval(ctx, res.ApprovalID)
	if err != nil || !mayRead(c, a.Client) {
		return nil, notFound
	}
	return res, nil
}

// mayRead reports whether c may see what client owner's call made.
func mayRead(c *access.Client, owner string) bool {
	return c.MayApprove() || c.LabelName() == owner
}
