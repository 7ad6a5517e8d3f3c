// Package gemini is the llm.Adapter for the Gemini API's generateContent
// (POST {base_url}/v1beta/models/{model}:generateContent, the key in the
// x-goog-api-key header), registry kind "gemini".
//
// A model turn that called functions goes back in the next request as the
// API sent it (Response.Provider): its parts keep their thoughtSignature,
// which Gemini 3 models require on the function-call parts of the current
// turn (https://ai.google.dev/gemini-api/docs/thought-signatures). The
// functionResponse parts answering it follow in one user turn, in call
// order, with the calls' ids when the API gave ids.
package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Provider is the name used in errors and spans (the registry kind).
const Provider = "gemini"

// Defaults.
const (
	DefaultBaseURL = "https://generativelanguage.googleapis.com"
	APIVersion     = "v1beta"
)

// Adapter speaks generateContent. It is safe for concurrent use.
type Adapter struct {
	cfg  llm.Config
	base string
}

var _ llm.Adapter = (*Adapter)(nil)

// New returns an adapter for cfg. A nil cfg.HTTPClient is replaced by one
// built for this adapter (llm.NewHTTPClient).
func New(cfg llm.Config) *Adapter {
	cfg, base := llm.WithDefaults(cfg, DefaultBaseURL)
	return &Adapter{cfg: cfg, base: base}
}

// Wire types of the request (GenerateContentRequest).
type generateRequest struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	Tools             []tools           `json:"tools,omitempty"`
	ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []any  `json:"parts"`
}

type textPart struct {
	Text string `json:"text"`
}

type callPart struct {
	FunctionCall functionCall `json:"functionCall"`
}

type functionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

type tools struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
}

type functionDeclaration struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

type toolConfig struct {
	FunctionCallingConfig struct {
		Mode string `json:"mode"`
	} `json:"functionCallingConfig"`
}

type generationConfig struct {
	MaxOutputTokens int `json:"maxOutputTokens,omitempty"`
}

// PrepareRequest builds the generateContent body. System messages become
// systemInstruction; the results answering a model turn's function calls
// go, in call order, in the one user turn after it.
func (a *Adapter) PrepareRequest(req llm.Request) (json.RawMessage, error) {
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("%s: request has no messages", Provider)
	}
	var out generateRequest
	var system []any
	var pending []string         // call ids of the last model turn not yet answered
	givenID := map[string]bool{} // call ids the API gave (sent back in functionResponse.id)
	answering := false
	for i, m := range req.Messages {
		if m.Role != llm.RoleTool && m.Role != llm.RoleSystem && len(pending) > 0 {
			return nil, fmt.Errorf("%s: message %d (%s): tool call(s) %s have no tool result", Provider, i, m.Role, strings.Join(pending, ", "))
		}
		if m.Role != llm.RoleTool {
			answering = false
		}
		switch m.Role {
		case llm.RoleSystem:
			if m.Content != "" {
				system = append(system, textPart{Text: m.Content})
			}
		case llm.RoleUser:
			out.Contents = append(out.Contents, content{Role: "user", Parts: []any{textPart{Text: m.Content}}})
		case llm.RoleAssistant:
			c, err := modelContent(m, givenID)
			if err != nil {
				return nil, fmt.Errorf("%s: message %d: %w", Provider, i, err)
			}
			out.Contents = append(out.Contents, c)
			for _, tc := range m.ToolCalls {
				if slices.Contains(pending, tc.ID) {
					return nil, fmt.Errorf("%s: message %d: duplicate tool call id %q", Provider, i, tc.ID)
				}
				pending = append(pending, tc.ID)
			}
		case llm.RoleTool:
			j := slices.Index(pending, m.ToolCallID)
			if m.ToolCallID == "" || j < 0 {
				return nil, fmt.Errorf("%s: message %d: tool result for %q answers no pending function call of the preceding model turn", Provider, i, m.ToolCallID)
			}
			pending = slices.Delete(pending, j, j+1)
			part, err := responsePart(llm.Formatted(m, resultPart(m.ToolCallID, m.Name, !m.IsError, llm.TextJSON(m.Content), m.Content)), givenID[m.ToolCallID])
			if err != nil {
				return nil, fmt.Errorf("%s: message %d: %w", Provider, i, err)
			}
			if !answering {
				out.Contents = append(out.Contents, content{Role: "user"})
				answering = true
			}
			last := &out.Contents[len(out.Contents)-1]
			last.Parts = append(last.Parts, part)
		default:
			return nil, fmt.Errorf("%s: message %d: unknown role %q", Provider, i, m.Role)
		}
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("%s: tool call(s) %s have no tool result", Provider, strings.Join(pending, ", "))
	}
	if len(out.Contents) == 0 {
		return nil, fmt.Errorf("%s: request has no user or model content", Provider)
	}
	if len(system) > 0 {
		out.SystemInstruction = &content{Parts: system}
	}
	if len(req.Tools) > 0 {
		decls := make([]functionDeclaration, 0, len(req.Tools))
		for _, t := range req.Tools {
			decls = append(decls, functionDeclaration{Name: t.Name, Description: t.Description, Parameters: format.GeminiParameters(t.Parameters)})
		}
		out.Tools = []tools{{FunctionDeclarations: decls}}
	}
	mode := map[string]string{"auto": "AUTO", "required": "ANY", "none": "NONE"}[req.ToolChoice]
	switch {
	case req.ToolChoice != "" && mode == "":
		return nil, fmt.Errorf("%s: unknown tool_choice %q (want auto, required or none)", Provider, req.ToolChoice)
	case mode != "" && len(out.Tools) > 0:
		out.ToolConfig = &toolConfig{}
		out.ToolConfig.FunctionCallingConfig.Mode = mode
	}
	if req.MaxTokens > 0 {
		out.GenerationConfig = &generationConfig{MaxOutputTokens: req.MaxTokens}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", Provider, err)
	}
	return b, nil
}

