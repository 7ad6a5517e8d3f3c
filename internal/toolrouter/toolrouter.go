// Package toolrouter holds the vocabulary every other package speaks: tool
// calls, tools, route results, error categories and the application error.
// It depends on the standard library only.
package toolrouter

import (
	"encoding/json"
	"fmt"
	"time"
)

// Format is the provider shape a tool call arrived in.
type Format string

// The formats toolrouterd recognises.
const (
	FormatOpenAI    Format = "openai"
	FormatAnthropic Format = "anthropic"
	FormatLangChain Format = "langchain"
	FormatGemini    Format = "gemini"
	FormatBedrock   Format = "bedrock"
	FormatMCP       Format = "mcp"
	FormatUnknown   Format = "unknown"
)

// Call is a tool call normalized from any provider shape.
type Call struct {
	ToolName string `json:"tool_name"`
	// Arguments is the decoded arguments object; never nil after normalization.
	Arguments map[string]any `json:"arguments"`
	// ProviderCallID is the provider's own id for the call ("call_…",
	// "toolu_…"); empty when the provider sent none, or sent "" (Gemini's
	// OpenAI-compatible endpoint), which HasProviderCallID tells apart.
	ProviderCallID string `json:"provider_call_id,omitempty"`
	// HasProviderCallID says the provider sent an id, even "": the result
	// answers it as sent, so that the client pairs answer and call.
	HasProviderCallID bool   `json:"-"`
	Format            Format `json:"provider_format"`
	// Extra carries provider fields that must travel back with the result
	// (for example a Gemini thoughtSignature, or a JSON-RPC request id).
	Extra map[string]any `json:"-"`
}

// ToolKind says whether a tool is a plain tool or a validation tool.
type ToolKind string

// Tool kinds.
const (
	KindTool       ToolKind = "tool"
	KindValidation ToolKind = "validation"
)

// Tool is one entry of the registry: a remote HTTP endpoint.
type Tool struct {
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	Endpoint     string            `json:"endpoint"`
	Kind         ToolKind          `json:"kind"`
	InputSchema  map[string]any    `json:"input_schema"`
	OutputSchema map[string]any    `json:"output_schema,omitempty"`
	Timeout      time.Duration     `json:"-"`
	Circuit      Circuit           `json:"-"`
	Headers      map[string]string `json:"-"`
	// Auth is an HTTP tool's auth block (docs/backend-auth.md); nil is
	// static. A tool of an MCP server has its server's.
	Auth       *BackendAuth `json:"-"`
	Idempotent bool         `json:"idempotent"`
	Retries    int          `json:"retries"`
	// MCPServer names the registry's MCP server that serves this tool, and
	// MCPTool the tool's name on that server; both empty for HTTP tools.
	MCPServer string `json:"mcp_server,omitempty"`
	MCPTool   string `json:"mcp_tool,omitempty"`
	// ReadOnly is an MCP tool's readOnlyHint annotation.
	ReadOnly bool `json:"read_only,omitempty"`
	// Approval is the registry's approval: required: every call waits for
	// an approver's decision before it runs (docs/approvals.md "Approvals").
	Approval bool `json:"approval,omitempty"`
	// Task is the registry's task: whether calls run as tasks the client
	// polls (docs/mcp.md "Tasks"); "" is forbidden.
	Task TaskMode `json:"task,omitempty"`
	// Title and Hints are what a virtual server exports of the tool (MCP's
	// title and annotations, docs/mcp.md "Virtual servers and tool search");
	// empty and nil for registry tools.
	Title string `json:"title,omitempty"`
	Hints *Hints `json:"hints,omitempty"`
	// Definition is an MCP tool's definition as its server listed it
	// (name, description, inputSchema, outputSchema, annotations), what
	// its pin digests (docs/trusting-tools.md "Pinned definitions").
	Definition any `json:"-"`
	// UI is an MCP tool's MCP Apps user interface (apps.go); nil: none.
	UI *AppUI `json:"-"`
	// Skill is set on a skill of an MCP server (Kind KindSkill, skills.go).
	Skill *Skill `json:"-"`
	// Quarantine, when set, says why the tool is quarantined: its
	// definition changed and awaits review. Such a tool is found by name
	// but not listed, and its calls are refused as permission.
	Quarantine string `json:"-"`
	// Budget is the tool's output budget (docs/output-budgets.md "Output budgets"): an
	// output over it is shaped, not failed. Zero: none.
	Budget OutputBudget `json:"-"`
	// Code marks execute_code, the tool of discovery: code: the router
	// runs its program (docs/code-mode.md) instead of calling a backend.
	Code bool `json:"-"`
	// Price is what one call costs (docs/costs.md); the zero Price:
	// unpriced. A tool of an MCP server has its server's, or its own.
	Price Price `json:"-"`

	// ValidateArgs checks decoded arguments against InputSchema; nil means
	// anything goes. The returned error's text names the offending field.
	ValidateArgs func(args map[string]any) error `json:"-"`
	// ValidateOutput checks a successful output (an MCP tool's
	// structuredContent, decoded) against OutputSchema; nil means the
	// output schema is not checked, and /mcp does not advertise it.
	ValidateOutput func(output any) error `json:"-"`
}

