// Package anthropic is the llm.Adapter for the Anthropic Messages API
// (POST {base_url}/v1/messages).
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/llm"
)

// Provider is the name used in errors.
const Provider = "anthropic"

// Defaults.
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	APIVersion       = "2023-06-01"
	DefaultMaxTokens = 4096
)

// Adapter speaks the Messages API. It is safe for concurrent use.
type Adapter struct {
	cfg      llm.Config
	endpoint string
}

var _ llm.Adapter = (*Adapter)(nil)

// New returns an adapter for cfg. A nil cfg.HTTPClient is replaced by one
// built for this adapter (llm.NewHTTPClient).
func New(cfg llm.Config) *Adapter {
	cfg, base := llm.WithDefaults(cfg, DefaultBaseURL)
	return &Adapter{cfg: cfg, endpoint: base + "/v1/messages"}
}

// Wire types of the request.
type messagesRequest struct {
	Model      string        `json:"model"`
	MaxTokens  int           `json:"max_tokens"`
	System     string        `json:"system,omitempty"`
	Messages   []wireMessage `json:"messages"`
	Tools      []wireTool    `json:"tools,omitempty"`
	ToolChoice *toolChoice   `json:"tool_choice,omitempty"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is a string (a message of one text block) or []any blocks.
	Content any `json:"content"`
}

type textBlock struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

type toolUseBlock struct {
	Type  string         `json:"type"` // "tool_use"
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

type wireTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"input_schema"`
}

type toolChoice struct {
	Type string `json:"type"`
}

// turn is a message being assembled: consecutive neutral messages of the
// same Anthropic role become one message.
type turn struct {
	role   string
	blocks []any
}