// modelContent is a model turn: the content the API sent when there is one
// (its parts verbatim, thought signatures included), else built from the
// neutral message. It notes in givenID the call ids the API gave.
func modelContent(m llm.Message, givenID map[string]bool) (content, error) {
	if len(m.Provider) > 0 {
		var c struct {
			Parts []json.RawMessage `json:"parts"`
		}
		if err := json.Unmarshal(m.Provider, &c); err != nil {
			return content{}, fmt.Errorf("the turn's content: %w", err)
		}
		out := content{Role: "model"}
		n := 0
		for _, raw := range c.Parts {
			var p struct {
				FunctionCall *struct {
					ID string `json:"id"`
				} `json:"functionCall"`
			}
			if err := json.Unmarshal(raw, &p); err != nil {
				return content{}, fmt.Errorf("the turn's content: %w", err)
			}
			if p.FunctionCall != nil {
				if n >= len(m.ToolCalls) {
					return content{}, fmt.Errorf("the turn has more function calls than tool calls")
				}
				if p.FunctionCall.ID != "" {
					givenID[m.ToolCalls[n].ID] = true
				}
				n++
			}
			out.Parts = append(out.Parts, raw)
		}
		if n != len(m.ToolCalls) {
			return content{}, fmt.Errorf("the turn's content holds %d function calls, the message %d", n, len(m.ToolCalls))
		}
		return out, nil
	}
	out := content{Role: "model"}
	if m.Content != "" {
		out.Parts = append(out.Parts, textPart{Text: m.Content})
	}
	for _, tc := range m.ToolCalls {
		if tc.ID == "" {
			return content{}, fmt.Errorf("tool call %q has no id", tc.Name)
		}
		args := tc.Arguments
		if args == nil {
			args = map[string]any{}
		}
		out.Parts = append(out.Parts, callPart{FunctionCall: functionCall{ID: tc.ID, Name: tc.Name, Args: args}})
		givenID[tc.ID] = true
	}
	if len(out.Parts) == 0 {
		out.Parts = append(out.Parts, textPart{})
	}
	return out, nil
}

// responsePart is a functionResponse part, its id removed when the call
// had none (the id FormatToolResult used is then this adapter's own).
func responsePart(formatted any, keepID bool) (any, error) {
	if keepID {
		return formatted, nil
	}
	b, err := json.Marshal(formatted)
	if err != nil {
		return nil, fmt.Errorf("encoding the tool result: %w", err)
	}
	var p map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &p); err != nil || p["functionResponse"] == nil {
		return nil, fmt.Errorf("the tool result is not a functionResponse part: %s", b)
	}
	delete(p["functionResponse"], "id")
	return p, nil
}

// resultPart is the functionResponse part (format.ToolResult): {"output":
// …} or {"error": …} as the response, images as inlineData parts.
func resultPart(callID, name string, success bool, output json.RawMessage, errText string) any {
	return format.ToolResult(toolrouter.Call{Format: toolrouter.FormatGemini, ProviderCallID: callID, ToolName: name}, success, output, errText)
}

// FormatToolResult is the part {"functionResponse": {"id", "name",
// "response": {"output": …} or {"error": …}, "parts"?}}.
func (a *Adapter) FormatToolResult(toolCallID, toolName string, result llm.ToolResult) any {
	return resultPart(toolCallID, toolName, result.Success, result.Output, result.Text())
}

