package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Runs that pause (docs/approvals.md "Approvals"): a turn with calls held for an
// approver stores the run as awaiting_approval, with what the loop needs
// to go on (resumeState), and ends its goroutine. Once every held call of
// that turn is decided, any replica resumes it: the one that decided the
// last call (approval.Keeper.Settled), or any that reads the run (Get). One
// conditional update of the store (TransitionRun) makes exactly one of
// them the replica that continues the loop.

// resumeState is what a paused run's loop needs to go on: the conversation
// up to the paused turn's assistant message, and that turn's calls.
type resumeState struct {
	Request   Request        `json:"request"`
	Messages  []llm.Message  `json:"messages"`
	Iteration int            `json:"iteration"`
	Calls     []llm.ToolCall `json:"calls"`
	// TurnStart is where the paused turn's records start in the run's
	// tool_calls.
	TurnStart int    `json:"turn_start"`
	LastCall  string `json:"last_call,omitempty"`
	Repeats   int    `json:"repeats,omitempty"`
	// Found are the tools search_tools found that the run offers since
	// (search_mode: inject): the resumed run offers them too.
	Found []string `json:"found,omitempty"`
	// User is the user the run is made for (its sub; "" when none): the
	// resumed run goes on for that user, never the one whose request
	// resumes it (an approver's).
	User string `json:"user,omitempty"`
}

// Subjects is the token vault, as far as paused runs need it.
type Subjects interface {
	KeepSubjectToken(ctx context.Context, key, owner string, token toolrouter.Secret, now time.Time) error
	SubjectToken(ctx context.Context, key string) (toolrouter.Secret, bool, error)
}

// subjectKey is where the caller's JWT of a paused run is kept.
func subjectKey(runID string) string { return "run:" + runID }

// held reports whether a call of the turn waits for an approver.
func held(records []toolrouter.ToolCallRecord) bool {
	for _, rec := range records {
		if rec.Status == toolrouter.ResultAwaitingApproval {
			return true
		}
	}
	return false
}

// pause stores the run as awaiting_approval after a turn whose other calls
// ran, and ends the loop here.
func (x *execution) pause(ctx context.Context, iter int, calls []llm.ToolCall, records []toolrouter.ToolCallRecord) *outcome {
	st := resumeState{Request: x.p.req, Messages: x.messages, Iteration: iter, Calls: calls, LastCall: x.lastCall, Repeats: x.repeats, Found: x.found}
	if u := access.UserFromContext(ctx); u != nil && u.Subject != "" {
		st.User = u.Subject
		if x.r.Subjects != nil && !u.Token.IsZero() {
			if err := x.r.Subjects.KeepSubjectToken(ctx, subjectKey(x.run.RunID), toolrouter.ScopedKey(x.run.Client, u.Subject), u.Token, x.r.now()); err != nil {
				x.log.Warn().Err(err).Msg("keep the caller's token for the resumed run")
			}
		}
	}
	x.mu.Lock()
	st.TurnStart = len(x.run.ToolCalls)
	x.run.ToolCalls = append(x.run.ToolCalls, records...)
	// The state is part of the run's stored document (docs/runs.md "Runs:
	// limits, cancellation and size"): it gets what the capped run leaves.
	limit := x.r.MaxRunBytes
	if limit <= 0 {
		limit = DefaultMaxRunBytes
	}
	capRun(x.run, limit)
	b, err := capResume(st, limit-jsonSize(x.run))
	if err != nil {
		x.mu.Unlock()
		return &outcome{status: toolrouter.RunFailed, err: "cannot store the paused run: " + err.Error()}
	}
	x.run.PendingApprovals = nil
	for _, rec := range records {
		if rec.Status == toolrouter.ResultAwaitingApproval {
			x.run.PendingApprovals = append(x.run.PendingApprovals,
				toolrouter.PendingApproval{ApprovalID: rec.ApprovalID, ToolCallID: rec.ToolCallID, ToolName: rec.ToolName})
		}
	}
	x.run.Status, x.run.Resume = toolrouter.RunAwaitingApproval, b
	x.mu.Unlock()
	x.save(ctx)
	x.emit(EventAwaitingApproval, x.run)
	x.log.Info().Int("iteration", iter).Int("pending_approvals", len(x.run.PendingApprovals)).Msg("run awaits approval")
	// A decision may have come while the turn's other calls ran, before
	// the run was stored as paused: the decider saw it running and left it.
	x.r.ResumeLater(context.WithoutCancel(ctx), x.run.RunID)
	return &outcome{status: toolrouter.RunAwaitingApproval}
}

