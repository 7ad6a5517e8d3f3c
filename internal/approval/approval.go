// Package approval holds the calls that wait for an approver
// (docs/approvals.md "Approvals"): its Keeper is the approval stage of the
// pipeline, which stores a call that needs a decision instead of running
// it, and settles it once decided or expired — an approved call resumes
// through the rest of the pipeline (the Next the stage was built with),
// never through the router.
package approval

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
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// Store keeps the held calls and the results they are routed into
// (store.Store).
type Store interface {
	CreateApproval(ctx context.Context, a *toolrouter.Approval) error
	GetApproval(ctx context.Context, id string) (*toolrouter.Approval, error)
	ListApprovals(ctx context.Context, f toolrouter.ApprovalFilter) ([]*toolrouter.Approval, error)
	DecideApproval(ctx context.Context, id string, d toolrouter.Decision) (*toolrouter.Approval, error)
	ExpireApprovals(ctx context.Context, now time.Time) ([]*toolrouter.Approval, error)
	CountPendingApprovals(ctx context.Context, client string) (int, error)
	GetResult(ctx context.Context, toolCallID string) (*toolrouter.Result, error)
}

// Results keeps route results (store.Store): a held call's pending result
// is stored before its approval.
type Results interface {
	SaveResult(ctx context.Context, res *toolrouter.Result, audit ...toolrouter.AuditRecord) error
}

// Finisher completes, records and stores the result of a call
// (router.Finisher): a settled call's final result.
type Finisher interface {
	Finish(ctx context.Context, req *toolrouter.CallRequest, out toolrouter.Outcome) *toolrouter.Result
}

// Tools looks tools up by canonical name (the registry in force).
type Tools interface {
	Lookup(name string) (*toolrouter.Tool, bool)
}

// Keeper holds calls for approvers and settles them. Its fields are set
// once, before Stage builds the pipeline.
type Keeper struct {
	Store   Store
	Results Results  // may be nil: the pending result is not stored
	Finish  Finisher // the final results of settled calls
	Tools   func() Tools
	// TTL is how long a call waits before it expires
	// (TOOLROUTER_APPROVAL_TTL, default 1h).
	TTL time.Duration
	// MaxPending caps the pending approvals of one client
	// (TOOLROUTER_MAX_PENDING_APPROVALS): a call over it fails as
	// resource instead of being held. 0 means no cap.
	MaxPending int
	// Client finds a client by name (access.Clients.ByName): an approved
	// call runs only while its client exists and may call the tool. Nil:
	// no named client's approved call runs.
	Client func(name string) *access.Client
	// Views are the virtual servers in force: an approved call of a
	// client bound to them runs only while one of them holds the tool.
	// Nil: no bound client's approved call runs.
	Views func() *vserver.Set
	// Settled, when set, hears of every decided (or expired) approval of
	// a /runs run once its final result is stored and committed: the run
	// resumes (agent.Runner.ResumeLater).
	Settled func(ctx context.Context, runID string)
	Now     func() time.Time
	// Subjects keeps the caller's JWT of a held call until it expires
	// (the token vault), so the approved call can still exchange it
	// (auth mode token_exchange); nil: not kept.
	Subjects Subjects

	next    toolrouter.Next // the pipeline after the stage: an approved call resumes there
	holdMu  sync.Mutex      // serializes holding calls while MaxPending is set
	waiters waiters         // streams waiting for a decision made here
	final   sync.Map        // ids of approved approvals whose result is final (SettleAbandoned)
}

// Subjects is the token vault, as far as held calls need it.
type Subjects interface {
	KeepSubjectToken(ctx context.Context, key, owner string, token toolrouter.Secret, now time.Time) error
	SubjectToken(ctx context.Context, key string) (toolrouter.Secret, bool, error)
}

// subjectKey is where the caller's JWT of a held call is kept.
func subjectKey(approvalID string) string { return "approval:" + approvalID }

