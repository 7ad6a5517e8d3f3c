// Package responses is the llm.Adapter for the OpenAI Responses API
// (POST {base_url}/responses), registry kind "openai-responses".
//
// Conversation state is carried by the items themselves, not by
// previous_response_id: every request sends the whole conversation with
// store: false and asks for the reasoning items' encrypted_content
// (include: ["reasoning.encrypted_content"]); the reasoning items of an
// assistant turn go back, verbatim, before its function calls. This is
// stateless on OpenAI's side, so it works for organizations with Zero Data
// Retention (where store is always false and previous_response_id cannot
// be used), does not depend on OpenAI keeping a response for as long as a
// run may wait for an approval, and lets any replica resume a paused run
// from the run's stored state alone. Items the API did not persist are sent
// without their ids (function_call, message: "Item with id … not found"
// otherwise); reasoning items keep theirs, which their schema requires.
package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Provider is the name used in errors and spans (the registry kind).
const Provider = "openai-responses"

// DefaultBaseURL is used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Adapter speaks the Responses API. It is safe for concurrent use.
type Adapter struct {
	cfg      llm.Config
	endpoint string
}

var _ llm.Adapter = (*Adapter)(nil)

// New returns an adapter for cfg. A nil cfg.HTTPClient is replaced by one
// built for this adapter (llm.NewHTTPClient).
func New(cfg llm.Config) *Adapter {
	cfg, base := llm.WithDefaults(cfg, DefaultBaseURL)
	return &Adapter{cfg: cfg, endpoint: base + "/responses"}
}

// Wire types of the request (CreateResponse).
type createRequest struct {
	Model           string   `json:"model"`
	Instructions    string   `json:"instructions,omitempty"`
	Input           []any    `json:"input"`
	Tools           []tool   `json:"tools,omitempty"`
	ToolChoice      string   `json:"tool_choice,omitempty"`
	MaxOutputTokens int      `json:"max_output_tokens,omitempty"`
	Store           bool     `json:"store"`
	Include         []string `json:"include,omitempty"`
}

// tool is a FunctionTool; strict and parameters are required. strict is
// false: strict mode wants every property required and no additional
// properties, which registry schemas need not satisfy.
type tool struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
	Strict      bool           `json:"strict"`
}

// message is an EasyInputMessage.
type message struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

// functionCall is a function_call input item (no id: see the package doc).
type functionCall struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// outputItem is an output item of a response, as far as this adapter reads
// it.
type outputItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        json.RawMessage `json:"arguments"`
	EncryptedContent *string         `json:"encrypted_content"`
	Content          []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

// PrepareRequest builds the CreateResponse body. System messages become
// instructions; an assistant turn the adapter parsed goes back as its
// reasoning items (verbatim), its text and its function calls; every
// function call must be answered by a function_call_output before the next
// user or assistant message.
func (a *Adapter) PrepareRequest(req llm.Request) (json.RawMessage, error) {
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("%s: request has no messages", Provider)
	}
	out := createRequest{Model: req.Model, Input: make([]any, 0, len(req.Messages)), Include: []string{"reasoning.encrypted_content"}}
	var system []string
	var pending []string
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
			out.Input = append(out.Input, message{Type: "message", Role: "user", Content: m.Content})
		case llm.RoleAssistant:
			items, err := assistantItems(m)
			if err != nil {
				return nil, fmt.Errorf("%s: message %d: %w", Provider, i, err)
			}
			out.Input = append(out.Input, items...)
			for _, tc := range m.ToolCalls {
				if slices.Contains(pending, tc.ID) {
					return nil, fmt.Errorf("%s: message %d: duplicate tool call id %q", Provider, i, tc.ID)
				}
				pending = append(pending, tc.ID)
			}
		case llm.RoleTool:
			j := slices.Index(pending, m.ToolCallID)
			if m.ToolCallID == "" || j < 0 {
				return nil, fmt.Errorf("%s: message %d: tool result for %q answers no pending function call of the preceding assistant turn", Provider, i, m.ToolCallID)
			}
			pending = slices.Delete(pending, j, j+1)
			out.Input = append(out.Input, llm.Formatted(m, outputItemFor(m.ToolCallID, m.Name, !m.IsError, llm.TextJSON(m.Content), m.Content)))
		default:
			return nil, fmt.Errorf("%s: message %d: unknown role %q", Provider, i, m.Role)
		}
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("%s: tool call(s) %s have no tool result", Provider, strings.Join(pending, ", "))
	}
	out.Instructions = strings.Join(system, "\n\n")
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, tool{Type: "function", Name: t.Name, Description: t.Description, Parameters: llm.ToolParameters(t.Parameters)})
	}
	switch req.ToolChoice {
	case "":
	case "auto", "required", "none":
		if len(out.Tools) > 0 {
			out.ToolChoice = req.ToolChoice
		}
	default:
		return nil, fmt.Errorf("%s: unknown tool_choice %q (want auto, required or none)", Provider, req.ToolChoice)
	}
	out.MaxOutputTokens = req.MaxTokens
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", Provider, err)
	}
	return b, nil
}