// PrepareRequest builds the Messages body. System messages go to the
// top-level system string; consecutive messages of one role are merged so
// that user and assistant alternate; the tool results answering an
// assistant turn's tool_use blocks all go, first, in the one user message
// that follows it (a user message right after the results joins it, after
// the tool_result blocks). A tool_use left unanswered, or a result answering
// no tool_use of the preceding assistant turn, is an error.
func (a *Adapter) PrepareRequest(req llm.Request) (json.RawMessage, error) {
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("%s: request has no messages", Provider)
	}
	out := messagesRequest{Model: req.Model, MaxTokens: req.MaxTokens}
	if out.MaxTokens <= 0 {
		out.MaxTokens = DefaultMaxTokens
	}
	var system []string
	var turns []*turn
	var pending []string // tool_use ids of the last assistant turn not yet answered
	answering := false   // the current user turn holds tool results
	add := func(role string, blocks ...any) {
		if len(turns) > 0 && turns[len(turns)-1].role == role {
			t := turns[len(turns)-1]
			t.blocks = append(t.blocks, blocks...)
			return
		}
		turns = append(turns, &turn{role: role, blocks: blocks})
	}
	for i, m := range req.Messages {
		if m.Role != llm.RoleTool && m.Role != llm.RoleSystem && len(pending) > 0 {
			return nil, fmt.Errorf("%s: message %d (%s): tool call(s) %s have no tool result", Provider, i, m.Role, strings.Join(pending, ", "))
		}
		switch m.Role {
		case llm.RoleSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
		case llm.RoleUser:
			if m.Content != "" { // Anthropic rejects empty text blocks
				add("user", textBlock{Type: "text", Text: m.Content})
			}
			answering = false
		case llm.RoleAssistant:
			var blocks []any
			if m.Content != "" {
				blocks = append(blocks, textBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" {
					return nil, fmt.Errorf("%s: message %d: tool call %q has no id", Provider, i, tc.Name)
				}
				if slices.Contains(pending, tc.ID) {
					return nil, fmt.Errorf("%s: message %d: duplicate tool call id %q", Provider, i, tc.ID)
				}
				input := tc.Arguments
				if input == nil {
					input = map[string]any{}
				}
				blocks = append(blocks, toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
				pending = append(pending, tc.ID)
			}
			if len(blocks) > 0 {
				add("assistant", blocks...)
			}
			answering = false
		case llm.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("%s: message %d: tool message has no tool_call_id", Provider, i)
			}
			j := slices.Index(pending, m.ToolCallID)
			if j < 0 {
				return nil, fmt.Errorf("%s: message %d: tool result for %q answers no tool_use of the preceding assistant turn", Provider, i, m.ToolCallID)
			}
			pending = append(pending[:j], pending[j+1:]...)
			block := llm.Formatted(m, toolResultBlock(m.ToolCallID, m.Content, m.IsError))
			if !answering {
				// The results open a new user message right after the
				// assistant turn (never merged into an earlier user turn).
				turns = append(turns, &turn{role: "user"})
				answering = true
			}
			t := turns[len(turns)-1]
			t.blocks = append(t.blocks, block)
		default:
			return nil, fmt.Errorf("%s: message %d: unknown role %q", Provider, i, m.Role)
		}
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("%s: tool call(s) %s have no tool result", Provider, strings.Join(pending, ", "))
	}
	if len(turns) == 0 {
		return nil, fmt.Errorf("%s: request has no user or assistant content", Provider)
	}
	out.System = strings.Join(system, "\n\n")
	for _, t := range turns {
		wm := wireMessage{Role: t.role, Content: t.blocks}
		if len(t.blocks) == 1 {
			if tb, ok := t.blocks[0].(textBlock); ok {
				wm.Content = tb.Text
			}
		}
		out.Messages = append(out.Messages, wm)
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if schema == nil {
			schema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		out.Tools = append(out.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	switch req.ToolChoice {
	case "":
	case "auto":
		out.ToolChoice = &toolChoice{Type: "auto"}
	case "required":
		out.ToolChoice = &toolChoice{Type: "any"}
	case "none":
		out.ToolChoice = &toolChoice{Type: "none"}
	default:
		return nil, fmt.Errorf("%s: unknown tool_choice %q (want auto, required or none)", Provider, req.ToolChoice)
	}
	if len(out.Tools) == 0 {
		out.ToolChoice = nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", Provider, err)
	}
	return b, nil
}

// toolResultBlock is the tool_result content block: FormatToolResult and
// PrepareRequest both use it.
func toolResultBlock(toolUseID, text string, isError bool) map[string]any {
	return map[string]any{"type": "tool_result", "tool_use_id": toolUseID, "content": text, "is_error": isError}
}

// FormatToolResult is the tool_result block {"type":"tool_result",
// "tool_use_id", "content": result.Text(), "is_error"}; it goes, with the
// other results of the same turn, in one user message.
func (a *Adapter) FormatToolResult(toolCallID, toolName string, result llm.ToolResult) any {
	return toolResultBlock(toolCallID, result.Text(), !result.Success)
}

// Wire types of the response.
type messagesResponse struct {
	Type    string `json:"type"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason *string `json:"stop_reason"`
	Usage      *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// ParseResponse reads a Messages body: text blocks joined (directly when
// adjacent, with a newline across other blocks), tool_use blocks as tool
// calls, usage (input tokens include cache reads and writes), stop_reason.
func (a *Adapter) ParseResponse(body []byte) (llm.Response, error) {
	var r messagesResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return llm.Response{}, fmt.Errorf("%s: decoding response: %w", Provider, err)
	}
	if r.Type == "error" || r.Error != nil {
		msg := "unknown error"
		if r.Error != nil && r.Error.Message != "" {
			msg = r.Error.Message
		}
		return llm.Response{}, &llm.ProviderError{Provider: Provider, Status: http.StatusOK, Message: msg}
	}
	if r.Type != "" && r.Type != "message" {
		return llm.Response{}, fmt.Errorf("%s: unexpected response type %q", Provider, r.Type)
	}
	var out llm.Response
	var text strings.Builder
	lastWasText := false
	seen := map[string]bool{}
	for i, b := range r.Content {
		switch b.Type {
		case "text":
			if text.Len() > 0 && !lastWasText {
				text.WriteByte('\n')
			}
			text.WriteString(b.Text)
			lastWasText = true
			continue
		case "tool_use":
			if b.Name == "" {
				return llm.Response{}, fmt.Errorf("%s: tool_use block %d has no name", Provider, i)
			}
			args := map[string]any{}
			if in := bytes.TrimSpace(b.Input); len(in) > 0 && string(in) != "null" {
				if err := json.Unmarshal(in, &args); err != nil {
					return llm.Response{}, fmt.Errorf("%s: tool_use %q (%s): input is not a JSON object: %w", Provider, b.Name, b.ID, err)
				}
				if args == nil {
					args = map[string]any{}
				}
			}
			id := b.ID
			if id == "" || seen[id] {
				id = llm.NewCallID()
			}
			seen[id] = true
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: id, Name: b.Name, Arguments: args})
		}
		// thinking, redacted_thinking, server tool blocks: not part of the
		// neutral response.
		lastWasText = false
	}
	out.Content = text.String()
	if r.StopReason != nil {
		out.StopReason = *r.StopReason
	}
	if r.Usage != nil {
		out.Usage = &llm.Usage{
			InputTokens:  r.Usage.InputTokens + r.Usage.CacheCreationInputTokens + r.Usage.CacheReadInputTokens,
			OutputTokens: r.Usage.OutputTokens,
			// Cache reads are priced apart; cache writes count as input.
			CachedInputTokens: r.Usage.CacheReadInputTokens,
		}
	}
	return out, nil
}

// Chat sends one turn to {base_url}/v1/messages.
func (a *Adapter) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	body, err := a.PrepareRequest(req)
	if err != nil {
		return llm.Response{}, err
	}
	h := http.Header{}
	h.Set("content-type", "application/json")
	h.Set("anthropic-version", APIVersion)
	if a.cfg.APIKey != "" {
		h.Set("x-api-key", a.cfg.APIKey)
	}
	resp, err := llm.Send(ctx, a.cfg, Provider, a.endpoint, h, body, nil)
	if err != nil {
		return llm.Response{}, err
	}
	return a.ParseResponse(resp)
}
