package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

const ollamaChatPath = "/api/chat"

// The request types mirror ollama/ollama api/types.go: Ollama decodes the
// body with encoding/json into them, so a value of the wrong JSON type (an
// assistant tool call's arguments sent as a string, content as a list, …)
// is a 400 carrying the decoder's message. Unknown fields are ignored, as
// there.
type ollamaChatRequest struct {
	Model       string          `json:"model"`
	Messages    []ollamaMessage `json:"messages"`
	Stream      *bool           `json:"stream,omitempty"`
	Format      json.RawMessage `json:"format,omitempty"`
	KeepAlive   *ollamaDuration `json:"keep_alive,omitempty"`
	Tools       []ollamaTool    `json:"tools,omitempty"`
	Options     map[string]any  `json:"options"`
	Think       json.RawMessage `json:"think,omitempty"`
	Truncate    *bool           `json:"truncate,omitempty"`
	Shift       *bool           `json:"shift,omitempty"`
	Logprobs    bool            `json:"logprobs,omitempty"`
	TopLogprobs int             `json:"top_logprobs,omitempty"`
}

type ollamaMessage struct {
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	Thinking   string            `json:"thinking,omitempty"`
	Images     []ollamaImageData `json:"images,omitempty"`
	ToolCalls  []ollamaToolCall  `json:"tool_calls,omitempty"`
	ToolName   string            `json:"tool_name,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
}

type ollamaImageData []byte

type ollamaToolCall struct {
	ID       string                 `json:"id,omitempty"`
	Function ollamaToolCallFunction `json:"function"`
}

type ollamaToolCallFunction struct {
	Index     int                             `json:"index"`
	Name      string                          `json:"name"`
	Arguments ollamaToolCallFunctionArguments `json:"arguments"`
}

type ollamaToolCallFunctionArguments map[string]any

type ollamaTool struct {
	Type     string             `json:"type"`
	Items    any                `json:"items,omitempty"`
	Function ollamaToolFunction `json:"function"`
}

type ollamaToolFunction struct {
	Name        string                       `json:"name"`
	Description string                       `json:"description,omitempty"`
	Parameters  ollamaToolFunctionParameters `json:"parameters"`
}

type ollamaToolFunctionParameters struct {
	Type       string                        `json:"type"`
	Defs       any                           `json:"$defs,omitempty"`
	Items      any                           `json:"items,omitempty"`
	Required   []string                      `json:"required,omitempty"`
	Properties map[string]ollamaToolProperty `json:"properties"`
}

type ollamaToolProperty struct {
	Type        ollamaPropertyType `json:"type,omitempty"`
	Items       any                `json:"items,omitempty"`
	Description string             `json:"description,omitempty"`
	Enum        []any              `json:"enum,omitempty"`
}

// ollamaPropertyType is a JSON Schema type: a string or a list of strings.
type ollamaPropertyType []string

func (pt *ollamaPropertyType) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*pt = ollamaPropertyType{s}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*pt = list
	return nil
}

// ollamaDuration is keep_alive: seconds as a number, or a Go duration string.
type ollamaDuration struct{ time.Duration }

func (d *ollamaDuration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch t := v.(type) {
	case float64:
		d.Duration = time.Duration(t * float64(time.Second))
	case string:
		dur, err := time.ParseDuration(t)
		if err != nil {
			return err
		}
		d.Duration = dur
	default:
		//lint:ignore ST1005 Ollama's own text, verbatim (api.Duration.UnmarshalJSON)
		return fmt.Errorf("Unsupported type: '%T'", v)
	}
	return nil
}

func writeOllamaError(w http.ResponseWriter, status int, msg string, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"error": msg})
	_, _ = w.Write(b)
}

func (s *Server) ollamaReject(w http.ResponseWriter, status int, msg string) {
	s.addRejection(status, msg)
	writeOllamaError(w, status, msg, "")
}

// ollamaDecodeError words a decoding failure as Ollama's answer does
// ("json: cannot unmarshal string into Go struct field
// ChatRequest.messages.tool_calls.function.arguments of type
// api.ToolCallFunctionArguments").
func ollamaDecodeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		typ := strings.ReplaceAll(te.Type.String(), "llmtest.ollama", "api.")
		return fmt.Sprintf("json: cannot unmarshal %s into Go struct field ChatRequest.%s of type %s", te.Value, te.Field, typ)
	}
	return err.Error()
}

func (s *Server) serveOllama(w http.ResponseWriter, r *http.Request, rec Recorded) {
	if r.URL.Path != ollamaChatPath || r.Method != http.MethodPost {
		// gin's NoRoute answer.
		s.addRejection(http.StatusNotFound, "404 page not found")
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "404 page not found")
		return
	}
	var req ollamaChatRequest
	if err := json.NewDecoder(bytes.NewReader(rec.Raw)).Decode(&req); errors.Is(err, io.EOF) {
		s.ollamaReject(w, http.StatusBadRequest, "missing request body")
		return
	} else if err != nil {
		s.ollamaReject(w, http.StatusBadRequest, ollamaDecodeError(err))
		return
	}
	if req.TopLogprobs < 0 || req.TopLogprobs > 20 {
		s.ollamaReject(w, http.StatusBadRequest, "top_logprobs must be between 0 and 20")
		return
	}
	if strings.TrimSpace(req.Model) == "" {
		s.ollamaReject(w, http.StatusBadRequest, "model is required")
		return
	}
	if s.cfg.model != "" && ollamaTagged(req.Model) != ollamaTagged(s.cfg.model) {
		s.ollamaReject(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found", req.Model))
		return
	}
	now := s.cfg.now().UTC()
	if len(req.Messages) == 0 {
		// Loads the model and answers without generating.
		writeJSON(w, http.StatusOK, ollamaChunk{Model: req.Model, CreatedAt: now,
			Message: ollamaOutMessage{Role: "assistant"}, DoneReason: "load", Done: true})
		return
	}

	turn := s.nextTurn(rec)
	if turn.Status != 0 {
		writeOllamaError(w, turn.Status, ollamaStatusMessage(turn, req.Model), turn.RetryAfter)
		return
	}
	text, calls := s.ollamaOutput(turn)
	u := usageOf(turn)
	final := ollamaChunk{Model: req.Model, CreatedAt: now, Message: ollamaOutMessage{Role: "assistant"},
		DoneReason: "stop", Done: true,
		TotalDuration: 890771750, LoadDuration: 707634750, PromptEvalCount: u.InputTokens,
		PromptEvalDuration: 91703208, EvalCount: u.OutputTokens, EvalDuration: 90282125}

	if req.Stream != nil && !*req.Stream {
		final.Message.Content = text
		final.Message.ToolCalls = calls
		writeJSONType(w, "application/json; charset=utf-8", final)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	line := func(c ollamaChunk) {
		b, _ := json.Marshal(c)
		_, _ = w.Write(append(b, '\n'))
		if flusher != nil {
			flusher.Flush()
		}
	}
	for _, piece := range splitText(text) {
		line(ollamaChunk{Model: req.Model, CreatedAt: s.cfg.now().UTC(), Message: ollamaOutMessage{Role: "assistant", Content: piece}})
	}
	if len(calls) > 0 {
		line(ollamaChunk{Model: req.Model, CreatedAt: s.cfg.now().UTC(), Message: ollamaOutMessage{Role: "assistant", ToolCalls: calls}})
	}
	final.CreatedAt = s.cfg.now().UTC()
	line(final)
}

// ollamaTagged completes a model name with the default tag.
func ollamaTagged(name string) string {
	if i := strings.LastIndex(name, "/"); strings.Contains(name[i+1:], ":") {
		return name
	}
	return name + ":latest"
}

func ollamaStatusMessage(t Turn, model string) string {
	if t.ErrorMessage != "" {
		return t.ErrorMessage
	}
	switch t.Status {
	case http.StatusNotFound:
		return fmt.Sprintf("model '%s' not found", model)
	case http.StatusServiceUnavailable:
		return "server busy, please try again.  maximum pending requests exceeded"
	case http.StatusInternalServerError:
		return "llama runner process has terminated: exit status 2"
	}
	return strings.ToLower(http.StatusText(t.Status))
}

// The /api/chat answer, in the order of ollama_chat_*.json.
type ollamaChunk struct {
	Model              string           `json:"model"`
	CreatedAt          time.Time        `json:"created_at"`
	Message            ollamaOutMessage `json:"message"`
	DoneReason         string           `json:"done_reason,omitempty"`
	Done               bool             `json:"done"`
	TotalDuration      int64            `json:"total_duration,omitempty"`
	LoadDuration       int64            `json:"load_duration,omitempty"`
	PromptEvalCount    int              `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64            `json:"prompt_eval_duration,omitempty"`
	EvalCount          int              `json:"eval_count,omitempty"`
	EvalDuration       int64            `json:"eval_duration,omitempty"`
}

