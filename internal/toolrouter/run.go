package toolrouter

import (
	"encoding/json"
	"time"
)

// RunStatus is the state of a /runs run.
type RunStatus string

// Run states. A run is running until it completes (the model answered),
// terminates (a limit stopped it), fails (the provider or the service
// failed), is interrupted (its replica died) or is cancelled (POST
// /runs/{id}/cancel). A run awaiting approval is paused: no replica
// executes it until its turn's held calls are decided (docs/approvals.md "Approvals").
const (
	RunRunning          RunStatus = "running"
	RunAwaitingApproval RunStatus = "awaiting_approval"
	RunCompleted        RunStatus = "completed"
	RunTerminated       RunStatus = "terminated"
	RunFailed           RunStatus = "failed"
	RunInterrupted      RunStatus = "interrupted"
	RunCancelled        RunStatus = "cancelled"
)

// Reasons a run terminated.
const (
	ReasonMaxIterations = "max_iterations"
	ReasonRepeatLimit   = "repeat_limit"
	// ReasonBudgetExhausted: a spend limit refused a model turn or a tool
	// call of the run (docs/costs.md "Spend limits").
	ReasonBudgetExhausted = "budget_exhausted"
)

// ActorContext is what a run knows about the actor it works for (seed 001).
type ActorContext struct {
	PlanID            string         `json:"plan_id"`
	Phase             string         `json:"phase,omitempty"`
	SandboxRoot       string         `json:"sandbox_root,omitempty"`
	ResourceBindings  map[string]any `json:"resource_bindings,omitempty"`
	AutomationProfile string         `json:"automation_profile,omitempty"`
	ProjectResources  []any          `json:"project_resources,omitempty"`
	Metadata          map[string]any `json:"metadata,omitempty"`
}

// ToolCallRecord is one tool call a run made.
type ToolCallRecord struct {
	ToolCallID     string         `json:"tool_call_id"`
	ProviderCallID string         `json:"provider_call_id,omitempty"`
	ToolName       string         `json:"tool_name"`
	Inputs         map[string]any `json:"inputs"` // exactly what the tool got
	Output         any            `json:"output"`
	Success        bool           `json:"success"`
	Error          *string        `json:"error"`
	ErrorCategory  *ErrorCategory `json:"error_category"`
	DurationMS     float64        `json:"duration_ms"`
	Iteration      int            `json:"iteration"`
	// ApprovalID is the approval the call waited for, if it did; Status
	// is "awaiting_approval" until it is decided.
	ApprovalID string `json:"approval_id,omitempty"`
	Status     string `json:"status,omitempty"`
	// ConnectURL is where the run's user connects the tool's backend
	// when Status is auth_required (auth mode oauth).
	ConnectURL string `json:"connect_url,omitempty"`
	// Cost is what the call cost (docs/costs.md); absent when it did not run.
	Cost *Cost `json:"cost,omitempty"`
}

// PendingApproval is a held call a paused run waits for.
type PendingApproval struct {
	ApprovalID string `json:"approval_id"`
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
}

// Usage is the token usage a provider reported, summed over a run.
type Usage struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	TotalTokens       int64 `json:"total_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
}

// Amount is a sum of money in one currency.
type Amount struct {
	Amount   Micros `json:"amount"`
	Currency string `json:"currency"`
}

// TurnCost is what one model turn of a run cost, and its tool calls.
type TurnCost struct {
	Iteration int    `json:"iteration"`
	Model     string `json:"model"` // provider/model
	Cost      Cost   `json:"cost"`
	Tools     []Cost `json:"tools,omitempty"`
}

// AddCost adds c to the run's totals: its amount to Cost (per currency),
// or one to Unpriced.
func (r *Run) AddCost(c Cost) {
	if c.Unpriced {
		r.Unpriced++
		return
	}
	for i := range r.Cost {
		if r.Cost[i].Currency == c.Currency {
			r.Cost[i].Amount += c.Amount
			return
		}
	}
	r.Cost = append(r.Cost, Amount{Amount: c.Amount, Currency: c.Currency})
}

// Run is one execution of the tool-calling loop.
type Run struct {
	RunID             string    `json:"run_id"`
	Status            RunStatus `json:"status"`
	TerminatedReason  *string   `json:"terminated_reason"`
	Content           string    `json:"content"`
	Iterations        int       `json:"iterations"`
	TerminatedByLimit bool      `json:"terminated_by_limit"`
	Provider          string    `json:"provider"`
	Model             string    `json:"model"`
	Error             *string   `json:"error"`
	Usage             *Usage    `json:"usage,omitempty"`
	// Cost is what the run cost per currency, its model turns and tool
	// calls together, Unpriced how many of them had no price, and Turns
	// each turn's cost (docs/costs.md).
	Cost       []Amount         `json:"cost,omitempty"`
	Unpriced   int              `json:"unpriced,omitempty"`
	Turns      []TurnCost       `json:"turns,omitempty"`
	ToolCalls  []ToolCallRecord `json:"tool_calls"`
	Context    ActorContext     `json:"context"`
	Prompt     string           `json:"prompt"`
	CreatedAt  time.Time        `json:"created_at"`
	FinishedAt *time.Time       `json:"finished_at"`
	// PendingApprovals are the calls a run awaiting approval waits for.
	PendingApprovals []PendingApproval `json:"pending_approvals,omitempty"`

	// Resume is the loop's state of a paused run, opaque here (the agent
	// writes and reads it); stored with the run, never shown.
	Resume json.RawMessage `json:"-"`

	// Owner is the replica running the run and HeartbeatAt when it last
	// said so; a running run whose heartbeat expired is interrupted.
	Owner       string    `json:"-"`
	HeartbeatAt time.Time `json:"-"`
	// Client is the client that started the run ("" on an open service);
	// only it and admin clients see the run (docs/security.md "Clients").
	Client string `json:"-"`
}

// storedRun is how a store keeps a run: its JSON plus the resume state.
type storedRun struct {
	*Run
	Resume json.RawMessage `json:"resume,omitempty"`
}

// EncodeStored is the JSON a store keeps for run (with Resume).
func EncodeStored(run *Run) ([]byte, error) {
	return json.Marshal(storedRun{Run: run, Resume: run.Resume})
}

// DecodeStored reads what EncodeStored wrote.
func DecodeStored(b []byte) (*Run, error) {
	s := storedRun{Run: &Run{}}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	s.Run.Resume = s.Resume
	return s.Run, nil
}