// assistantItems are the input items of an assistant turn: from the
// response's own output items when the adapter parsed it (reasoning items
// verbatim, in their place), else built from the neutral message.
func assistantItems(m llm.Message) ([]any, error) {
	var items []any
	if len(m.Provider) > 0 {
		var output []json.RawMessage
		if err := json.Unmarshal(m.Provider, &output); err != nil {
			return nil, fmt.Errorf("the turn's output items: %w", err)
		}
		n := 0
		for _, raw := range output {
			var it outputItem
			if err := json.Unmarshal(raw, &it); err != nil {
				return nil, fmt.Errorf("the turn's output items: %w", err)
			}
			switch it.Type {
			case "reasoning":
				// Without encrypted_content the item only names a stored
				// one, which store: false never made: leave it out.
				if it.EncryptedContent != nil {
					items = append(items, raw)
				}
			case "function_call":
				if n >= len(m.ToolCalls) {
					return nil, fmt.Errorf("the turn has more function calls than tool calls")
				}
				tc := m.ToolCalls[n]
				n++
				args, err := encodeArguments(tc.Arguments)
				if err != nil {
					return nil, fmt.Errorf("tool call %q: %w", tc.Name, err)
				}
				items = append(items, functionCall{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: args})
			}
		}
		if n != len(m.ToolCalls) {
			return nil, fmt.Errorf("the turn's output items hold %d function calls, the message %d", n, len(m.ToolCalls))
		}
		if m.Content != "" { // before the calls, as the model wrote it
			items = slices.Insert(items, firstCall(items), any(message{Type: "message", Role: "assistant", Content: m.Content}))
		}
		return items, nil
	}
	if m.Content != "" {
		items = append(items, message{Type: "message", Role: "assistant", Content: m.Content})
	}
	for _, tc := range m.ToolCalls {
		if tc.ID == "" {
			return nil, fmt.Errorf("tool call %q has no id", tc.Name)
		}
		args, err := encodeArguments(tc.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool call %q: %w", tc.Name, err)
		}
		items = append(items, functionCall{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: args})
	}
	return items, nil
}