// ResumeLater resumes a paused run in the background when every held call
// of its turn is decided (else it does nothing); the run then continues
// on this replica, unless another claimed it first.
func (r *Runner) ResumeLater(ctx context.Context, runID string) {
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		if run := r.Resume(context.WithoutCancel(ctx), runID); run != nil {
			zerolog.Ctx(ctx).Debug().Str("run_id", runID).Str("status", string(run.Status)).Msg("resumed run ended")
		}
	}()
}

// Resume continues a paused run whose held calls are all decided, here,
// and returns it once it ends (or pauses again); nil when the run is not
// paused, still waits, or another replica claimed it.
func (r *Runner) Resume(ctx context.Context, runID string) *toolrouter.Run {
	log := zerolog.Ctx(ctx).With().Str("run_id", runID).Logger()
	run, err := r.Runs.GetRun(ctx, runID)
	if err != nil || run.Status != toolrouter.RunAwaitingApproval {
		log.Debug().AnErr("error", err).Msg("run not paused; nothing to resume")
		return nil
	}
	var st resumeState
	if err := json.Unmarshal(run.Resume, &st); err != nil || st.TurnStart < 0 || st.TurnStart+len(st.Calls) > len(run.ToolCalls) {
		r.abandon(ctx, run, "the paused run's stored state is unreadable")
		return nil
	}
	turn := run.ToolCalls[st.TurnStart : st.TurnStart+len(st.Calls)]
	for i := range turn {
		if turn[i].Status != toolrouter.ResultAwaitingApproval {
			continue
		}
		res, err := r.Runs.GetResult(ctx, toolrouter.ScopedKey(run.Client, turn[i].ToolCallID))
		if err != nil {
			log.Warn().Err(err).Str("tool_call_id", turn[i].ToolCallID).Msg("read a held call's result")
			return nil
		}
		if res.Status == toolrouter.ResultAwaitingApproval {
			log.Debug().Str("tool_call_id", turn[i].ToolCallID).Msg("paused run still waits for an approver")
			return nil
		}
		record(&turn[i], res)
		addHeldCost(run, &turn[i])
	}
	var client *access.Client
	if run.Client != "" {
		if r.Client != nil {
			client = r.Client(run.Client)
		}
		if client == nil {
			r.abandon(ctx, run, fmt.Sprintf("client %q no longer exists; the run cannot go on", run.Client))
			return nil
		}
	}
	// As its client and its user, never the user of the request that
	// resumes it (an approver's), with the caller's JWT when the vault kept
	// it and it has not expired (docs/backend-auth.md).
	var user *access.User
	if st.User != "" {
		user = &access.User{Subject: st.User, Later: true}
		if r.Subjects != nil {
			tok, ok, err := r.Subjects.SubjectToken(ctx, subjectKey(run.RunID))
			if err != nil {
				log.Warn().Err(err).Msg("read the caller's kept token")
			}
			if ok {
				user.Token = tok
			}
		}
	}
	ctx = access.NewUserContext(access.NewContext(ctx, client), user)
	p, err := r.prepare(ctx, st.Request)
	if err != nil {
		r.abandon(ctx, run, "the run cannot go on: "+toolrouter.ErrorMessage(err))
		return nil
	}
	p.client = run.Client
	run.Status, run.Owner, run.HeartbeatAt = toolrouter.RunRunning, r.Owner, r.beatAt(r.now())
	run.PendingApprovals, run.Resume = nil, nil
	ok, err := r.Runs.TransitionRun(ctx, run, toolrouter.RunAwaitingApproval)
	if err != nil {
		log.Warn().Err(err).Msg("claim the paused run")
	}
	if !ok {
		log.Debug().Msg("paused run claimed by another replica, or cancelled")
		return nil
	}
	r.enter(run.Client)
	log.Info().Int("iteration", st.Iteration).Msg("run resumed after its approvals were decided")
	x := r.newExecution(ctx, run, p, nil)
	x.messages, x.lastCall, x.repeats = st.Messages, st.LastCall, st.Repeats
	for _, name := range st.Found {
		x.offerFound(name)
	}
	return r.drive(ctx, x, st.Iteration+1, func(ctx context.Context) *outcome {
		x.reply(st.Calls, turn)
		x.save(ctx)
		return x.checkRepeats(ctx, st.Calls)
	})
}