// Wire types of the response (GenerateContentResponse).
type generateResponse struct {
	Candidates []struct {
		Content       json.RawMessage `json:"content"`
		FinishReason  string          `json:"finishReason"`
		FinishMessage string          `json:"finishMessage"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason        string `json:"blockReason"`
		BlockReasonMessage string `json:"blockReasonMessage"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
		ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
		// CachedContentTokenCount: prompt tokens read from the context
		// cache (part of promptTokenCount).
		CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
}

type responsePartWire struct {
	Text         string `json:"text"`
	Thought      bool   `json:"thought"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
}

// okFinish are the finish reasons of a usable candidate; any other
// (SAFETY, RECITATION, PROHIBITED_CONTENT, MALFORMED_FUNCTION_CALL, …) ends
// the run with an error naming it.
var okFinish = map[string]bool{"": true, "STOP": true, "MAX_TOKENS": true, "FINISH_REASON_UNSPECIFIED": true}

// ParseResponse reads a GenerateContentResponse: the first candidate's
// text parts (thoughts left out) joined, its functionCall parts as tool
// calls (in order), usage (thinking tokens count as output), and the
// candidate's content as Response.Provider when it calls functions. A
// blocked prompt, or a candidate stopped for safety or any reason but
// STOP and MAX_TOKENS, is a *llm.ProviderError naming the reason.
func (a *Adapter) ParseResponse(body []byte) (llm.Response, error) {
	var r generateResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return llm.Response{}, fmt.Errorf("%s: decoding response: %w", Provider, err)
	}
	fail := func(msg string) (llm.Response, error) {
		return llm.Response{}, &llm.ProviderError{Provider: Provider, Status: http.StatusOK, Message: msg}
	}
	if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" {
		return fail(strings.TrimSpace("the prompt was blocked (blockReason " + pf.BlockReason + ") " + pf.BlockReasonMessage))
	}
	if len(r.Candidates) == 0 {
		return fail("the response has no candidates")
	}
	c := r.Candidates[0]
	if !okFinish[c.FinishReason] {
		return fail(strings.TrimSpace("the model stopped without an answer (finishReason " + c.FinishReason + ") " + c.FinishMessage))
	}
	var out llm.Response
	out.StopReason = c.FinishReason
	if u := r.UsageMetadata; u != nil {
		out.Usage = &llm.Usage{InputTokens: u.PromptTokenCount + u.ToolUsePromptTokenCount, OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount,
			CachedInputTokens: u.CachedContentTokenCount}
	}
	var parts struct {
		Parts []responsePartWire `json:"parts"`
	}
	if len(c.Content) > 0 && string(c.Content) != "null" {
		if err := json.Unmarshal(c.Content, &parts); err != nil {
			return llm.Response{}, fmt.Errorf("%s: decoding candidate content: %w", Provider, err)
		}
	}
	var text strings.Builder
	seen := map[string]bool{}
	for i, p := range parts.Parts {
		switch {
		case p.FunctionCall != nil:
			fc := p.FunctionCall
			if fc.Name == "" {
				return llm.Response{}, fmt.Errorf("%s: functionCall part %d has no name", Provider, i)
			}
			args := map[string]any{}
			if a := bytes.TrimSpace(fc.Args); len(a) > 0 && string(a) != "null" {
				if err := json.Unmarshal(a, &args); err != nil {
					return llm.Response{}, fmt.Errorf("%s: functionCall %q: args are not a JSON object: %w", Provider, fc.Name, err)
				}
				if args == nil {
					args = map[string]any{}
				}
			}
			id := fc.ID
			if id == "" || seen[id] {
				id = llm.NewCallID()
			}
			seen[id] = true
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: id, Name: fc.Name, Arguments: args})
		case !p.Thought:
			text.WriteString(p.Text)
		}
	}
	out.Content = text.String()
	if len(out.ToolCalls) == 0 && out.Content == "" && c.FinishReason == "MAX_TOKENS" {
		return fail("the model stopped without an answer (finishReason MAX_TOKENS)")
	}
	if len(out.ToolCalls) > 0 {
		out.Provider = c.Content
	}
	return out, nil
}

// Chat sends one turn to {base_url}/v1beta/models/{model}:generateContent.
func (a *Adapter) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	body, err := a.PrepareRequest(req)
	if err != nil {
		return llm.Response{}, err
	}
	model := strings.TrimPrefix(req.Model, "models/")
	if model == "" {
		return llm.Response{}, fmt.Errorf("%s: request has no model", Provider)
	}
	h := http.Header{}
	if a.cfg.APIKey != "" {
		h.Set("x-goog-api-key", a.cfg.APIKey)
	}
	endpoint := a.base + "/" + APIVersion + "/models/" + url.PathEscape(model) + ":generateContent"
	resp, err := llm.Send(ctx, a.cfg, Provider, endpoint, h, body, nil)
	if err != nil {
		return llm.Response{}, err
	}
	return a.ParseResponse(resp)
}
