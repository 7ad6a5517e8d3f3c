package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// openAIToolName is the documented function-name rule (FunctionObject.name:
// "a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of
// 64"); the API's error quotes the pattern without the length.
var openAIToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

const openAIChatPath = "/v1/chat/completions"

// openAIReject answers like api.openai.com and records the rejection.
func (s *Server) openAIReject(w http.ResponseWriter, status int, e openAIErr) {
	s.addRejection(status, e.Message)
	writeOpenAIError(w, status, e, "")
}

func writeOpenAIError(w http.ResponseWriter, status int, e openAIErr, retryAfter string) {
	w.Header().Set("x-request-id", "req_"+randFrom(hexDigits, 32))
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func (s *Server) serveOpenAI(w http.ResponseWriter, r *http.Request, rec Recorded) {
	if r.URL.Path != openAIChatPath {
		s.openAIReject(w, http.StatusNotFound, openAIErr{
			Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), Type: "invalid_request_error"})
		return
	}
	if r.Method != http.MethodPost {
		s.openAIReject(w, http.StatusMethodNotAllowed, openAIErr{
			Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), Type: "invalid_request_error"})
		return
	}
	if key := s.cfg.apiKey; key != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got = strings.TrimSpace(got)
		switch {
		case !ok || got == "":
			s.openAIReject(w, http.StatusUnauthorized, openAIErr{Type: "invalid_request_error",
				Message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."})
			return
		case got != key:
			s.openAIReject(w, http.StatusUnauthorized, openAIErr{Type: "invalid_request_error", Code: strp("invalid_api_key"),
				Message: fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", maskKey(got))})
			return
		}
	}
	if rec.Body == nil {
		s.openAIReject(w, http.StatusBadRequest, openAIErr{Type: "invalid_request_error",
			Message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"})
		return
	}
	if e, bad := openAICheckRequest(rec.Raw, rec.Body); bad {
		s.openAIReject(w, http.StatusBadRequest, e)
		return
	}
	model, _ := rec.Body["model"].(string)
	if s.cfg.model != "" && model != s.cfg.model {
		s.openAIReject(w, http.StatusNotFound, openAIErr{Type: "invalid_request_error", Code: strp("model_not_found"),
			Message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)})
		return
	}

	turn := s.nextTurn(rec)
	if turn.Status != 0 {
		writeOpenAIError(w, turn.Status, openAIStatusError(turn), turn.RetryAfter)
		return
	}
	comp := s.openAICompletion(model, turn)
	w.Header().Set("x-request-id", "req_"+randFrom(hexDigits, 32))
	if stream, _ := rec.Body["stream"].(bool); stream {
		includeUsage := false
		if so, ok := rec.Body["stream_options"].(map[string]any); ok {
			includeUsage, _ = so["include_usage"].(bool)
		}
		writeOpenAIStream(w, comp, includeUsage)
		return
	}
	writeJSON(w, http.StatusOK, comp)
}

func maskKey(k string) string {
	if len(k) <= 8 {
		return k
	}
	return k[:3] + strings.Repeat("*", len(k)-7) + k[len(k)-4:]
}

// openAICheckRequest applies, in order, the checks api.openai.com makes of a
// chat completion request; bad is true with the error it would answer.
func openAICheckRequest(raw []byte, body map[string]any) (e openAIErr, bad bool) {
	fail := func(msg string, param, code *string) (openAIErr, bool) {
		return openAIErr{Message: msg, Type: "invalid_request_error", Param: param, Code: code}, true
	}
	// Unknown top-level arguments.
	known, err := openAIRequestParams("CreateChatCompletionRequest")
	if err != nil {
		return fail("llmtest: "+err.Error(), nil, nil)
	}
	var unknown []string
	for k := range body {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		if len(unknown) == 1 {
			return fail("Unrecognized request argument supplied: "+unknown[0], nil, nil)
		}
		return fail("Unrecognized request arguments supplied: "+strings.Join(unknown, ", "), nil, nil)
	}
	// The official schema.
	sch, err := openAISchema("CreateChatCompletionRequest")
	if err != nil {
		return fail("llmtest: "+err.Error(), nil, nil)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fail("We could not parse the JSON body of your request.", nil, nil)
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return openAIValidationError(ve, inst), true
		}
		return fail("llmtest: "+err.Error(), nil, nil)
	}
	// Tools: not empty, and the tool options only with tools.
	tools, _ := body["tools"].([]any)
	if _, present := body["tools"]; present && tools != nil && len(tools) == 0 {
		return fail("Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.", strp("tools"), strp("empty_array"))
	}
	for _, opt := range []string{"tool_choice", "parallel_tool_calls"} {
		if v, present := body[opt]; present && v != nil && len(tools) == 0 {
			return fail(fmt.Sprintf("Invalid value for '%s': '%s' is only allowed when 'tools' are specified.", opt, opt), strp(opt), nil)
		}
	}
	// Tool names.
	for i, t := range tools {
		tm, _ := t.(map[string]any)
		fn, _ := tm["function"].(map[string]any)
		name, ok := fn["name"].(string)
		if !ok {
			continue
		}
		param := fmt.Sprintf("tools[%d].function.name", i)
		if !openAIToolName.MatchString(name) {
			return fail(fmt.Sprintf("Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", param), strp(param), strp("invalid_value"))
		}
		if len(name) > 64 {
			return fail(fmt.Sprintf("Invalid '%s': string too long. Expected a string with maximum length 64, but got a string with length %d instead.", param, len(name)), strp(param), strp("string_above_max_length"))
		}
	}
	msgs, _ := body["messages"].([]any)
	// Assistant tool calls: no keys the API does not know (a streaming
	// delta's "index" leaking into history is rejected), and arguments must
	// be JSON text.
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		calls, isList := mm["tool_calls"].([]any)
		if isList && len(calls) == 0 {
			p := fmt.Sprintf("messages[%d].tool_calls", i)
			return fail(fmt.Sprintf("Invalid '%s': empty array. Expected an array with minimum length 1, but got an empty array instead.", p), strp(p), strp("empty_array"))
		}
		// An assistant message's content may only be absent or null when it
		// calls tools.
		if mm["role"] == "assistant" && len(calls) == 0 && mm["function_call"] == nil && mm["content"] == nil {
			return fail("Invalid value for 'content': expected a string, got null.", strp(fmt.Sprintf("messages.[%d].content", i)), nil)
		}
		for j, c := range calls {
			cm, _ := c.(map[string]any)
			for _, k := range sortedKeys(cm) {
				if k != "id" && k != "type" && k != "function" && k != "custom" {
					p := fmt.Sprintf("messages[%d].tool_calls[%d].%s", i, j, k)
					return fail(fmt.Sprintf("Unknown parameter: '%s'.", p), strp(p), strp("unknown_parameter"))
				}
			}
			fn, _ := cm["function"].(map[string]any)
			for _, k := range sortedKeys(fn) {
				if k != "name" && k != "arguments" {
					p := fmt.Sprintf("messages[%d].tool_calls[%d].function.%s", i, j, k)
					return fail(fmt.Sprintf("Unknown parameter: '%s'.", p), strp(p), strp("unknown_parameter"))
				}
			}
			if args, ok := fn["arguments"].(string); ok && !json.Valid([]byte(args)) {
				p := fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j)
				return fail(fmt.Sprintf("Invalid '%s': expected a string containing valid JSON, but got %q instead.", p, args), strp(p), strp("invalid_value"))
			}
		}
	}
	// Tool call / tool message pairing.
	for i := 0; i < len(msgs); i++ {
		mm, _ := msgs[i].(map[string]any)
		role, _ := mm["role"].(string)
		if role == "tool" {
			// A tool message not inside a run after an assistant's tool_calls.
			return fail("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", strp(fmt.Sprintf("messages.[%d].role", i)), nil)
		}
		calls, _ := mm["tool_calls"].([]any)
		if role != "assistant" || len(calls) == 0 {
			continue
		}
		var want []string
		pending := map[string]bool{}
		for _, c := range calls {
			cm, _ := c.(map[string]any)
			if id, ok := cm["id"].(string); ok {
				want = append(want, id)
				pending[id] = true
			}
		}
		j := i + 1
		for ; j < len(msgs); j++ {
			tm, _ := msgs[j].(map[string]any)
			if r, _ := tm["role"].(string); r != "tool" {
				break
			}
			id, _ := tm["tool_call_id"].(string)
			if _, ok := pending[id]; !ok {
				return fail(fmt.Sprintf("Invalid parameter: 'tool_call_id' of '%s' not found in 'tool_calls' of previous message.", id), strp(fmt.Sprintf("messages.[%d].tool_call_id", j)), nil)
			}
			delete(pending, id)
		}
		var missing []string
		for _, id := range want {
			if pending[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return fail("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: "+strings.Join(missing, ", "), strp(fmt.Sprintf("messages.[%d].role", i)), nil)
		}
		i = j - 1
	}
	return openAIErr{}, false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// openAIStatusError is the body api.openai.com sends with a status.
func openAIStatusError(t Turn) openAIErr {
	e := openAIErr{Type: "invalid_request_error"}
	switch {
	case t.Status == http.StatusTooManyRequests:
		e.Type, e.Code = "requests", strp("rate_limit_exceeded")
		e.Message = "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to learn more."
	case t.Status == http.StatusUnauthorized:
		e.Code = strp("invalid_api_key")
		e.Message = "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
	case t.Status == http.StatusNotFound:
		e.Code = strp("model_not_found")
		e.Message = "The model does not exist or you do not have access to it."
	case t.Status == http.StatusServiceUnavailable:
		e.Type = "server_error"
		e.Message = "The engine is currently overloaded, please try again later"
	case t.Status >= 500:
		e.Type = "server_error"
		e.Message = "The server had an error while processing your request. Sorry about that!"
	default:
		e.Message = http.StatusText(t.Status)
	}
	if t.ErrorMessage != "" {
		e.Message = t.ErrorMessage
	}
	return e
}

// The Chat Completions response, field for field and in the order of the
// recorded openai_chat_tool_calls.json / openai_chat_final.json.
type openAICompletion struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	Choices           []openAIChoice `json:"choices"`
	Usage             openAIUsage    `json:"usage"`
	SystemFingerprint string         `json:"system_fingerprint"`
}

type openAIChoice struct {
	Index        int           `json:"index"`
	Message      openAIMessage `json:"message"`
	Logprobs     *struct{}     `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type openAIMessage struct {
	Role      string           `json:"role"`
	Content   *string          `json:"content"`
	ToolCalls []openAIToolCall `json:"tool_calls,omitempty"`
	Refusal   *string          `json:"refusal"`
}

type openAIToolCall struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type openAIUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptTokensDetails is sent when some prompt tokens were cached
	// (the recorded responses, from an endpoint without a prompt cache,
	// have none).
	PromptTokensDetails     *openAITokenDetails `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (s *Server) openAICompletion(model string, t Turn) openAICompletion {
	u := usageOf(t)
	msg := openAIMessage{Role: "assistant"}
	finish := "stop"
	text := t.Text
	switch {
	case len(t.ToolCalls) > 0 && t.TextToolCall:
		if text != "" {
			text += "\n"
		}
		text += textToolCalls(t.ToolCalls)
	case len(t.ToolCalls) > 0:
		finish = "tool_calls"
		for _, c := range t.ToolCalls {
			id := c.ID
			if id == "" {
				id = openAICallID()
			}
			msg.ToolCalls = append(msg.ToolCalls, openAIToolCall{ID: id, Type: "function",
				Function: openAIFunction{Name: c.Name, Arguments: argsJSON(c.Arguments)}})
		}
	}
	if text != "" || len(msg.ToolCalls) == 0 {
		msg.Content = &text
	}
	comp := openAICompletion{
		ID:                openAICompletionID(),
		Object:            "chat.completion",
		Created:           s.cfg.now().Unix(),
		Model:             model,
		Choices:           []openAIChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:             openAIUsageOf(u),
		SystemFingerprint: openAIFingerprint(),
	}
	return comp
}

// writeOpenAIStream sends comp as the server-sent chunks of
// openai_chat_tool_calls_stream.txt.
func writeOpenAIStream(w http.ResponseWriter, comp openAICompletion, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	type chunkChoice struct {
		Index        int            `json:"index"`
		Delta        map[string]any `json:"delta"`
		Logprobs     *struct{}      `json:"logprobs"`
		FinishReason *string        `json:"finish_reason"`
	}
	type chunk struct {
		ID                string        `json:"id"`
		Object            string        `json:"object"`
		Created           int64         `json:"created"`
		Model             string        `json:"model"`
		SystemFingerprint string        `json:"system_fingerprint"`
		Choices           []chunkChoice `json:"choices"`
		Usage             *openAIUsage  `json:"usage,omitempty"`
	}
	send := func(c chunk) {
		c.ID, c.Object, c.Created, c.Model, c.SystemFingerprint = comp.ID, "chat.completion.chunk", comp.Created, comp.Model, comp.SystemFingerprint
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	delta := func(d map[string]any) {
		send(chunk{Choices: []chunkChoice{{Delta: d}}})
	}
	msg := comp.Choices[0].Message
	if len(msg.ToolCalls) > 0 && msg.Content == nil {
		delta(map[string]any{"role": "assistant", "content": nil})
	} else {
		delta(map[string]any{"role": "assistant", "content": "", "refusal": nil})
	}
	if msg.Content != nil {
		for _, piece := range splitText(*msg.Content) {
			delta(map[string]any{"content": piece})
		}
	}
	for i, tc := range msg.ToolCalls {
		delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Function.Name, "arguments": ""}}}})
		for _, piece := range splitN(tc.Function.Arguments, 5) {
			delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": piece}}}})
		}
	}
	finish := comp.Choices[0].FinishReason
	send(chunk{Choices: []chunkChoice{{Delta: map[string]any{}, FinishReason: &finish}}})
	if includeUsage {
		u := comp.Usage
		send(chunk{Choices: []chunkChoice{}, Usage: &u})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// openAIUsageOf is u in Chat Completions' usage fields.
func openAIUsageOf(u Usage) openAIUsage {
	o := openAIUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
	if u.CachedInputTokens > 0 {
		o.PromptTokensDetails = &openAITokenDetails{CachedTokens: u.CachedInputTokens}
	}
	return o
}

// openAITokenDetails is usage.prompt_tokens_details.
type openAITokenDetails struct {
	CachedTokens int `json:"cached_tokens"`
	AudioTokens  int `json:"audio_tokens"`
}
