// Package openai is the llm.Adapter for OpenAI Chat Completions
// (POST {base_url}/chat/completions) and every server that speaks it:
// vLLM, llama.cpp server, Ollama /v1, LM Studio.
package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/llm"
)

// Provider is the name used in errors.
const Provider = "openai"

// DefaultBaseURL is used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Adapter speaks Chat Completions. It is safe for concurrent use.
type Adapter struct {
	cfg      llm.Config
	endpoint string
	// completionTokens: send max_completion_tokens (api.openai.com, where
	// max_tokens is deprecated and rejected by reasoning models) rather than
	// max_tokens (what compatible servers read).
	completionTokens bool
}

var _ llm.Adapter = (*Adapter)(nil)

// New returns an adapter for cfg. A nil cfg.HTTPClient is replaced by one
// built for this adapter (llm.NewHTTPClient).
func New(cfg llm.Config) *Adapter {
	cfg, base := llm.WithDefaults(cfg, DefaultBaseURL)
	a := &Adapter{cfg: cfg, endpoint: base + "/chat/completions"}
	if u, err := url.Parse(base); err == nil && strings.EqualFold(u.Hostname(), "api.openai.com") {
		a.completionTokens = true
	}
	return a
}

// Wire types of the request.
type chatRequest struct {
	Model               string           `json:"model"`
	Messages            []any            `json:"messages"`
	Tools               []ToolDefinition `json:"tools,omitempty"`
	ToolChoice          string           `json:"tool_choice,omitempty"`
	MaxTokens           int              `json:"max_tokens,omitempty"`
	MaxCompletionTokens int              `json:"max_completion_tokens,omitempty"`
}

type textMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type assistantMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"` // null when there is only tool calls
	ToolCalls []toolCallWire `json:"tool_calls,omitempty"`
}

type toolCallWire struct {
	ID       string     `json:"id"`
	Type     string     `json:"type"`
	Function toolCallFn `json:"function"`
}

type toolCallFn struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolDefinition is a tools[] entry in Chat Completions' shape, which
// Ollama's /api/chat takes too.
type ToolDefinition struct {
	Type     string             `json:"type"`
	Function FunctionDefinition `json:"function"`
}

// FunctionDefinition is the function of a ToolDefinition.
type FunctionDefinition struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
}

// ToolDefinitions are the tools offered to the model, in that shape.
func ToolDefinitions(tools []llm.Tool) []ToolDefinition {
	out := make([]ToolDefinition, 0, len(tools))
	for _, t := range tools {
		out = append(out, ToolDefinition{Type: "function", Function: FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: llm.ToolParameters(t.Parameters),
		}})
	}
	return out
}

// PrepareRequest builds the Chat Completions body. Every tool call of an
// assistant turn must be answered by a tool message before the next
// non-tool message (OpenAI rejects the request otherwise); a conversation
// that breaks this is an error here rather than a 400 later.
func (a *Adapter) PrepareRequest(req llm.Request) (json.RawMessage, error) {
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("%s: request has no messages", Provider)
	}
	out := chatRequest{Model: req.Model, Messages: make([]any, 0, len(req.Messages))}
	var pending []string // unanswered tool call ids, in order
	for i, m := range req.Messages {
		if m.Role != llm.RoleTool && len(pending) > 0 {
			return nil, fmt.Errorf("%s: message %d (%s): tool call(s) %s have no tool result", Provider, i, m.Role, strings.Join(pending, ", "))
		}
		switch m.Role {
		case llm.RoleSystem, llm.RoleUser:
			out.Messages = append(out.Messages, textMessage{Role: string(m.Role), Content: m.Content})
		case llm.RoleAssistant:
			am := assistantMessage{Role: "assistant"}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				c := m.Content
				am.Content = &c
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" {
					return nil, fmt.Errorf("%s: message %d: tool call %q has no id", Provider, i, tc.Name)
				}
				if slices.Contains(pending, tc.ID) {
					return nil, fmt.Errorf("%s: message %d: duplicate tool call id %q", Provider, i, tc.ID)
				}
				args, err := encodeArguments(tc.Arguments)
				if err != nil {
					return nil, fmt.Errorf("%s: message %d: tool call %q: %w", Provider, i, tc.Name, err)
				}
				am.ToolCalls = append(am.ToolCalls, toolCallWire{ID: tc.ID, Type: "function", Function: toolCallFn{Name: tc.Name, Arguments: args}})
				pending = append(pending, tc.ID)
			}
			out.Messages = append(out.Messages, am)
		case llm.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("%s: message %d: tool message has no tool_call_id", Provider, i)
			}
			j := slices.Index(pending, m.ToolCallID)
			if j < 0 {
				return nil, fmt.Errorf("%s: message %d: tool result for %q answers no pending tool call of the preceding assistant turn", Provider, i, m.ToolCallID)
			}
			pending = append(pending[:j], pending[j+1:]...)
			out.Messages = append(out.Messages, llm.Formatted(m, toolMessage(m.ToolCallID, m.Content)))
		default:
			return nil, fmt.Errorf("%s: message %d: unknown role %q", Provider, i, m.Role)
		}
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("%s: tool call(s) %s have no tool result", Provider, strings.Join(pending, ", "))
	}
	if len(req.Tools) > 0 {
		out.Tools = ToolDefinitions(req.Tools)
	}
	switch req.ToolChoice {
	case "":
	case "auto", "required", "none":
		if len(out.Tools) > 0 { // OpenAI rejects tool_choice without tools
			out.ToolChoice = req.ToolChoice
		}
	default:
		return nil, fmt.Errorf("%s: unknown tool_choice %q (want auto, required or none)", Provider, req.ToolChoice)
	}
	if req.MaxTokens > 0 {
		if a.completionTokens {
			out.MaxCompletionTokens = req.MaxTokens
		} else {
			out.MaxTokens = req.MaxTokens
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", Provider, err)
	}
	return b, nil
}

