// Package ollama is the llm.Adapter for Ollama's native chat API
// (POST {base_url}/api/chat).
package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/llm/openai"
)

// Provider is the name used in errors.
const Provider = "ollama"

// DefaultBaseURL is used when Config.BaseURL is empty.
const DefaultBaseURL = "http://localhost:11434"

// Adapter speaks /api/chat. It is safe for concurrent use.
type Adapter struct {
	cfg      llm.Config
	endpoint string
}

var _ llm.Adapter = (*Adapter)(nil)

// New returns an adapter for cfg. A nil cfg.HTTPClient is replaced by one
// built for this adapter (llm.NewHTTPClient).
func New(cfg llm.Config) *Adapter {
	cfg, base := llm.WithDefaults(cfg, DefaultBaseURL)
	return &Adapter{cfg: cfg, endpoint: base + "/api/chat"}
}

// Wire types of the request.
type chatRequest struct {
	Model    string                  `json:"model"`
	Messages []any                   `json:"messages"`
	Tools    []openai.ToolDefinition `json:"tools,omitempty"`
	Stream   bool                    `json:"stream"`
	Options  map[string]any          `json:"options,omitempty"`
}

type textMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type assistantMessage struct {
	Role      string         `json:"role"`
	Content   string         `json:"content"`
	ToolCalls []toolCallWire `json:"tool_calls,omitempty"`
}

type toolCallWire struct {
	Function toolCallFn `json:"function"`
}

type toolCallFn struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// PrepareRequest builds the /api/chat body, always with "stream": false.
// Ollama has no tool_choice: "none" leaves the tools out, "auto" and
// "required" send them as they are. MaxTokens becomes options.num_predict.
func (a *Adapter) PrepareRequest(req llm.Request) (json.RawMessage, error) {
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("%s: request has no messages", Provider)
	}
	out := chatRequest{Model: req.Model, Messages: make([]any, 0, len(req.Messages))}
	names := map[string]string{} // tool call id → tool name, for tool_name
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem, llm.RoleUser:
			out.Messages = append(out.Messages, textMessage{Role: string(m.Role), Content: m.Content})
		case llm.RoleAssistant:
			am := assistantMessage{Role: "assistant", Content: m.Content}
			for _, tc := range m.ToolCalls {
				args := tc.Arguments
				if args == nil {
					args = map[string]any{}
				}
				am.ToolCalls = append(am.ToolCalls, toolCallWire{Function: toolCallFn{Name: tc.Name, Arguments: args}})
				if tc.ID != "" {
					names[tc.ID] = tc.Name
				}
			}
			out.Messages = append(out.Messages, am)
		case llm.RoleTool:
			name := m.Name
			if name == "" {
				name = names[m.ToolCallID]
			}
			out.Messages = append(out.Messages, llm.Formatted(m, toolMessage(name, m.Content)))
		default:
			return nil, fmt.Errorf("%s: message %d: unknown role %q", Provider, i, m.Role)
		}
	}
	switch req.ToolChoice {
	case "", "auto", "required", "none":
	default:
		return nil, fmt.Errorf("%s: unknown tool_choice %q (want auto, required or none)", Provider, req.ToolChoice)
	}
	if req.ToolChoice != "none" && len(req.Tools) > 0 {
		out.Tools = openai.ToolDefinitions(req.Tools)
	}
	if req.MaxTokens > 0 {
		out.Options = map[string]any{"num_predict": req.MaxTokens}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", Provider, err)
	}
	return b, nil
}

// toolMessage is the tool-result message: FormatToolResult and
// PrepareRequest both use it. tool_name is left out when unknown.
func toolMessage(toolName, text string) map[string]any {
	m := map[string]any{"role": "tool", "content": text}
	if toolName != "" {
		m["tool_name"] = toolName
	}
	return m
}

// FormatToolResult is {"role":"tool","content": result.Text(),"tool_name"}.
func (a *Adapter) FormatToolResult(toolCallID, toolName string, result llm.ToolResult) any {
	return toolMessage(toolName, result.Text())
}

// chunk is one /api/chat response object: the whole answer, or one line of
// an NDJSON stream.
type chunk struct {
	Message struct {
		Content   string `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"message"`
	Done            bool   `json:"done"`
	DoneReason      string `json:"done_reason"`
	PromptEvalCount int64  `json:"prompt_eval_count"`
	EvalCount       int64  `json:"eval_count"`
	Error           string `json:"error"`
}

// ParseResponse reads an /api/chat body. Without the request's tool list it
// does no text tool-call recovery; Chat (and ParseResponseFor) do.
func (a *Adapter) ParseResponse(body []byte) (llm.Response, error) {
	return ParseResponseFor(body, nil)
}

// ParseResponseFor reads an /api/chat body — one JSON object, or an NDJSON
// stream whose chunks are merged (content concatenated, tool calls
// collected, usage and done_reason from the done:true line). When there are
// no tool_calls, a tool call written as text naming one of tools is
// recovered (openai.RecoverToolCalls).
func ParseResponseFor(body []byte, tools []llm.Tool) (llm.Response, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var out llm.Response
	var content strings.Builder
	seen := map[string]bool{}
	n, done := 0, false
	for {
		var c chunk
		err := dec.Decode(&c)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return llm.Response{}, fmt.Errorf("%s: decoding response: %w", Provider, err)
		}
		n++
		if c.Error != "" {
			return llm.Response{}, &llm.ProviderError{Provider: Provider, Status: http.StatusOK, Message: c.Error}
		}
		content.WriteString(c.Message.Content)
		for _, tc := range c.Message.ToolCalls {
			if tc.Function.Name == "" {
				return llm.Response{}, fmt.Errorf("%s: tool call %d has no function name", Provider, len(out.ToolCalls))
			}
			args, err := openai.DecodeArguments(tc.Function.Arguments)
			if err != nil {
				return llm.Response{}, fmt.Errorf("%s: tool call %q: %w", Provider, tc.Function.Name, err)
			}
			id := tc.ID
			if id == "" || seen[id] {
				id = llm.NewCallID()
			}
			seen[id] = true
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: id, Name: tc.Function.Name, Arguments: args})
		}
		if c.Done {
			done = true
			out.StopReason = c.DoneReason
			out.Usage = &llm.Usage{InputTokens: c.PromptEvalCount, OutputTokens: c.EvalCount}
		}
	}
	if n == 0 {
		return llm.Response{}, fmt.Errorf("%s: empty response", Provider)
	}
	if !done {
		return llm.Response{}, fmt.Errorf("%s: response ended without a done:true record", Provider)
	}
	out.Content = content.String()
	if len(out.ToolCalls) == 0 {
		out.Content, out.ToolCalls = openai.RecoverToolCalls(out.Content, tools)
	}
	return out, nil
}

// Chat sends one turn to {base_url}/api/chat. A key, when set, is sent as
// Authorization: Bearer (ollama.com, authenticating proxies).
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
