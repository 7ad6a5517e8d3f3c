package sqlstore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// AuditColumns are the audit table's columns in AuditRecord order (id
// first), for INSERT and SELECT.
const AuditColumns = "id, at, client, entry_point, plan_id, sequence, tool_call_id, tool_name, tool, args_sha256, outcome, error_category, duration_ms, replica, guardrails, calls, tools, credential, parent_tool_call_id"

// AuditSelect is the query of the records f selects, newest first by
// their time (the call's start), then id: ph writes the i-th placeholder
// (1-based), at converts a time to its column value. A cursor whose id is
// no record id selects nothing.
func AuditSelect(f toolrouter.AuditFilter, ph func(int) string, at func(time.Time) any) (string, []any) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", ph(len(args))))
	}
	if !f.Before.IsZero() {
		id, err := f.Before.IntID()
		if err != nil {
			id = 0 // selects nothing: ids start at 1
		}
		args = append(args, at(f.Before.Time), id)
		where = append(where, "(at, id) < ("+ph(len(args)-1)+", "+ph(len(args))+")")
	}
	if f.Client != "" {
		add("client = ?", f.Client)
	}
	if f.Tool != "" {
		// A refused request's record names its tools in tools (migration
		// 0071, toolrouter.ToolNames).
		args = append(args, f.Tool, f.Tool, toolrouter.ToolsPattern(f.Tool))
		where = append(where, "(tool = "+ph(len(args)-2)+" OR tool_name = "+ph(len(args)-1)+" OR tools LIKE "+ph(len(args))+` ESCAPE '\')`)
	}
	if f.Outcome != "" {
		add("outcome = ?", f.Outcome)
	}
	if !f.Since.IsZero() {
		add("at >= ?", at(f.Since))
	}
	if !f.Until.IsZero() {
		add("at < ?", at(f.Until))
	}
	q := "SELECT " + AuditColumns + " FROM audit"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY at DESC, id DESC"
	if f.Limit > 0 {
		q += " LIMIT " + strconv.Itoa(f.Limit)
	}
	return q, args
}

// AuditDest returns the scan destinations of a record's columns but at
// (scanned into at by the caller's type) and sequence.
func AuditDest(r *toolrouter.AuditRecord, at, seq any) []any {
	return []any{&r.ID, at, &r.Client, &r.EntryPoint, &r.PlanID, seq, &r.ToolCallID, &r.ToolName,
		&r.Tool, &r.ArgsSHA256, &r.Outcome, &r.ErrorCategory, &r.DurationMS, &r.Replica, jsonColumn[[]toolrouter.GuardrailDecision]{&r.Guardrails, "guardrails"}, &r.Calls, &r.Tools, jsonColumn[*toolrouter.CredentialUse]{&r.Credential, "credential"}, &r.ParentCallID}
}

// jsonColumn scans a JSON text column ("" for none, NULL left as is)
// into *dst: the guardrails and credential columns.
type jsonColumn[T any] struct {
	dst  *T
	what string
}

// Scan implements sql.Scanner.
func (c jsonColumn[T]) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("audit %s: unexpected %T", c.what, src)
	}
	var zero T
	*c.dst = zero
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, c.dst); err != nil {
		return fmt.Errorf("audit %s: %w", c.what, err)
	}
	return nil
}

// AuditGuardrails is a record's guardrails column value: its decisions as
// JSON, "" when there are none (docs/trusting-tools.md "Trusting tools").
func AuditGuardrails(r *toolrouter.AuditRecord) string {
	if len(r.Guardrails) == 0 {
		return ""
	}
	b, err := json.Marshal(r.Guardrails)
	if err != nil {
		return ""
	}
	return string(b)
}

// AppendAuditValues appends to dst a record's column values but id, at
// and sequence, in AuditColumns order after sequence.
func AppendAuditValues(dst []any, r *toolrouter.AuditRecord) []any {
	return append(dst, r.ToolCallID, r.ToolName, r.Tool, r.ArgsSHA256, r.Outcome, r.ErrorCategory, r.DurationMS, r.Replica, AuditGuardrails(r), r.Calls, r.Tools, AuditCredential(r), r.ParentCallID)
}

// AuditSequence is a record's sequence column value (nil: NULL), read now:
// a queued write must not see later changes to the record.
func AuditSequence(r *toolrouter.AuditRecord) any {
	if r.Sequence == nil {
		return nil
	}
	return *r.Sequence
}

// AuditCredential is a record's credential column value: the backend
// credential it was made with as JSON {mode, sub, act, token_id}, never
// the token; "" for static headers (docs/backend-auth.md).
func AuditCredential(r *toolrouter.AuditRecord) string {
	if r.Credential == nil {
		return ""
	}
	b, err := json.Marshal(r.Credential)
	if err != nil {
		return ""
	}
	return string(b)
}
