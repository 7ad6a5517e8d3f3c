package toolrouter

import (
	"context"
	"time"
)

// ScopedKey is the store key of a plan, a stored route result or an
// Idempotency-Key of a client (docs/security.md "Clients", isolation): the client's
// name and the key, so two clients using the same plan_id share neither
// a sequence nor results. The caller of an open service ("") keeps the
// bare key. The separator (U+001F) cannot appear in a client name.
func ScopedKey(client, key string) string {
	if client == "" {
		return key
	}
	return client + "\x1f" + key
}

// Audit outcomes (docs/security.md "Audit trail").
const (
	AuditSuccess     = "success"
	AuditFailure     = "failure"
	AuditDenied      = "denied"
	AuditRateLimited = "rate_limited"
	// AuditSkillLoaded is a read of a skill's SKILL.md through /mcp (a
	// skill load, docs/mcp.md "Skills").
	AuditSkillLoaded = "skill_loaded"
)

// Entry points of a tool call, as audit records name them.
const (
	EntryRoute      = "route"
	EntryRouteBatch = "route_batch"
	EntryRuns       = "runs"
	EntryMCP        = "mcp"
)

// AuditSaver stores audit records in place of the audit trail's own
// write: a route's result store, which writes them in the same transaction
// as the result (docs/security.md "Audit trail") and reports its own failure.
type AuditSaver interface {
	SaveAudited(ctx context.Context, recs []AuditRecord) error
}

// AuditRecord is one tool call attempt (docs/security.md "Audit trail"): who, from
// where, which tool, with which arguments' digest (never the arguments),
// and how it ended. ID is the store's, set when it is appended.
type AuditRecord struct {
	ID            int64     `json:"id"`
	Time          time.Time `json:"time"` // when the call started; listed by it
	Client        string    `json:"client"`
	EntryPoint    string    `json:"entry_point"`
	PlanID        string    `json:"plan_id"`
	Sequence      *int64    `json:"sequence"`
	ToolCallID    string    `json:"tool_call_id"`
	ToolName      string    `json:"tool_name"`
	Tool          string    `json:"tool"`
	ArgsSHA256    string    `json:"arguments_sha256"`
	Outcome       string    `json:"outcome"`
	ErrorCategory string    `json:"error_category"`
	DurationMS    float64   `json:"duration_ms"`
	Replica       string    `json:"replica"`
	FinishedAt    time.Time `json:"finished_at"` // Time plus the duration (Finished), set by GET /audit
	// Guardrails are the decisions of the guardrails that looked at the
	// call, in the order they ran (docs/trusting-tools.md "Trusting tools"); absent when
	// none did.
	Guardrails []GuardrailDecision `json:"guardrails,omitempty"`
	// Credential names the backend credential the call was made with
	// (docs/backend-auth.md): the user (sub), who acted for them (act),
	// the mode and the token's id, never the token; absent for static
	// headers.
	Credential *CredentialUse `json:"credential,omitempty"`
	// ParentCallID is the tool_call_id of the execute_code call whose
	// program made this call (docs/code-mode.md); absent for a call a
	// client made.
	ParentCallID string `json:"parent_tool_call_id,omitempty"`
	// Cost is what the call cost, or that it was unpriced
	// (docs/costs.md); absent for a call that did not run.
	Cost *Cost `json:"cost,omitempty"`
	// Spend, on the record of a call that ran, is its settled spend
	// ledger entry, which the store writes with the record, in the same
	// transaction (docs/costs.md "The ledger"): neither serialised nor a
	// column of the trail.
	Spend *SpendEntry `json:"-"`
	// Calls and Tools, on a rate_limited record only: one record stands
	// for a whole refused request, the number of calls it held and the
	// distinct canonical names of the tools they reach (a name that
	// reaches none as sent; at most 32).
	Calls int       `json:"calls,omitempty"`
	Tools ToolNames `json:"tools,omitempty"`
}

// Finished is when the call ended: its start and its duration.
func (r *AuditRecord) Finished() time.Time {
	return r.Time.Add(time.Duration(r.DurationMS * float64(time.Millisecond)))
}

// GuardrailDecision is what one guardrail decided about one call.
type GuardrailDecision struct {
	Name  string `json:"name"`
	Phase string `json:"phase"` // before | after
	// Decision is allow, deny or modify as the hook answered, or error
	// when it gave no valid answer (Reason says why, and whether the call
	// went on: on_error).
	Decision string `json:"decision"`
	// Mode is audit for a hook whose decision was only recorded, not
	// applied; absent for an enforced one.
	Mode   string `json:"mode,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Redacted counts the secrets a redacting guardrail replaced.
	Redacted int `json:"redacted,omitempty"`
}

// AuditFilter selects audit records: every set field must match. Since
// is inclusive and Until exclusive, on Time; Before (the cursor of a
// previous page, zero for the first) pages back in time. Records come
// newest first by Time, then id.
type AuditFilter struct {
	Client  string
	Tool    string // matches the canonical name or the name as sent
	Outcome string
	Since   time.Time
	Until   time.Time
	Before  Cursor
	Limit   int
}

// ArgsDigest is the hex SHA-256 of the canonical JSON of arguments (keys
// sorted, as encoding/json writes maps).
// Arguments that cannot be encoded digest as no bytes.
func ArgsDigest(args map[string]any) string {
	b, _ := canonicalJSON(args)
	return sha256Hex(b)
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying the id of the HTTP request it serves
// (X-Request-Id), for the audit log line of its tool calls.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// IsRequestIDKey reports whether key is the one RequestID looks up: a
// context of the caller's own type may answer it (with the id, a string or
// a *string) instead of a context.WithValue of its own.
func IsRequestIDKey(key any) bool {
	_, ok := key.(requestIDKey)
	return ok
}

// RequestID is the request id ctx carries; "" when none.
func RequestID(ctx context.Context) string {
	switch id := ctx.Value(requestIDKey{}).(type) {
	case string:
		return id
	case *string:
		return *id
	}
	return ""
}
