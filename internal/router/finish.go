package router

import (
	"context"
	"encoding/json"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/lograte"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Observer records tool call outcomes (metrics) by client (a configured
// client name, "" when the service is open); ctx is the call's, with its
// span (an exemplar).
type Observer interface {
	ToolCall(ctx context.Context, client, tool, outcome string, d time.Duration)
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

// Finisher completes the result of a call that went through the pipeline
// (or was settled after its approval): the outcome, the provider result,
// the terminal update, the metric, the audit record and the stored
// result. Its fields are set once.
type Finisher struct {
	Results  Results  // may be nil
	Observer Observer // may be nil
	// Audit may be nil: then there is no audit record, nor the ledger
	// entry of the call's cost, which the record carries to the store
	// (toolrouter.AuditRecord.Spend; service.New always sets it).
	Audit Auditor
	// LogLimit rate-limits the errors of a failing store (a flood of
	// failed saves is a few lines with a count); nil: not limited.
	LogLimit *lograte.Limiter
	Now      func() time.Time

	saves toolrouter.Saves // the contexts of result saves
}

func (f *Finisher) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// routed is a result with room for what its pointer fields point to, so
// that a route allocates them together.
type routed struct {
	res            toolrouter.Result
	providerCallID string
	errMsg         string
	errCat         toolrouter.ErrorCategory
	// The saving of the result (SaveAudited): the finisher and the
	// route's context, for its log.
	f   *Finisher
	ctx context.Context
	// full is the whole output of a shaped one: stored, not answered;
	// checked reports that it and the output are known to be valid JSON
	// (encodeResult).
	full    json.RawMessage
	checked bool
}

// SaveAudited stores the result with its audit records (Results).
func (x *routed) SaveAudited(sctx context.Context, recs []toolrouter.AuditRecord) error {
	res := &x.res
	if x.full != nil {
		stored := x.res
		stored.FullOutput = x.full
		// Encoded as the answer was (nil on failure: the store then
		// encodes it, and reports the error).
		stored.JSON, _ = encodeResult(&stored, x.checked)
		res = &stored
	}
	err := x.f.Results.SaveResult(sctx, res, recs...)
	if err != nil {
		x.f.LogLimit.Event(zerolog.Ctx(x.ctx), zerolog.ErrorLevel, "store route result").Err(err).Str("tool_call_id", x.res.ToolCallID).Int("audit_records", len(recs)).Msg("store route result")
	}
	return err
}

// Finish completes req's result (req.Result, as the call left it) with
// out (approval.Finisher).
func (f *Finisher) Finish(ctx context.Context, req *toolrouter.CallRequest, out toolrouter.Outcome) *toolrouter.Result {
	x := &routed{res: *req.Result}
	req.Result = &x.res
	if req.Start.IsZero() {
		req.Start = f.now()
	}
	return f.finish(ctx, req, x, out)
}

// finish completes the result of req, x, with out and emits its terminal
// update; out.Answered says the tool gave an answer of its own (complete)
// rather than none (error).
func (f *Finisher) finish(ctx context.Context, req *toolrouter.CallRequest, x *routed, out toolrouter.Outcome) *toolrouter.Result {
	res := &x.res
	elapsed := f.now().Sub(req.Start) // one clock reading for the result and the metric
	res.DurationMS = float64(elapsed.Nanoseconds()) / 1e6
	if res.DurationMS <= 0 {
		res.DurationMS = 0.001
	}
	res.Success = out.Success()
	res.Output = out.Output
	if out.InvalidUTF8 {
		res.Notes = append(res.Notes, toolrouter.NoteInvalidUTF8)
	}
	res.Notes = append(res.Notes, req.Notes...)
	res.MCPResult = out.MCPResult
	res.BackendTask = out.Task
	res.Cost, res.RetryAfter = req.Cost, req.RetryAfter
	if out.FullOutput != nil {
		res.Truncated = true
		res.Notes = append(res.Notes, out.Note)
		x.full = out.FullOutput
	}
	if !res.Success {
		x.errMsg, x.errCat = out.Err, out.Category
		if x.errCat == "" {
			x.errCat = toolrouter.ClassifyError(x.errMsg)
		}
		res.Error, res.ErrorCategory = &x.errMsg, &x.errCat
		if out.ConnectURL != "" {
			res.Status, res.ConnectURL = toolrouter.ResultAuthRequired, out.ConnectURL
		}
	}
	if res.IsValidation && res.Success {
		res.ValidationPassed = validationPassed(out.Output)
	}
	call := req.Call
	call.Format = res.ProviderFormat
	if req.SentName != "" {
		call.ToolName = req.SentName // answered under the name the model called (call_tool)
	}
	if !call.HasProviderCallID {
		// The provider sent no id (Ollama, Gemini, legacy function_call):
		// answer under the stable id so the message still has one.
		call.ProviderCallID = req.ID
	}
	res.ProviderResult = format.ToolResultContent(call, res.Success, out.Output, out.Err, out.MCPResult)
	if req.Emit != nil {
		status := toolrouter.StatusComplete
		if !out.Answered {
			status = toolrouter.StatusError
		}
		u := toolrouter.Update{ToolCallID: req.ID, Status: status, ToolName: res.ToolName}
		if !res.Success {
			u.Message = out.Err
		}
		req.Emit(u)
	}
	if f.Observer != nil {
		outcome := "success"
		if !res.Success {
			outcome = string(*res.ErrorCategory)
		}
		name := res.ToolName
		if name == "" || !out.Answered && (*res.ErrorCategory == toolrouter.CategoryNotFound || *res.ErrorCategory == toolrouter.CategoryParse) {
			name = "(unknown)" // keep metric label cardinality bounded
		}
		f.Observer.ToolCall(ctx, access.FromContext(ctx).LabelName(), name, outcome, elapsed)
	}
	// Final: encoded once, for the store and the answer (nil on failure:
	// each then encodes it, and reports the error, as before). An output
	// its executor checked (and what the steps after it made of it) is
	// not parsed again to check it (issue 37 item 1); the provider
	// result's raw values are taken from it.
	checked := out.Output == nil || out.OutputChecked()
	x.checked = checked && (out.FullOutput == nil || out.FullOutputChecked())
	res.JSON, _ = encodeResult(res, checked)
	var save toolrouter.AuditSaver
	if f.Results != nil {
		// The tool ran: keep its result, with its audit record in the same
		// transaction (docs/security.md "Audit trail"), even if the caller went away
		// (the Auditor's ctx outlives it).
		x.f, x.ctx = f, ctx
		save = x
	}
	if f.Audit != nil {
		f.Audit.RecordWith(ctx, save, auditRecord(req, res, out.Credential))
	} else if save != nil {
		_ = save.SaveAudited(f.saves.Context(ctx), nil)
	}
	return res
}

// auditRecord is the audit record of a finished call (docs/security.md "Audit
// trail"): the digest of its arguments, never the arguments; cred is the
// backend credential the call was made with (docs/backend-auth.md; nil:
// the registry's static headers).
func auditRecord(req *toolrouter.CallRequest, res *toolrouter.Result, cred *toolrouter.CredentialUse) toolrouter.AuditRecord {
	a := toolrouter.AuditRecord{Time: req.Start.UTC(), Client: res.Client, EntryPoint: req.EntryPoint(),
		PlanID: res.PlanID, Sequence: &res.Sequence, ToolCallID: res.ToolCallID, ToolName: req.Call.ToolName,
		ArgsSHA256: req.ArgsSHA256, Outcome: toolrouter.AuditSuccess, DurationMS: res.DurationMS}
	if a.ArgsSHA256 == "" {
		a.ArgsSHA256 = toolrouter.ArgsDigest(res.Arguments)
	}
	if res.ErrorCategory != nil {
		a.Outcome, a.ErrorCategory = toolrouter.AuditFailure, string(*res.ErrorCategory)
	}
	if res.ErrorCategory == nil || *res.ErrorCategory != toolrouter.CategoryNotFound {
		a.Tool = res.ToolName
	}
	if req.Denied != "" {
		a.Tool, a.Outcome = req.Denied, toolrouter.AuditDenied
	}
	a.Guardrails = req.Guards
	a.Credential = cred
	a.ParentCallID = req.Parent
	a.Cost, a.Spend = req.Cost, req.Spend
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
