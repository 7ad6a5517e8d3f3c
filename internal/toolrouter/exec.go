package toolrouter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// ExecRequest is one call for a tool's backend to execute: a POST to its
// HTTP endpoint (docs/registry.md "Writing a tool") or an MCP server's tools/call.
type ExecRequest struct {
	Tool *Tool
	// Args is the arguments object; nil is sent as {}.
	Args map[string]any
	// ArgsJSON, when not nil, is Args encoded as json.Marshal encodes it
	// (CanonicalArguments), made once by the router for the tool request
	// and the audit digest; a backend sends it as is. Nil: the backend
	// encodes Args.
	ArgsJSON json.RawMessage
	// PlanID and ToolCallID are sent as headers; an empty value omits its
	// header(s).
	PlanID     string
	ToolCallID string
	// Progress, when set, receives progress a backend reports while the
	// call runs: MCP notifications/progress, or an HTTP tool's progress
	// events (a text/event-stream reply, docs/registry.md "Reporting progress").
	Progress func(progress, total float64, message string)
	// Relay takes what the backend reports while the call runs, and
	// carries what the caller sends along for it (/mcp); nil: none.
	Relay *Relay
	// Batch is the output bytes the calls of the call's batch share: the
	// backend takes the output from it (Outcome.Budgeted); nil: none.
	Batch *Budget
	// Credential, when set, is the header carrying the user's credential
	// for this backend (docs/backend-auth.md), set by the credentials
	// decorator just above the backend; nil sends the registry's headers
	// only.
	Credential *Credential
	// TaskOp, when set, makes the request a tasks/* request to the MCP
	// backend's task instead of a tools/call (CallRequest.TaskOp).
	TaskOp *TaskOp
}

// Outcome is what a backend made of an ExecRequest.
type Outcome struct {
	// Output is the tool's JSON answer exactly as received (JSON null for
	// an empty reply); nil on failure.
	Output json.RawMessage
	// Err is the failure's message, safe to show to clients; "" on success.
	Err string
	// Category classifies the failure; "" on success.
	Category ErrorCategory
	// Status is the HTTP status of the last attempt, 0 if it got none.
	Status int
	// Attempts is the number of requests sent (0 when none could be built).
	Attempts int
	// Answered reports that the tool gave an answer of its own: a 2xx JSON
	// reply, or an error it reported as JSON ({"error": …} or
	// {"message": …}, or an MCP result with isError). It is false when the
	// tool gave no usable answer: no connection, a timeout, a crash page, a
	// non-JSON or oversized reply.
	Answered bool
	// InvalidUTF8 reports an Output whose invalid UTF-8 bytes were each
	// replaced by U+FFFD, as encoding/json does in the strings of
	// provider_result, so that both are the same valid JSON.
	InvalidUTF8 bool
	// Budgeted reports an Output whose bytes were taken from the
	// request's Batch budget.
	Budgeted bool
	// MCPResult is an MCP backend's CallToolResult as it sent it (see
	// Result.MCPResult); nil for HTTP tools.
	MCPResult json.RawMessage
	// FullOutput is the whole output of an Output shaped to its budget;
	// nil when the output was not shaped. Note says how it was shaped.
	FullOutput json.RawMessage
	Note       string
	// Held reports a call held for an approver (docs/approvals.md
	// "Approvals"): not run, its result awaits the decision.
	Held bool
	// Credential describes the backend credential the call was made with
	// (for the audit trail); nil for the registry's static headers.
	Credential *CredentialUse
	// ConnectURL, on an auth failure, is where the user connects the
	// backend (auth mode oauth): the call's result is auth_required.
	ConnectURL string
	// Task is the MCP backend's task: its CreateTaskResult for a
	// tools/call, its state for a TaskOp; nil otherwise.
	Task *BackendTask

	// checked is Output as it was when MarkChecked was called: see
	// OutputChecked; checkedFull is FullOutput as Shaped set it, when it
	// was the output checked.
	checked, checkedFull json.RawMessage
}

// MarkChecked records that o.Output is one valid JSON value, as the
// caller checked (or made it), so that the later steps of the pipeline
// (redaction, shaping) need not scan it again to know (issue 37: an output
// is scanned once, and what a step learnt is handed along). The mark holds
// for these very bytes: an Output set anew afterwards is not marked.
func (o *Outcome) MarkChecked() { o.checked = o.Output }

// OutputChecked reports whether o.Output is the one MarkChecked marked:
// the same bytes (same array, same length), not a copy or a new value.
func (o Outcome) OutputChecked() bool {
	return len(o.Output) > 0 && len(o.checked) == len(o.Output) && &o.checked[0] == &o.Output[0]
}

// Shaped makes shaped, made from o.Output to fit its budget and valid
// JSON by construction, the output (marked checked), and the output so
// far the whole one (FullOutput), which keeps the mark it had:
// FullOutputChecked.
func (o *Outcome) Shaped(shaped json.RawMessage) {
	if o.OutputChecked() {
		o.checkedFull = o.Output
	}
	o.FullOutput, o.Output = o.Output, shaped
	o.MarkChecked()
}