// Hints are MCP tool annotations; a nil field is unset.
type Hints struct {
	ReadOnly    *bool `json:"readOnlyHint,omitempty"`
	Destructive *bool `json:"destructiveHint,omitempty"`
	Idempotent  *bool `json:"idempotentHint,omitempty"`
	OpenWorld   *bool `json:"openWorldHint,omitempty"`
}

// OutputBudget bounds what a tool's output may cost its caller (docs/output-budgets.md
// "Output budgets"): Bytes and Tokens (o200k_base) are maxima, 0 meaning
// none; Keep are the JSONPath queries (RFC 9535) whose nodes a JSON output
// keeps when it is over budget.
type OutputBudget struct {
	Bytes, Tokens int
	Keep          []string
}

// IsZero reports a budget that bounds nothing.
func (b OutputBudget) IsZero() bool { return b.Bytes <= 0 && b.Tokens <= 0 }

// Tighter is the budget of both b and o: the smaller of each maximum that
// is set, and b's Keep (else o's).
func (b OutputBudget) Tighter(o OutputBudget) OutputBudget {
	min0 := func(x, y int) int {
		switch {
		case x <= 0:
			return y
		case y <= 0:
			return x
		}
		return min(x, y)
	}
	out := OutputBudget{Bytes: min0(b.Bytes, o.Bytes), Tokens: min0(b.Tokens, o.Tokens), Keep: b.Keep}
	if len(out.Keep) == 0 {
		out.Keep = o.Keep
	}
	return out
}

// ValidationMode is the string `mode` of a validation tool's output_schema,
// or "" when there is none (or it is not a string).
func (t *Tool) ValidationMode() string {
	if t == nil || t.OutputSchema == nil {
		return ""
	}
	m, _ := t.OutputSchema["mode"].(string)
	return m
}

// ErrorCategory classifies a failed tool call.
type ErrorCategory string

// The eight categories of the contract (and CategoryAuth, credential.go).
const (
	CategoryTimeout    ErrorCategory = "timeout"
	CategoryPermission ErrorCategory = "permission"
	CategoryNotFound   ErrorCategory = "not_found"
	CategoryResource   ErrorCategory = "resource"
	CategorySchema     ErrorCategory = "schema"
	CategoryParse      ErrorCategory = "parse"
	CategoryExecution  ErrorCategory = "execution"
	CategoryUnknown    ErrorCategory = "unknown"
	// CategoryBudget is a call refused by a spend limit before it ran
	// (docs/costs.md "Spend limits").
	CategoryBudget ErrorCategory = "budget"
)