// ID is the id of the approval of a tool call: "ap_" and the call's id
// digits, so either names the other.
func ID(client, toolCallID string) string {
	if client == "" {
		return "ap_" + strings.TrimPrefix(toolCallID, "tc_")
	}
	// Two clients may hold the same tc_ id (their plans are their own).
	sum := sha256.Sum256([]byte(toolrouter.ScopedKey(client, toolCallID)))
	return "ap_" + hex.EncodeToString(sum[:12])
}

// Stage is the approval stage: a call of a tool with approval: required,
// or that its client's approval patterns name, is held (Outcome.Held)
// instead of going on. The pipeline after the stage is where an approved
// call resumes; Stage is called once, when the pipeline is built.
func (k *Keeper) Stage(next toolrouter.Next) toolrouter.Next {
	k.next = next
	return func(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
		if req.TaskOp != nil || (!req.Tool.Approval && !access.FromContext(ctx).NeedsApproval(req.Tool.Name)) {
			// (A poll of a backend task: its call was approved, or needed none.)
			return next(ctx, req)
		}
		return k.hold(ctx, req)
	}
}

// hold stores a validated call as a pending approval instead of calling
// the tool, with its awaiting_approval result.
func (k *Keeper) hold(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
	res := req.Result
	args, sum, err := toolrouter.CanonicalArguments(req.Call.Arguments)
	if err != nil {
		return toolrouter.Failure(toolrouter.CategorySchema, "arguments: %v", err)
	}
	unlock := func() {}
	if k.MaxPending > 0 {
		// Counted and created under one lock: the calls of a batch are
		// held concurrently, and each must see the ones before it.
		k.holdMu.Lock()
		var once sync.Once
		unlock = func() { once.Do(k.holdMu.Unlock) }
		defer unlock()
		if msg := k.overPendingCap(ctx); msg != "" {
			unlock()
			return toolrouter.Failure(toolrouter.CategoryResource, "%s", msg)
		}
	}
	now := k.now()
	client := access.FromContext(ctx).LabelName()
	a := &toolrouter.Approval{
		ID: ID(client, req.ID), Status: toolrouter.ApprovalPending, ToolCallID: req.ID, PlanID: res.PlanID,
		Sequence: res.Sequence, ToolName: res.ToolName, Arguments: args, ArgumentsSHA256: sum,
		Client: client, RunID: req.RunID,
		CreatedAt: now.UTC(), ExpiresAt: now.Add(k.ttl()).UTC(),
		// Kept for its audit record: it is settled in another request.
		EntryPoint: req.EntryPoint(), CalledAs: req.Call.ToolName, Parent: req.Parent,
	}
	// The user too, and their JWT in the vault, until it expires: the
	// approved call runs for them, and a token exchange needs the JWT.
	if u := access.UserFromContext(ctx); u != nil && u.Subject != "" {
		a.User = u.Subject
		if k.Subjects != nil && !u.Token.IsZero() {
			if err := k.Subjects.KeepSubjectToken(ctx, subjectKey(a.ID), toolrouter.ScopedKey(client, u.Subject), u.Token, now); err != nil {
				zerolog.Ctx(ctx).Warn().Err(err).Str("tool_call_id", req.ID).Msg("keep the caller's token for the approved call")
			}
		}
	}
	// The request's budget is kept with the call: the approval is decided
	// in another request, which has none of it.
	if b := req.OutputBudget; !b.IsZero() {
		a.OutputBudget = &toolrouter.HeldBudget{MaxOutputBytes: b.Bytes, MaxOutputTokens: b.Tokens}
	}
	res.Status, res.ApprovalID = toolrouter.ResultAwaitingApproval, a.ID
	res.DurationMS = 0
	if k.Results != nil {
		// The pending result first: whoever sees the approval can read it.
		// Committed now, not with the next group commit: an approver on
		// another replica may decide at once, and settling reads it.
		err := k.Results.SaveResult(ctx, res)
		if err == nil {
			err = k.commitResults(ctx)
		}
		if err != nil {
			unlock()
			res.Status, res.ApprovalID = "", ""
			return toolrouter.Failure(toolrouter.CategoryResource, "approval could not be stored; retry later")
		}
	}
	err = k.Store.CreateApproval(ctx, a)
	unlock()
	if err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Str("tool_call_id", req.ID).Msg("store approval")
		res.Status, res.ApprovalID = "", ""
		return toolrouter.Failure(toolrouter.CategoryResource, "approval could not be stored; retry later")
	}
	// The before-hooks' decisions of a held call are logged here: its
	// audit record, written when it is settled, has the after phase's.
	zerolog.Ctx(ctx).Info().Str("approval_id", a.ID).Str("tool_call_id", req.ID).Str("tool", a.ToolName).
		Str("client", a.Client).Str("arguments_sha256", sum).Interface("guardrails", req.Guards).Msg("call awaits approval")
	if req.Emit != nil {
		req.Emit(toolrouter.Update{ToolCallID: req.ID, Status: toolrouter.StatusAwaitingApproval, ToolName: res.ToolName, Message: a.ID})
	}
	return toolrouter.Outcome{Held: true}
}