// FullOutputChecked reports whether o.FullOutput is the output Shaped
// took while it was marked checked (the same bytes, not a copy).
func (o Outcome) FullOutputChecked() bool {
	return len(o.FullOutput) > 0 && len(o.checkedFull) == len(o.FullOutput) && &o.checkedFull[0] == &o.FullOutput[0]
}

// Success reports whether the call succeeded.
func (o Outcome) Success() bool { return o.Err == "" && o.Category == "" }

// Failure is the Outcome of a call that failed with category cat.
func Failure(cat ErrorCategory, format string, args ...any) Outcome {
	return Outcome{Err: fmt.Sprintf(format, args...), Category: cat}
}

// Provider is an LLM provider of the registry's providers block (docs/registry.md
// "The registry file"), the model a run talks to.
type Provider struct {
	Name string
	// Kind is "openai" (Chat Completions), "openai-responses", "anthropic",
	// "gemini", "bedrock" (Converse) or "ollama".
	Kind string
	// BaseURL is the base URL as the official SDKs take it (openai …/v1,
	// anthropic without /v1, ollama without /api).
	BaseURL string
	Model   string
	// APIKeyEnv names the environment variable holding the key; empty
	// means no key.
	APIKeyEnv string
	// Region is the AWS region of a bedrock provider (its credentials come
	// from the AWS SDK's default chain).
	Region string
	// SearchMode is how /runs uses a server in search mode: "" (the model
	// calls call_tool) or "inject" (the tools search_tools found join the
	// next turn's tools).
	SearchMode string
	// ContextWindow is the model's context window in tokens (0: unknown);
	// /runs budgets tool outputs against it (docs/output-budgets.md
	// "Budgets against the model's context window in /runs").
	ContextWindow int
	// Prices are what the model's tokens cost (registry prices); the zero
	// ModelPrice: the default table's (docs/costs.md "Model prices").
	Prices ModelPrice
}

// MCPServer is an MCP server of the registry's mcp_servers block whose
// tools join the registry.
type MCPServer struct {
	Name string
	// URL is the streamable HTTP endpoint of a remote server; Command is
	// set instead for a stdio server (exactly one of the two).
	URL string
	// Command is the argv of a stdio server that toolrouterd starts and
	// supervises; Env adds variables to its environment (values already
	// expanded) and Dir is its working directory ("" inherits ours).
	Command []string
	Env     map[string]string
	Dir     string
	// Prefix is prepended to the server's tool names to make canonical
	// names.
	Prefix string
	// Tools is the allowlist of the server's tool names; "*" allows all.
	Tools   []string
	Headers map[string]string
	// Auth is the server's auth block (docs/backend-auth.md); nil is
	// static.
	Auth    *BackendAuth
	Timeout time.Duration
	Circuit Circuit // its tools' circuit breaker settings
	// Roots are the file:// URIs offered to the server as MCP roots; the
	// roots capability is advertised only when there are some.
	Roots []string
	// Unpinned follows definition changes instead of quarantining the
	// tool (pin: false); PinNew "allow" serves tools that appear after
	// the first discovery without review; OnChange "keep_old" serves the
	// pinned definition while a change awaits review, or was rejected
	// (docs/trusting-tools.md "Pinned definitions").
	Unpinned bool
	PinNew   string
	OnChange string
	// Budget is the output budget of each of its tools, ToolBudgets those
	// of single tools by their name on the server (docs/output-budgets.md "Output
	// budgets").
	Budget      OutputBudget
	ToolBudgets map[string]OutputBudget
	// Task is tools[].task for each of its tools (docs/mcp.md "Tasks"):
	// toolrouterd runs their calls as tasks; the server itself is called
	// as usual.
	Task TaskMode
	// Price is what a call of each of its tools costs, ToolPrices those
	// of single tools by their name on the server (docs/costs.md).
	Price      Price
	ToolPrices map[string]Price
}

// Circuit is the circuit breaker setting of a tool or an MCP server
// (docs/operations.md "Circuit breakers"): after Failures consecutive connection
// failures or timeouts its calls fail fast for Cooldown. Zero fields take
// the global defaults; Off turns the breaker off (failures: 0).
type Circuit struct {
	Failures int
	Cooldown time.Duration
	Off      bool
}

// Or is c with its unset fields taken from def.
func (c Circuit) Or(def Circuit) Circuit {
	if c.Off {
		return Circuit{Off: true}
	}
	if c.Failures == 0 {
		c.Failures = def.Failures
	}
	if c.Cooldown == 0 {
		c.Cooldown = def.Cooldown
	}
	return c
}

// CheckOutput turns a successful outcome whose output does not match the
// tool's output schema into a schema failure naming the mismatch, its
// message starting with prefix (and the credential the backend was
// called with, for the audit record).
func CheckOutput(tool *Tool, out Outcome, prefix string) Outcome {
	if tool.ValidateOutput == nil || !out.Success() {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(out.Output))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	if err == nil {
		err = tool.ValidateOutput(v)
	}
	if err == nil {
		return out
	}
	return Outcome{Err: prefix + strings.TrimPrefix(err.Error(), "schema validation failed: "),
		Category: CategorySchema, Status: out.Status, Attempts: out.Attempts, Answered: true, Credential: out.Credential}
}