// abandon ends a paused run that cannot go on as failed.
func (r *Runner) abandon(ctx context.Context, run *toolrouter.Run, msg string) {
	now := r.now()
	run.Status, run.Error, run.FinishedAt = toolrouter.RunFailed, &msg, &now
	run.PendingApprovals, run.Resume = nil, nil
	if _, err := r.Runs.TransitionRun(ctx, run, toolrouter.RunAwaitingApproval); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("run_id", run.RunID).Msg("fail the paused run")
	}
}

// enter counts a resumed run of client as active here (it was admitted
// when it started).
func (r *Runner) enter(client string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.act.perClient == nil {
		r.act = active{perClient: map[string]int{}, cancel: map[string]context.CancelCauseFunc{}}
	}
	r.act.perClient[client]++
}

// capResume encodes st within budget bytes where it can: the largest
// message contents and call arguments are replaced by a note, which the
// model sees in their place once the run resumes.
func capResume(st resumeState, budget int64) ([]byte, error) {
	b, err := json.Marshal(st)
	if err != nil || int64(len(b)) <= budget {
		return b, err
	}
	var c resumeState // a copy: the parts below may share the live run's
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	type big struct {
		content *string
		args    *map[string]any
		size    int64
	}
	var parts []big
	addCalls := func(calls []llm.ToolCall) {
		for i := range calls {
			parts = append(parts, big{args: &calls[i].Arguments, size: jsonSize(calls[i].Arguments)})
		}
	}
	for i := range c.Messages {
		parts = append(parts, big{content: &c.Messages[i].Content, size: jsonSize(c.Messages[i].Content)})
		addCalls(c.Messages[i].ToolCalls)
	}
	addCalls(c.Calls)
	slices.SortFunc(parts, func(a, b big) int { return int(b.size - a.size) })
	size := int64(len(b))
	note := map[string]any{"truncated": true, "note": truncatedNote}
	for _, p := range parts {
		if size <= budget || p.size <= jsonSize(truncatedNote)+jsonSize(note) {
			break
		}
		if p.content != nil {
			*p.content = truncatedNote
			size += jsonSize(truncatedNote) - p.size
		} else {
			*p.args = note
			size += jsonSize(note) - p.size
		}
	}
	return json.Marshal(c)
}

// addHeldCost adds what a held call cost, once it ran after its approval,
// to the run's totals and to its turn (addToolCosts skipped it while it
// waited: it had no cost yet).
func addHeldCost(run *toolrouter.Run, rec *toolrouter.ToolCallRecord) {
	if rec.Cost == nil {
		return
	}
	run.AddCost(*rec.Cost)
	for i := len(run.Turns) - 1; i >= 0; i-- {
		if run.Turns[i].Iteration == rec.Iteration {
			run.Turns[i].Tools = append(run.Turns[i].Tools, *rec.Cost)
			return
		}
	}
}