// overPendingCap says why the client in ctx may not hold one more call
// ("" when it may): it has MaxPending pending already (issue 21 item 5:
// 20 batches made 20,480 pending approvals in 24 s). Exact within a
// replica (holdMu); replicas holding one client's calls at the same
// instant may pass it by the calls in flight.
func (k *Keeper) overPendingCap(ctx context.Context) string {
	client := access.FromContext(ctx).LabelName()
	n, err := k.Store.CountPendingApprovals(ctx, client)
	if err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("count pending approvals")
		return "approval could not be stored; retry later"
	}
	if n >= k.MaxPending {
		return fmt.Sprintf("too many calls awaiting approval: this client has %d pending (TOOLROUTER_MAX_PENDING_APPROVALS is %d); retry once some are decided or expired", n, k.MaxPending)
	}
	return ""
}

// commitResults commits the results saved so far when the store queues
// them for a group commit (it has Flush); a store without one commits each
// save at once.
func (k *Keeper) commitResults(ctx context.Context) error {
	if f, ok := k.Results.(interface{ Flush(context.Context) error }); ok {
		return f.Flush(ctx)
	}
	return nil
}

func (k *Keeper) ttl() time.Duration {
	if k.TTL > 0 {
		return k.TTL
	}
	return time.Hour
}

func (k *Keeper) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// Decide records an approver's decision on a pending approval, exactly
// once (ECONFLICT for a second one, or one after its expiry), then settles
// the call: approved runs the stored call with the stored arguments,
// denied stores a permission failure. The caller in ctx must be an
// approver (EFORBIDDEN otherwise).
func (k *Keeper) Decide(ctx context.Context, id string, approve bool, reason string) (*toolrouter.Approval, *toolrouter.Result, error) {
	c := access.FromContext(ctx)
	if !c.MayApprove() {
		return nil, nil, toolrouter.Errorf(toolrouter.EFORBIDDEN, "client %q may not decide approvals (it needs admin: true or approver: true)", c.LabelName())
	}
	if k.Store == nil {
		return nil, nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "approval %q not found", id)
	}
	// Four eyes: a client's held calls are decided by someone else,
	// unless the decider is an admin (or the service is open).
	if !c.IsAdmin() {
		a, err := k.Store.GetApproval(ctx, id)
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
	d := toolrouter.Decision{Status: toolrouter.ApprovalDenied, By: by, Reason: reason, At: k.now()}
	if approve {
		d.Status = toolrouter.ApprovalApproved
	}
	a, err := k.Store.DecideApproval(ctx, id, d)
	if errors.Is(err, toolrouter.ErrApprovalExpired) {
		_, _ = k.ExpireDue(ctx) // settle it now, so its result says so
	}
	if err != nil {
		return nil, nil, err
	}
	zerolog.Ctx(ctx).Info().Str("approval_id", a.ID).Str("tool_call_id", a.ToolCallID).Str("tool", a.ToolName).
		Str("decision", string(a.Status)).Str("by", by).Str("reason", reason).Str("client", a.Client).Msg("approval decided")
	res, err := k.settle(ctx, a)
	return a, res, err
}