func firstCall(items []any) int {
	for i, it := range items {
		if _, ok := it.(functionCall); ok {
			return i
		}
	}
	return len(items)
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

// outputItemFor is the function_call_output item: its output is the
// result's text, or input_text and input_image items when the tool
// answered with images (format.ToolResult, docs/mcp.md "Images and other media
// in results").
func outputItemFor(callID, name string, success bool, output json.RawMessage, errText string) any {
	call := toolrouter.Call{Format: toolrouter.FormatOpenAI, ProviderCallID: callID, ToolName: name,
		Extra: map[string]any{"openai_api": "responses"}}
	return format.ToolResult(call, success, output, errText)
}

// FormatToolResult is the function_call_output item {"type":
// "function_call_output", "call_id", "output"}.
func (a *Adapter) FormatToolResult(toolCallID, toolName string, result llm.ToolResult) any {
	return outputItemFor(toolCallID, toolName, result.Success, result.Output, result.Text())
}

// Wire type of the response.
type response struct {
	Object            string            `json:"object"`
	Status            string            `json:"status"`
	Output            []json.RawMessage `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Usage *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
		// InputTokensDetails.CachedTokens: input tokens read from the
		// prompt cache (part of input_tokens).
		InputTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
}

// ParseResponse reads a Response object: output_text of message items
// joined, function_call items as tool calls (in order: parallel calls),
// usage, and the output items as Response.Provider when they hold function
// calls (the next request carries their reasoning back). A failed
// response, or an incomplete one without output, is a *llm.ProviderError.
func (a *Adapter) ParseResponse(body []byte) (llm.Response, error) {
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return llm.Response{}, fmt.Errorf("%s: decoding response: %w", Provider, err)
	}
	if r.Error != nil && r.Error.Message != "" || r.Status == "failed" {
		msg := "the response failed"
		if r.Error != nil && r.Error.Message != "" {
			msg = r.Error.Message
		}
		return llm.Response{}, &llm.ProviderError{Provider: Provider, Status: http.StatusOK, Message: msg}
	}
	if r.Object != "" && r.Object != "response" {
		return llm.Response{}, fmt.Errorf("%s: unexpected object %q", Provider, r.Object)
	}
	var out llm.Response
	out.StopReason = r.Status
	if r.IncompleteDetails != nil && r.IncompleteDetails.Reason != "" {
		out.StopReason = r.IncompleteDetails.Reason
	}
	var text strings.Builder
	seen := map[string]bool{}
	for i, raw := range r.Output {
		var it outputItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return llm.Response{}, fmt.Errorf("%s: output item %d: %w", Provider, i, err)
		}
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					text.WriteString(c.Refusal)
				}
			}
		case "function_call":
			if it.Name == "" {
				return llm.Response{}, fmt.Errorf("%s: function_call %d has no name", Provider, i)
			}
			args, err := decodeArguments(it.Arguments)
			if err != nil {
				return llm.Response{}, fmt.Errorf("%s: function_call %q (%s): %w", Provider, it.Name, it.CallID, err)
			}
			id := it.CallID
			if id == "" || seen[id] {
				return llm.Response{}, fmt.Errorf("%s: function_call %q has a missing or repeated call_id %q", Provider, it.Name, id)
			}
			seen[id] = true
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: id, Name: it.Name, Arguments: args})
		}
	}
	out.Content = text.String()
	if r.Usage != nil {
		out.Usage = &llm.Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens}
		if d := r.Usage.InputTokensDetails; d != nil {
			out.Usage.CachedInputTokens = d.CachedTokens
		}
	}
	if r.Status == "incomplete" && out.Content == "" && len(out.ToolCalls) == 0 {
		return llm.Response{}, &llm.ProviderError{Provider: Provider, Status: http.StatusOK, Message: "the response is incomplete: " + out.StopReason}
	}
	if len(out.ToolCalls) > 0 {
		out.Provider, _ = json.Marshal(r.Output)
	}
	return out, nil
}

// decodeArguments reads a function_call's arguments: a JSON string holding
// an object ("" is {}).
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return args, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("arguments are not a JSON string: %w", err)
	}
	if strings.TrimSpace(s) == "" {
		return args, nil
	}
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		return nil, fmt.Errorf("arguments are not a JSON object: %w", err)
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}

// Chat sends one turn to {base_url}/responses.
func (a *Adapter) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	body, err := a.PrepareRequest(req)
	if err != nil {
		return llm.Response{}, err
	}
	resp, err := llm.Send(ctx, a.cfg, Provider, a.endpoint, llm.Bearer(a.cfg.APIKey), body, nil)
	if err != nil {
		return llm.Response{}, err
	}
	return a.ParseResponse(resp)
}
