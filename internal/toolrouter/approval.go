package toolrouter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// ApprovalStatus is where an approval stands (docs/approvals.md "Approvals").
type ApprovalStatus string

// Approval states: pending until decided once, or expired.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalDenied   ApprovalStatus = "denied"
	ApprovalExpired  ApprovalStatus = "expired"
)

// Valid reports whether s is one of the four states.
func (s ApprovalStatus) Valid() bool {
	switch s {
	case ApprovalPending, ApprovalApproved, ApprovalDenied, ApprovalExpired:
		return true
	}
	return false
}

// ResultAwaitingApproval is the status of a RouteResult whose call waits
// for an approver; a result decided after waiting has ResultComplete.
// Results of calls that never waited carry no status.
const (
	ResultAwaitingApproval = "awaiting_approval"
	// ResultAuthRequired is the status of a call whose user must connect
	// its backend first (Result.ConnectURL).
	ResultAuthRequired = "auth_required"
	ResultComplete     = "complete"
)

// Approval is a call held for an approver's decision (api/openapi.yaml,
// Approval). Arguments are canonical JSON (object keys sorted, as
// encoding/json writes a map) and ArgumentsSHA256 their digest: the call
// that runs on approval is exactly the one shown.
type Approval struct {
	ID              string          `json:"approval_id"`
	Status          ApprovalStatus  `json:"status"`
	ToolCallID      string          `json:"tool_call_id"`
	PlanID          string          `json:"plan_id"`
	Sequence        int64           `json:"sequence"`
	ToolName        string          `json:"tool_name"`
	Arguments       json.RawMessage `json:"arguments"`
	ArgumentsSHA256 string          `json:"arguments_sha256"`
	// Client is the caller's client name; "" for an open service.
	Client string `json:"client"`
	// RunID is the /runs run the call belongs to, "" for a route.
	RunID     string     `json:"run_id,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at,omitzero"` // zero for a definition review: it never expires
	DecidedAt *time.Time `json:"decided_at"`
	DecidedBy *string    `json:"decided_by"`
	Reason    *string    `json:"reason"`
	// Kind is ApprovalKindCall or ApprovalKindDefinition (a changed tool
	// definition, docs/trusting-tools.md "Pinned definitions"; Definition shows it).
	Kind       string            `json:"kind,omitempty"`
	Definition *DefinitionChange `json:"definition,omitempty"`
	// OutputBudget is the budget the held call's request put on its
	// output (a virtual server's, a /runs model's share of its context
	// window): the approved call is shaped to it as it would have been
	// at once; nil when there was none.
	OutputBudget *HeldBudget `json:"output_budget,omitempty"`
	// EntryPoint and CalledAs are the entry point the held call came
	// through and the tool's name as its caller sent it (a virtual
	// server's exported name, a provider alias): the audit record of the
	// settled call, written in another request, names them as the record
	// of a call run at once does. "" in an approval stored before they
	// were kept: the settling request's entry point and ToolName then.
	EntryPoint string `json:"entry_point,omitempty"`
	CalledAs   string `json:"called_as,omitempty"`
	// User is the user the held call is made for (its sub; "" when
	// none): the approved call runs for that user, never the approver
	// (docs/backend-auth.md "Who the user is").
	User string `json:"user,omitempty"`
	// Parent is the execute_code call whose program made the held call
	// (CallRequest.Parent): the settled call's audit record names it.
	Parent string `json:"parent_tool_call_id,omitempty"`
}

// HeldBudget is an Approval's OutputBudget (0: no maximum).
type HeldBudget struct {
	MaxOutputBytes  int `json:"max_output_bytes,omitempty"`
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
}

// CanonicalArguments encodes args canonically and returns the JSON and its
// SHA-256 in hex.
func CanonicalArguments(args map[string]any) (json.RawMessage, string, error) {
	b, err := canonicalJSON(args)
	if err != nil {
		return nil, "", err
	}
	return b, sha256Hex(b), nil
}

// canonicalJSON encodes args (nil as {}) with keys sorted, as encoding/json
// writes maps; on error it returns no bytes.
func canonicalJSON(args map[string]any) ([]byte, error) {
	if args == nil {
		args = map[string]any{}
	}
	return json.Marshal(args)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	var h [2 * sha256.Size]byte // on the stack: one allocation, the string's
	hex.Encode(h[:], sum[:])
	return string(h[:])
}

// Decision is an approver's verdict on a pending approval, or its expiry.
type Decision struct {
	Status ApprovalStatus // approved, denied or expired
	By     string
	Reason string
	At     time.Time
}

// Apply records d on a.
func (a *Approval) Apply(d Decision) {
	at, by, reason := d.At.UTC(), d.By, d.Reason
	a.Status, a.DecidedAt, a.DecidedBy, a.Reason = d.Status, &at, &by, &reason
}

// ApprovalFilter selects approvals: by status, run and client ("" is
// any), at most Limit (0 is no limit), newest first by CreatedAt, then
// id; Before (a previous page's cursor, zero for the first page) pages
// back in time.
type ApprovalFilter struct {
	Status ApprovalStatus
	RunID  string
	Client string
	Before Cursor
	Limit  int
}

// Match reports whether a passes the filter (Limit aside).
func (f ApprovalFilter) Match(a *Approval) bool {
	return (f.Status == "" || a.Status == f.Status) && (f.RunID == "" || a.RunID == f.RunID) &&
		(f.Client == "" || a.Client == f.Client) && f.Before.Before(a.CreatedAt, a.ID)
}

// CheckDecision says whether d may be applied to a, as every store decides:
// only a pending approval is decided, once; an approve or deny after its
// expiry is refused too (expiry settles it). Both are ECONFLICT errors.
func CheckDecision(a *Approval, d Decision) error {
	if a.Status != ApprovalPending {
		return Errorf(ECONFLICT, "approval %s is already %s", a.ID, a.Status)
	}
	if d.Status != ApprovalExpired && !d.At.Before(a.ExpiresAt) {
		return &Error{Code: ECONFLICT, Message: "approval " + a.ID + " expired", Err: ErrApprovalExpired}
	}
	return nil
}

// ErrApprovalExpired is the cause of a decision refused because the
// approval expired before it came.
var ErrApprovalExpired = errorString("approval expired")

type errorString string

func (e errorString) Error() string { return string(e) }