func encodeArguments(args map[string]any) (string, error) {
	if args == nil {
		return "{}", nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return "", fmt.Errorf("encoding arguments: %w", err)
	}
	return string(b), nil
}

// toolMessage is the tool-result message: FormatToolResult and
// PrepareRequest both use it.
func toolMessage(toolCallID, text string) map[string]any {
	return map[string]any{"role": "tool", "tool_call_id": toolCallID, "content": text}
}

// FormatToolResult is {"role":"tool","tool_call_id":…,"content": result.Text()}.
func (a *Adapter) FormatToolResult(toolCallID, toolName string, result llm.ToolResult) any {
	return toolMessage(toolCallID, result.Text())
}

// Wire types of the response.
type chatResponse struct {
	Choices []struct {
		Message struct {
			Content   json.RawMessage `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		// PromptTokensDetails.CachedTokens: the prompt tokens read from
		// the prompt cache (part of prompt_tokens).
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// ParseResponse reads a Chat Completions body. Without the request's tool
// list it does no text tool-call recovery; Chat (and ParseResponseFor) do.
func (a *Adapter) ParseResponse(body []byte) (llm.Response, error) {
	return ParseResponseFor(body, nil)
}

// ParseResponseFor reads a Chat Completions body; when the message has no
// tool_calls, a tool call written as text (RecoverToolCalls) naming one of
// tools is returned as a tool call.
func ParseResponseFor(body []byte, tools []llm.Tool) (llm.Response, error) {
	var r chatResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return llm.Response{}, fmt.Errorf("%s: decoding response: %w", Provider, err)
	}
	if len(r.Choices) == 0 {
		if msg := llm.ProviderMessage(body); msg != "" && len(r.Error) > 0 && string(r.Error) != "null" {
			return llm.Response{}, &llm.ProviderError{Provider: Provider, Status: http.StatusOK, Message: msg}
		}
		return llm.Response{}, fmt.Errorf("%s: response has no choices", Provider)
	}
	c := r.Choices[0]
	var out llm.Response
	content, err := contentText(c.Message.Content)
	if err != nil {
		return llm.Response{}, err
	}
	if content == "" && c.Message.Refusal != nil {
		content = *c.Message.Refusal
	}
	out.Content = content
	if c.FinishReason != nil {
		out.StopReason = *c.FinishReason
	}
	if r.Usage != nil {
		out.Usage = &llm.Usage{InputTokens: r.Usage.PromptTokens, OutputTokens: r.Usage.CompletionTokens}
		if d := r.Usage.PromptTokensDetails; d != nil {
			out.Usage.CachedInputTokens = d.CachedTokens
		}
	}
	seen := map[string]bool{}
	for i, tc := range c.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never offered by this adapter
		}
		if tc.Function.Name == "" {
			return llm.Response{}, fmt.Errorf("%s: tool call %d has no function name", Provider, i)
		}
		args, err := DecodeArguments(tc.Function.Arguments)
		if err != nil {
			return llm.Response{}, fmt.Errorf("%s: tool call %q (%s): %w", Provider, tc.Function.Name, tc.ID, err)
		}
		id := tc.ID
		if id == "" || seen[id] {
			id = llm.NewCallID()
		}
		seen[id] = true
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: id, Name: tc.Function.Name, Arguments: args})
	}
	if len(out.ToolCalls) == 0 {
		out.Content, out.ToolCalls = RecoverToolCalls(out.Content, tools)
	}
	return out, nil
}

// contentText reads message.content: a string, null, or (some compatible
// servers) an array of {type:"text", text} parts.
func contentText(raw json.RawMessage) (string, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return "", nil
	}
	switch s[0] {
	case '"':
		var t string
		if err := json.Unmarshal(raw, &t); err != nil {
			return "", fmt.Errorf("%s: decoding message content: %w", Provider, err)
		}
		return t, nil
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", fmt.Errorf("%s: decoding message content: %w", Provider, err)
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" || p.Type == "" {
				b.WriteString(p.Text)
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("%s: message content is neither a string nor an array", Provider)
}

// Chat sends one turn to {base_url}/chat/completions.
func (a *Adapter) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	body, err := a.PrepareRequest(req)
	if err != nil {
		return llm.Response{}, err
	}
	resp, err := llm.Send(ctx, a.cfg, Provider, a.endpoint, llm.Bearer(a.cfg.APIKey), body, nil)
	if err != nil {
		return llm.Response{}, err
	}
	return ParseResponseFor(resp, req.Tools)
}
