// Package llm holds the neutral chat types the tool-calling loop speaks and
// the interface every provider adapter implements (features/runtime.feature):
// PrepareRequest, ParseResponse and FormatToolResult, plus Chat, which
// sends one turn over HTTP.
package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/toolrouterd/toolrouterd/internal/randid"
)

// Role of a message in a conversation.
type Role string

// Roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is a call the model asked for.
type ToolCall struct {
	// ID is the provider's id of the call; adapters generate a unique one
	// when the provider sends none (never the function name).
	ID string `json:"id"`
	// Name is the name as the model wrote it (a provider-safe alias).
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// Message is one neutral conversation message. An assistant message may
// carry ToolCalls; a tool message answers one call (ToolCallID, Name) with
// Content, and IsError when the call failed, or with Formatted.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	IsError    bool       `json:"is_error,omitempty"`
	// Formatted is a tool message as its provider takes it
	// (Adapter.FormatToolResult); PrepareRequest sends it as is rather than
	// build one from Content.
	Formatted any `json:"-"`
	// Provider is an assistant turn as its provider sent it
	// (Response.Provider), for the adapters whose API wants parts of it
	// back verbatim: Responses reasoning items, Gemini thought signatures,
	// Bedrock reasoning blocks. It is stored with a paused run.
	Provider json.RawMessage `json:"provider,omitempty"`
}

// Tool is a tool offered to the model, under its provider-safe name.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"` // JSON Schema of the arguments
}

// Usage is the token usage of one model call.
// InputTokens counts every input token, CachedInputTokens those of them
// read from the provider's prompt cache (priced apart, docs/costs.md).
type Usage struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
}

// Response is a parsed model turn (Adapter.ParseResponse).
type Response struct {
	Content   string     `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls"`
	Usage     *Usage     `json:"usage,omitempty"`
	// StopReason is the provider's own stop/finish reason, for logs.
	StopReason string `json:"stop_reason,omitempty"`
	// Provider is the turn in the provider's own form when the next request
	// must carry parts of it back (Message.Provider); nil otherwise.
	Provider json.RawMessage `json:"-"`
}

// Request is one model call.
type Request struct {
	Model      string
	Messages   []Message
	Tools      []Tool
	ToolChoice string // "", "auto", "required" or "none"
	MaxTokens  int    // 0: the adapter's default (Anthropic requires one)
}

// Adapter converts between the neutral types and one provider's wire
// format, and sends turns to it.
type Adapter interface {
	// PrepareRequest builds the provider's request body.
	PrepareRequest(req Request) (json.RawMessage, error)
	// ParseResponse reads the provider's response body.
	ParseResponse(body []byte) (Response, error)
	// FormatToolResult is the provider message answering one tool call.
	FormatToolResult(toolCallID, toolName string, result ToolResult) any
	// Chat sends one turn and returns the parsed response. Rate limits and
	// server errors are retried with backoff honouring Retry-After; other
	// provider errors are returned as *ProviderError with the provider's
	// message.
	Chat(ctx context.Context, req Request) (Response, error)
}

// Formatted is a tool message's Formatted form when it has one, else built.
func Formatted(m Message, built any) any {
	if m.Formatted != nil {
		return m.Formatted
	}
	return built
}

// ToolResult is what a tool call produced, as fed back to the model.
type ToolResult struct {
	Success bool
	Output  json.RawMessage // the tool's JSON output (success)
	Error   string          // the error text (failure)
}

// Text is the content the model reads for a tool result: the output's JSON
// text (a JSON string's own text) or the error.
func (r ToolResult) Text() string {
	if !r.Success {
		if r.Error == "" {
			return "error: tool call failed"
		}
		return "error: " + r.Error
	}
	if len(r.Output) > 0 && r.Output[0] == '"' {
		var s string
		if json.Unmarshal(r.Output, &s) == nil {
			return s
		}
	}
	if len(r.Output) == 0 {
		return "null"
	}
	return string(r.Output)
}

// TextJSON is text as a JSON string: the output of a tool message rebuilt
// from its Content (a paused run's earlier turns have no Formatted form), so
// that the result reads as that text.
func TextJSON(text string) json.RawMessage {
	b, _ := json.Marshal(text)
	return b
}

// NewCallID is a fresh tool call id, "call_" + 24 random hex digits, for
// calls a provider sent without one (never the function name).
func NewCallID() string {
	return "call_" + randid.Hex(12)
}

// ToolParameters is a tool's parameters schema as sent to a provider: an
// empty object schema when the tool has none.
func ToolParameters(p map[string]any) map[string]any {
	if p == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return p
}

// ProviderError is an error answer of a provider.
type ProviderError struct {
	Provider string // the adapter kind: "openai", "anthropic", "gemini", …
	Status   int    // HTTP status, 0 when no answer came
	Message  string // the provider's own message
}

func (e *ProviderError) Error() string {
	if e.Status == 0 {
		return e.Provider + ": " + e.Message
	}
	return e.Provider + " " + strconv.Itoa(e.Status) + ": " + e.Message
}

// Config is what an adapter needs to reach its provider.
type Config struct {
	BaseURL string // as the official SDKs take it (docs/registry.md "The registry file")
	APIKey  string // never logged
	// HTTPClient is shared by every adapter; nil means a default one.
	HTTPClient *http.Client
	// MaxRetries for 429 and 5xx answers (default 3; negative: none).
	MaxRetries int
}