// Result is the outcome of routing one tool call (the API's RouteResult).
type Result struct {
	ToolCallID       string          `json:"tool_call_id"`
	ProviderCallID   *string         `json:"provider_call_id"`
	PlanID           string          `json:"plan_id"`
	Sequence         int64           `json:"sequence"`
	ToolName         string          `json:"tool_name"`
	ProviderFormat   Format          `json:"provider_format"`
	Arguments        map[string]any  `json:"arguments"`
	Success          bool            `json:"success"`
	Output           json.RawMessage `json:"output"`
	Error            *string         `json:"error"`
	ErrorCategory    *ErrorCategory  `json:"error_category"`
	IsValidation     bool            `json:"is_validation"`
	ValidationPassed *bool           `json:"validation_passed"`
	DurationMS       float64         `json:"duration_ms"`
	ProviderMetadata map[string]any  `json:"provider_metadata"`
	ProviderResult   any             `json:"provider_result"`
	// Status is awaiting_approval while the call waits for an approver
	// and complete once decided; absent for calls that never waited
	// (docs/approvals.md "Approvals"). ApprovalID names the approval.
	Status     string `json:"status,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
	// ConnectURL is where the user connects the tool's backend when
	// Status is auth_required (docs/backend-auth.md "oauth").
	ConnectURL string `json:"connect_url,omitempty"`
	// Notes say what the router changed in the tool's answer (invalid
	// UTF-8 replaced); absent when nothing was.
	Notes []string `json:"notes,omitempty"`
	// Truncated reports an output shaped to its budget (docs/output-budgets.md "Output
	// budgets"); FullOutput, set only in the stored result, is the whole
	// output, for GET /results/{tool_call_id}.
	Truncated  bool            `json:"truncated,omitempty"`
	FullOutput json.RawMessage `json:"full_output,omitempty"`
	// Cost is what the call cost (docs/costs.md), or that it is unpriced;
	// absent for a call that did not run.
	Cost *Cost `json:"cost,omitempty"`
	// RetryAfter, on a call refused by a spend limit, is when the limit's
	// period ends (the Retry-After of /route's 429). Not part of the answer.
	RetryAfter time.Time `json:"-"`
	// MCPResult is the CallToolResult an MCP backend answered, exactly as
	// it sent it (every content block, structuredContent, isError, _meta),
	// for the /mcp endpoint to pass on; nil for HTTP tools and calls that
	// got no answer. It is not part of the RouteResult.
	MCPResult json.RawMessage `json:"-"`
	// BackendTask is the MCP backend's task when it answered with one (a
	// CreateTaskResult, or a tasks/* request's answer: TaskOp); nil
	// otherwise. Not part of the RouteResult.
	BackendTask *BackendTask `json:"-"`
	// Client owns the result: the store keeps it under
	// ScopedKey(Client, ToolCallID). Not part of the answer.
	Client string `json:"-"`
	// JSON is the result as json.Marshal encodes it, made once by the
	// router when the result is final so that the store and the HTTP
	// answer share it; nil when not made (a held call's result, which its
	// decision changes). Whoever changes a Result must set it to nil.
	JSON json.RawMessage `json:"-"`
}

// Encoded is r.JSON, or r encoded when it has none.
func (r *Result) Encoded() ([]byte, error) {
	if r.JSON != nil {
		return r.JSON, nil
	}
	return json.Marshal(r)
}

// NoteInvalidUTF8 is the note of an output whose invalid UTF-8 was replaced.
const NoteInvalidUTF8 = "output: invalid UTF-8 replaced by U+FFFD"

// UpdateStatus is the state carried by a streaming update.
type UpdateStatus string

// Streaming update states, emitted in this order (error replaces complete).
const (
	StatusPending  UpdateStatus = "pending"
	StatusRunning  UpdateStatus = "running"
	StatusComplete UpdateStatus = "complete"
	StatusError    UpdateStatus = "error"
	// StatusAwaitingApproval replaces running for a call held for an
	// approver; its Message is the approval id (docs/approvals.md "Approvals").
	StatusAwaitingApproval UpdateStatus = "awaiting_approval"
)

// Update is one streaming progress event of a routed call.
type Update struct {
	ToolCallID string       `json:"tool_call_id"`
	Status     UpdateStatus `json:"status"`
	ToolName   string       `json:"tool_name,omitempty"`
	Message    string       `json:"message,omitempty"`
	Progress   *float64     `json:"progress,omitempty"`
	Total      *float64     `json:"total,omitempty"`
}

// JSONKind names the JSON type of a decoded value, for error messages
// ("object", "list", "string", "number", "boolean", "null").
func JSONKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, json.Number, int, int64:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// JSONDepthWithin reports whether the JSON text b nests arrays and objects
// at most max deep (strings skipped), as the MCP go-sdk's checkMaxDepth
// judges a message before decoding it: both /mcp fast paths refuse what
// the SDK would.
func JSONDepthWithin(b []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return false
			}
		case (c == '}' || c == ']') && depth > 0:
			depth--
		}
	}
	return true
}
