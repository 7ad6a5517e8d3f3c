// Package audit writes the audit trail (docs/security.md "Audit trail"): one record
// per tool call attempt, appended to the store and logged as one
// component=audit line, and the refusals of a rate limiter as records of
// their own.
package audit

import (
	"context"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/lograte"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Appender stores audit records (store.Tenancy).
type Appender interface {
	AppendAudit(ctx context.Context, recs []toolrouter.AuditRecord) error
}

// Trail writes audit records. A nil *Trail writes nothing.
type Trail struct {
	Store   Appender
	Replica string
	Log     zerolog.Logger
	Now     func() time.Time
	// Limit rate-limits the errors of a failing store; nil: not limited.
	Limit *lograte.Limiter
	saves toolrouter.Saves // the contexts of saves, which outlive their callers
}

// Record stamps recs with the time (when unset) and the replica, appends
// them to the store in one write, even when the caller went away, and
// logs each. A record's Spend (its call's settled ledger entry) is
// written in that same write, whichever stores it (docs/costs.md "The
// ledger").
func (t *Trail) Record(ctx context.Context, recs ...toolrouter.AuditRecord) {
	t.RecordWith(ctx, nil, recs...)
}

// RecordWith is Record with save, when not nil, storing the records
// instead of the trail's own write: the caller's, which writes them in the
// same transaction as the call's result (docs/security.md "Audit trail") and reports
// its own failure.
func (t *Trail) RecordWith(ctx context.Context, save toolrouter.AuditSaver, recs ...toolrouter.AuditRecord) {
	if t == nil || len(recs) == 0 {
		if save != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), toolrouter.SaveTimeout)
			_ = save.SaveAudited(sctx, nil)
			cancel()
		}
		return
	}
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	at := now().UTC()
	for i := range recs {
		if recs[i].Time.IsZero() {
			recs[i].Time = at
		}
		recs[i].Replica = t.Replica
	}
	sctx := t.saves.Context(ctx)
	if save != nil {
		_ = save.SaveAudited(sctx, recs)
	} else if err := t.Store.AppendAudit(sctx, recs); err != nil {
		t.Limit.Event(&t.Log, zerolog.ErrorLevel, "store audit records").Err(err).Str("component", "audit").Int("records", len(recs)).Msg("store audit records")
	}
	// The log lines: none when the log is above info (issue 37: the
	// fields of each line were gathered for nothing, the request id and
	// the span looked up through the whole context chain).
	if t.Log.GetLevel() > zerolog.InfoLevel || zerolog.GlobalLevel() > zerolog.InfoLevel {
		return
	}
	// The request and the span of the calls, so that an operator goes from
	// an audit line to its request's lines and its trace.
	reqID, sc := toolrouter.RequestID(ctx), trace.SpanContextFromContext(ctx)
	for i := range recs {
		r := &recs[i]
		e := t.Log.Info()
		if r.Outcome == toolrouter.AuditRateLimited {
			// A client hammering past its limit must not flood the log
			// (its records all stay in the store).
			e = t.Limit.Event(&t.Log, zerolog.InfoLevel, "audit rate_limited "+r.Client)
			e = e.Int("calls", r.Calls).Strs("tools", r.Tools)
		}
		e = e.Str("component", "audit").Time("at", r.Time).Str("client", r.Client)
		if reqID != "" {
			e = e.Str("request_id", reqID)
		}
		if sc.IsValid() {
			e = e.Str("trace_id", sc.TraceID().String()).Str("span_id", sc.SpanID().String())
		}
		e = e.Str("entry_point", r.EntryPoint).Str("plan_id", r.PlanID)
		if r.Sequence != nil {
			e = e.Int64("sequence", *r.Sequence)
		}
		if r.ParentCallID != "" { // a call a code mode program made
			e = e.Str("parent_tool_call_id", r.ParentCallID)
		}
		e.Str("tool_call_id", r.ToolCallID).Str("tool_name", r.ToolName).Str("tool", r.Tool).
			Str("arguments_sha256", r.ArgsSHA256).Str("outcome", r.Outcome).Str("error_category", r.ErrorCategory).
			Float64("duration_ms", r.DurationMS).Str("replica", r.Replica).Msg("tool call")
	}
}

// Taker is a rate limiter (access.Window, access.Shared).
type Taker interface {
	Take(ctx context.Context, c *access.Client, n int) (access.Verdict, error)
}

// Limiter is a rate limiter whose refusals are audited: a refused request
// is one rate_limited record of the entry point its calls came in by,
// with the number of calls it held and their distinct tool names (read
// only then), however many calls it held.
type Limiter struct {
	Taker
	Trail *Trail
	// Canonical, when set, is the registry name of the tool a name sent
	// reaches in view (pipeline.Canonical), which the record keeps so
	// that GET /audit?tool=<canonical> finds a call sent under an alias;
	// nil: the names as sent.
	Canonical func(ctx context.Context, view toolrouter.View, name string) string
}

// Take counts calls of client c against its rate limit.
func (l Limiter) Take(ctx context.Context, c *access.Client, calls toolrouter.Calls) (access.Verdict, error) {
	v, err := l.Taker.Take(ctx, c, calls.N)
	if err == nil && !v.Allowed {
		names := toolrouter.RefusedTools(calls.ToolNames()) // a copy, at most 32
		if l.Canonical != nil {
			for i, name := range names {
				names[i] = l.Canonical(ctx, calls.View, name)
			}
			names = toolrouter.RefusedTools(names) // an alias and its tool are one name
		}
		l.Trail.Record(ctx, toolrouter.AuditRecord{Client: c.LabelName(), EntryPoint: calls.EntryPoint(),
			Outcome: toolrouter.AuditRateLimited, ErrorCategory: "rate_limited", Calls: max(calls.N, 1),
			Tools: names})
	}
	return v, err
}
