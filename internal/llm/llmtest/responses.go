package llmtest

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The OpenAI Responses fake (POST /v1/responses). A request is checked
// against CreateResponse of OpenAI's own OpenAPI spec
// (testdata/openai-subset.schema.json, components.schemas taken from
// openai/openai-openapi), then as the API checks what the schema cannot
// say:
//   - a model is named (or a stored prompt);
//   - tool names match ^[a-zA-Z0-9_-]+$, at most 64 characters;
//   - with store: false nothing is persisted, so an input item naming an
//     id ("fc_…", "msg_…", or a reasoning item without encrypted_content)
//     is "not found";
//   - every function_call is answered by a function_call_output with its
//     call_id, and every output answers a call;
//   - the reasoning item that came with a function call (the fake is a
//     reasoning model: each tool-calling turn starts with one, with
//     encrypted_content when asked for) is carried back before that call,
//     with the encrypted_content it had: the documented way to keep
//     reasoning across turns without stored state.

const responsesPath = "/v1/responses"

func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request, rec Recorded) {
	if r.URL.Path != responsesPath || r.Method != http.MethodPost {
		status := http.StatusNotFound
		if r.URL.Path == responsesPath {
			status = http.StatusMethodNotAllowed
		}
		s.openAIReject(w, status, openAIErr{Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), Type: "invalid_request_error"})
		return
	}
	if key := s.cfg.apiKey; key != "" {
		got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if strings.TrimSpace(got) != key {
			s.openAIReject(w, http.StatusUnauthorized, openAIErr{Type: "invalid_request_error", Code: strp("invalid_api_key"),
				Message: fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", maskKey(got))})
			return
		}
	}
	if rec.Body == nil {
		s.openAIReject(w, http.StatusBadRequest, openAIErr{Type: "invalid_request_error",
			Message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"})
		return
	}
	if e, bad := s.responsesCheckRequest(rec.Raw, rec.Body); bad {
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
	encrypted := false
	inc, _ := rec.Body["include"].([]any)
	for _, v := range inc {
		encrypted = encrypted || v == "reasoning.encrypted_content"
	}
	w.Header().Set("x-request-id", "req_"+randFrom(hexDigits, 32))
	writeJSON(w, http.StatusOK, s.responsesResponse(model, turn, encrypted, rec.Body["store"] != false))
}

// responsesCheckRequest applies the checks listed above; bad is true with
// the error the API would answer.
func (s *Server) responsesCheckRequest(raw []byte, body map[string]any) (openAIErr, bool) {
	fail := func(param, code, format string, args ...any) (openAIErr, bool) {
		e := openAIErr{Message: fmt.Sprintf(format, args...), Type: "invalid_request_error"}
		if param != "" {
			e.Param = strp(param)
		}
		if code != "" {
			e.Code = strp(code)
		}
		return e, true
	}
	known, err := openAIRequestParams("CreateResponse")
	if err != nil {
		return fail("", "", "llmtest: %v", err)
	}
	var unknown []string
	for k := range body {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fail(unknown[0], "unknown_parameter", "Unknown parameter: '%s'.", unknown[0])
	}
	sch, err := openAISchema("CreateResponse")
	if err != nil {
		return fail("", "", "llmtest: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fail("", "", "We could not parse the JSON body of your request.")
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return openAIValidationError(ve, inst), true
		}
		return fail("", "", "llmtest: %v", err)
	}
	// The spec leaves model optional (a stored prompt may name one); the
	// API wants one or the other.
	if _, ok := body["model"]; !ok && body["prompt"] == nil {
		return fail("model", "missing_required_parameter", "Missing required parameter: 'model'.")
	}
	tools, _ := body["tools"].([]any)
	for i, t := range tools {
		tm, _ := t.(map[string]any)
		name, _ := tm["name"].(string)
		param := fmt.Sprintf("tools[%d].name", i)
		if !openAIToolName.MatchString(name) {
			return fail(param, "invalid_value", "Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", param)
		}
		if len(name) > 64 {
			return fail(param, "string_above_max_length", "Invalid '%s': string too long. Expected a string with maximum length 64, but got a string with length %d instead.", param, len(name))
		}
	}
	input, _ := body["input"].([]any)
	store := body["store"] != false
	calls := map[string]int{}     // call_id → input index of its function_call
	answered := map[string]bool{} // call_ids with a function_call_output
	reasoning := map[string]string{}
	for i, it := range input {
		im, _ := it.(map[string]any)
		typ, _ := im["type"].(string)
		id, hasID := im["id"].(string)
		if !store && hasID && id != "" && (typ != "reasoning" || im["encrypted_content"] == nil) {
			return fail("input", "", "Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", id)
		}
		switch typ {
		case "reasoning":
			enc, _ := im["encrypted_content"].(string)
			reasoning[id] = enc
		case "function_call":
			cid, _ := im["call_id"].(string)
			if _, dup := calls[cid]; dup {
				return fail(fmt.Sprintf("input[%d].call_id", i), "", "Duplicate function call with call_id %s.", cid)
			}
			calls[cid] = i
			if want, ok := s.responsesReasoningFor(cid); ok {
				if enc, present := reasoning[want.id]; present && enc == want.encrypted {
					break
				}
				return fail("input", "", "Function call %s was provided without the reasoning item %s that preceded it (with its encrypted_content): reasoning items must be passed back with the calls they came with.", cid, want.id)
			}
		case "function_call_output":
			cid, _ := im["call_id"].(string)
			if _, ok := calls[cid]; !ok {
				return fail("input", "", "No tool call found for function call output with call_id %s.", cid)
			}
			answered[cid] = true
		}
	}
	for cid := range calls {
		if !answered[cid] {
			return fail("input", "", "No tool output found for function call %s.", cid)
		}
	}
	return openAIErr{}, false
}

// issuedReasoning is a reasoning item the fake sent before a function call.
type issuedReasoning struct{ id, encrypted string }

func (s *Server) responsesReasoningFor(callID string) (issuedReasoning, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.reasoning[callID]
	return r, ok
}

// responsesResponse is a Response object, field for field as the API
// documents it (components.schemas.Response).
func (s *Server) responsesResponse(model string, t Turn, encrypted, store bool) map[string]any {
	u := usageOf(t)
	var output []any
	if len(t.ToolCalls) > 0 {
		ri := issuedReasoning{id: "rs_" + randFrom(hexDigits, 48)}
		var enc any
		if encrypted {
			ri.encrypted = "gAAAAA" + randFrom(alnum, 64)
			enc = ri.encrypted
		}
		output = append(output, map[string]any{"id": ri.id, "type": "reasoning", "summary": []any{}, "encrypted_content": enc})
		if t.Text != "" {
			output = append(output, responsesMessage(t.Text))
		}
		s.mu.Lock()
		if s.reasoning == nil {
			s.reasoning = map[string]issuedReasoning{}
		}
		for _, c := range t.ToolCalls {
			id := c.ID
			if id == "" {
				id = openAICallID()
			}
			if encrypted || store {
				s.reasoning[id] = ri
			}
			output = append(output, map[string]any{"id": "fc_" + randFrom(hexDigits, 48), "type": "function_call", "status": "completed",
				"arguments": argsJSON(c.Arguments), "call_id": id, "name": c.Name})
		}
		s.mu.Unlock()
	} else {
		output = append(output, responsesMessage(t.Text))
	}
	return map[string]any{
		"id": "resp_" + randFrom(hexDigits, 48), "object": "response", "created_at": s.cfg.now().Unix(),
		"status": "completed", "background": false, "error": nil, "incomplete_details": nil,
		"instructions": nil, "max_output_tokens": nil, "model": model, "output": output,
		"parallel_tool_calls": true, "previous_response_id": nil,
		"reasoning": map[string]any{"effort": "medium", "summary": nil}, "store": store,
		"temperature": 1.0, "text": map[string]any{"format": map[string]any{"type": "text"}, "verbosity": "medium"},
		"tool_choice": "auto", "tools": []any{}, "top_p": 1.0, "truncation": "disabled",
		"usage": map[string]any{"input_tokens": u.InputTokens, "input_tokens_details": map[string]any{"cached_tokens": u.CachedInputTokens},
			"output_tokens": u.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": u.InputTokens + u.OutputTokens},
		"user": nil, "metadata": map[string]any{},
	}
}

func responsesMessage(text string) map[string]any {
	return map[string]any{"id": "msg_" + randFrom(hexDigits, 48), "type": "message", "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": text}}}
}