type ollamaOutMessage struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []any  `json:"tool_calls,omitempty"`
}

// ollamaOutput is the content and tool calls of turn, the calls in the
// shape of the Ollama version the fake plays: since v0.12.10
// {"id":"call_…","function":{"index":i,"name","arguments":{…}}}, before
// (WithoutToolCallIDs) {"function":{"name","arguments":{…}}}.
func (s *Server) ollamaOutput(t Turn) (string, []any) {
	if t.TextToolCall && len(t.ToolCalls) > 0 {
		text := t.Text
		if text != "" {
			text += "\n"
		}
		return text + textToolCalls(t.ToolCalls), nil
	}
	var calls []any
	for i, c := range t.ToolCalls {
		args := c.Arguments
		if args == nil {
			args = map[string]any{}
		}
		if s.cfg.noToolCallIDs {
			calls = append(calls, map[string]any{"function": map[string]any{"name": c.Name, "arguments": args}})
			continue
		}
		id := c.ID
		if id == "" {
			id = ollamaCallID()
		}
		calls = append(calls, ollamaIDCall{ID: id, Function: ollamaIDFunction{Index: i, Name: c.Name, Arguments: args}})
	}
	return t.Text, calls
}

type ollamaIDCall struct {
	ID       string           `json:"id"`
	Function ollamaIDFunction `json:"function"`
}

type ollamaIDFunction struct {
	Index     int            `json:"index"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

func writeJSONType(w http.ResponseWriter, contentType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