// ExpireDue expires the pending approvals past their time and stores
// their calls' results (denied, "approval expired"); it returns how many.
func (k *Keeper) ExpireDue(ctx context.Context) (int, error) {
	if k.Store == nil {
		return 0, nil
	}
	as, err := k.Store.ExpireApprovals(ctx, k.now())
	if err != nil {
		return 0, fmt.Errorf("expire approvals: %w", err)
	}
	for _, a := range as {
		zerolog.Ctx(ctx).Info().Str("approval_id", a.ID).Str("tool_call_id", a.ToolCallID).Str("tool", a.ToolName).
			Str("decision", string(a.Status)).Str("client", a.Client).Msg("approval expired")
		if _, err := k.settle(ctx, a); err != nil {
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
// ran them stopped. As a lapsed Idempotency-Key lease (docs/operations.md
// "Storage and durability"), such a call is abandoned, never run again:
// its result fails as execution and the run that waits for it resumes.
// Any replica may sweep; two writing the same failure is harmless. It
// returns how many it settled.
func (k *Keeper) SettleAbandoned(ctx context.Context) (int, error) {
	if k.Store == nil {
		return 0, nil
	}
	// The newest approved ones only: an abandoned call is found within its
	// grace of minutes, long before a thousand later approvals bury it, and
	// the sweep stays bounded however many approvals the store keeps.
	as, err := k.Store.ListApprovals(ctx, toolrouter.ApprovalFilter{Status: toolrouter.ApprovalApproved, Limit: abandonScan})
	if err != nil {
		return 0, fmt.Errorf("list approved approvals: %w", err)
	}
	now, n := k.now(), 0
	for _, a := range as {
		if _, done := k.final.Load(a.ID); done || a.DecidedAt == nil || now.Before(a.DecidedAt.Add(k.abandonGrace(a.ToolName))) {
			continue
		}
		res, err := k.settleWith(ctx, a, k.failAbandoned)
		switch {
		case err != nil:
			zerolog.Ctx(ctx).Error().Err(err).Str("approval_id", a.ID).Msg("settle abandoned approval")
		case res != nil:
			n++
			zerolog.Ctx(ctx).Warn().Str("approval_id", a.ID).Str("tool_call_id", a.ToolCallID).Str("tool", a.ToolName).
				Str("client", a.Client).Msg("approved call abandoned: its replica stopped")
			fallthrough
		default:
			k.final.Store(a.ID, struct{}{}) // final now: never read again
		}
	}
	return n, nil
}

// abandonScan is how many of the newest approved approvals a sweep reads.
const abandonScan = 1000

// failAbandoned stores the abandoned failure of a's call if its stored
// result, read just now, still awaits; nil when it is final.
func (k *Keeper) failAbandoned(ctx context.Context, a *toolrouter.Approval) (*toolrouter.Result, error) {
	req, status, err := k.pendingCall(ctx, a)
	if err != nil || status != toolrouter.ResultAwaitingApproval {
		return nil, err
	}
	return k.Finish.Finish(ctx, req, toolrouter.Failure(toolrouter.CategoryExecution, errAbandoned)), nil
}

// abandonGrace is how long after its approval a call may still be running:
// its tool's timeout (default 30s) for each attempt, and a minute; ten
// minutes for a tool the registry no longer has.
func (k *Keeper) abandonGrace(tool string) time.Duration {
	t, ok := k.Tools().Lookup(tool)
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
func (k *Keeper) settle(ctx context.Context, a *toolrouter.Approval) (*toolrouter.Result, error) {
	return k.settleWith(ctx, a, k.settleCall)
}

// settleWith stores a's final result as call makes it, commits it and
// tells the run that waits for it (Settled); call returns nil when it
// stored nothing.
func (k *Keeper) settleWith(ctx context.Context, a *toolrouter.Approval, call func(context.Context, *toolrouter.Approval) (*toolrouter.Result, error)) (*toolrouter.Result, error) {
	ctx = context.WithoutCancel(ctx) // a decided call completes even if its decider leaves
	res, err := call(ctx, a)
	if err != nil || res == nil {
		return res, err
	}
	// Committed, not only queued here: its caller, or the run that waits
	// for it, may read it on another replica at once.
	if k.Results != nil {
		if err := k.commitResults(ctx); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Str("approval_id", a.ID).Msg("commit a decided result")
		}
	}
	k.waiters.wake(a)
	if a.RunID != "" && k.Settled != nil {
		k.Settled(ctx, a.RunID)
	}
	return res, nil
}

// pendingCall reads the stored result of a's call and readies it to be
// finished; it returns the status the stored result had.
func (k *Keeper) pendingCall(ctx context.Context, a *toolrouter.Approval) (*toolrouter.CallRequest, string, error) {
	pending, err := k.Store.GetResult(ctx, toolrouter.ScopedKey(a.Client, a.ToolCallID))
	if err != nil {
		return nil, "", fmt.Errorf("approval %s: pending result: %w", a.ID, err)
	}
	status, res := pending.Status, pending
	res.Client = a.Client // the stored result does not keep its owner: stored again under its key
	res.Status = toolrouter.ResultComplete
	res.Error, res.ErrorCategory, res.Output, res.ProviderResult, res.JSON = nil, nil, nil, nil, nil
	// Where the call came in, not the decision.
	req := &toolrouter.CallRequest{PlanID: a.PlanID, ID: a.ToolCallID, Result: res, Entry: a.EntryPoint, RunID: a.RunID, Parent: a.Parent,
		Call: toolrouter.Call{ToolName: res.ToolName, Format: res.ProviderFormat, HasProviderCallID: res.ProviderCallID != nil}}
	if a.CalledAs != "" {
		req.Call.ToolName = a.CalledAs // as the caller named it: its audit record, its provider result
	}
	if res.ProviderCallID != nil {
		req.Call.ProviderCallID = *res.ProviderCallID
	}
	return req, status, nil
}

// heldUser is the user a held call was made for (nil: none).
func (k *Keeper) heldUser(ctx context.Context, a *toolrouter.Approval) *access.User {
	if a.User == "" {
		return nil
	}
	u := &access.User{Subject: a.User, Later: true}
	if k.Subjects != nil {
		tok, ok, err := k.Subjects.SubjectToken(ctx, subjectKey(a.ID))
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Str("approval_id", a.ID).Msg("read the caller's kept token")
		}
		if ok {
			u.Token = tok
		}
	}
	return u
}

func (k *Keeper) settleCall(ctx context.Context, a *toolrouter.Approval) (*toolrouter.Result, error) {
	req, _, err := k.pendingCall(ctx, a)
	if err != nil {
		return nil, err
	}
	// The call is settled as its client's, not as the approver's (whose
	// request this is, if any): its metrics, and what its backend is told.
	if a.Client != "" && k.Client != nil {
		if c := k.Client(a.Client); c != nil {
			ctx = access.NewContext(ctx, c)
		}
	}
	// The caller's user, never the approver's: a backend credential is
	// never chosen for the person who decided (docs/backend-auth.md),
	// with the caller's JWT when the vault kept it and it has not expired.
	ctx = access.NewUserContext(ctx, k.heldUser(ctx, a))
	switch a.Status {
	case toolrouter.ApprovalDenied:
		reason := ""
		if a.Reason != nil && *a.Reason != "" {
			reason = ": " + *a.Reason
		}
		out := toolrouter.Failure(toolrouter.CategoryPermission, "denied by %s%s", *a.DecidedBy, reason)
		out.Answered = true
		return k.Finish.Finish(ctx, req, out), nil
	case toolrouter.ApprovalExpired:
		out := toolrouter.Failure(toolrouter.CategoryPermission, "approval expired")
		out.Answered = true
		return k.Finish.Finish(ctx, req, out), nil
	case toolrouter.ApprovalApproved:
	default:
		return nil, fmt.Errorf("approval %s is %s, not decided", a.ID, a.Status)
	}
	sum := sha256.Sum256(a.Arguments)
	var args map[string]any
	if hex.EncodeToString(sum[:]) != a.ArgumentsSHA256 || json.Unmarshal(a.Arguments, &args) != nil || args == nil {
		return k.Finish.Finish(ctx, req, toolrouter.Failure(toolrouter.CategoryPermission, "approval %s: the stored arguments do not match their SHA-256; not run", a.ID)), nil
	}
	req.Call.Arguments, req.Result.Arguments = args, args
	tool, ok := k.Tools().Lookup(a.ToolName)
	if !ok {
		return k.Finish.Finish(ctx, req, toolrouter.Failure(toolrouter.CategoryNotFound, "Tool '%s' not found", a.ToolName)), nil
	}
	// The client as it is now: a reload may have narrowed its scope or
	// removed it since the call was held.
	if a.Client != "" {
		var c *access.Client
		if k.Client != nil {
			c = k.Client(a.Client)
		}
		if c == nil || !c.Allows(a.ToolName) || c.Bound() && (k.Views == nil || !k.Views().Reaches(c, a.ToolName)) {
			return k.Finish.Finish(ctx, req, toolrouter.Failure(toolrouter.CategoryPermission, "the client may no longer call %s", a.ToolName)), nil
		}
	}
	req.Tool = tool
	if b := a.OutputBudget; b != nil { // the budget of the request that held it (a view's, a run's)
		req.OutputBudget = toolrouter.OutputBudget{Bytes: b.MaxOutputBytes, Tokens: b.MaxOutputTokens}
	}
	return k.Finish.Finish(ctx, req, k.next(ctx, req)), nil
}

// Approval returns an approval, expiring it first when its time is past.
func (k *Keeper) Approval(ctx context.Context, id string) (*toolrouter.Approval, error) {
	if k.Store == nil {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "approval %q not found", id)
	}
	if _, err := k.ExpireDue(ctx); err != nil {
		return nil, toolrouter.Unavailable("store", err)
	}
	a, err := k.Store.GetApproval(ctx, id)
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
func (k *Keeper) ListApprovals(ctx context.Context, f toolrouter.ApprovalFilter) ([]*toolrouter.Approval, error) {
	if k.Store == nil {
		return []*toolrouter.Approval{}, nil
	}
	if _, err := k.ExpireDue(ctx); err != nil {
		return nil, toolrouter.Unavailable("store", err)
	}
	if c := access.FromContext(ctx); !c.MayApprove() {
		f.Client = c.LabelName() // in the store: never another client's rows
	}
	as, err := k.Store.ListApprovals(ctx, f)
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
func (k *Keeper) Result(ctx context.Context, toolCallID, owner string) (*toolrouter.Result, error) {
	notFound := toolrouter.Errorf(toolrouter.ENOTFOUND, "tool call %q not found", toolCallID)
	c := access.FromContext(ctx)
	if owner == "" {
		owner = c.LabelName()
	}
	if k.Store == nil || owner != c.LabelName() && !c.MayApprove() {
		return nil, notFound
	}
	if _, err := k.ExpireDue(ctx); err != nil {
		return nil, toolrouter.Unavailable("store", err)
	}
	res, err := k.Store.GetResult(ctx, toolrouter.ScopedKey(owner, toolCallID))
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
	a, err := k.Store.GetApproval(ctx, res.ApprovalID)
	if err != nil || !mayRead(c, a.Client) {
		return nil, notFound
	}
	return res, nil
}

// mayRead reports whether c may see what client owner's call made.
func mayRead(c *access.Client, owner string) bool {
	return c.MayApprove() || c.LabelName() == owner
}
