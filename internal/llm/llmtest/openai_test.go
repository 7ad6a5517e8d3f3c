package llmtest_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
)

const openAIKey = "sk-test-0123456789abcdef"

func openAIAuth() map[string]string { return map[string]string{"Authorization": "Bearer " + openAIKey} }

var echoToolOpenAI = map[string]any{"type": "function", "function": map[string]any{
	"name": "test_echo", "description": "Echo tool",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"msg": map[string]any{"type": "string"}}},
}}

func openAIBody(msgs ...map[string]any) map[string]any {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = m
	}
	return map[string]any{"model": "gpt-4o", "messages": list, "tools": []any{echoToolOpenAI}}
}

func TestOpenAIRecordedResponsesValidate(t *testing.T) {
	// The validator itself: the recorded real bodies pass, a broken one fails.
	for _, f := range []string{"openai_chat_tool_calls.json", "openai_chat_final.json"} {
		if err := llmtest.ValidateOpenAI("CreateChatCompletionResponse", recorded(t, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if err := llmtest.ValidateOpenAI("CreateChatCompletionResponse", []byte(`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"done","logprobs":null}]}`)); err == nil {
		t.Error("a response without refusal and with finish_reason done validated")
	}
}

func TestOpenAIToolCallRoundTrip(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI, llmtest.WithAPIKey(openAIKey), llmtest.WithModel("gpt-4o"))
	if !strings.HasSuffix(s.URL, "/v1") || s.URL != s.Origin+"/v1" {
		t.Fatalf("base URL %q (origin %q)", s.URL, s.Origin)
	}
	s.Script(
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "test_echo", Arguments: map[string]any{"msg": "hi"}}}, Usage: &llmtest.Usage{InputTokens: 149, OutputTokens: 60}},
		llmtest.Turn{Text: "Final answer after tool call"},
	)
	url := s.URL + "/chat/completions"

	user := map[string]any{"role": "user", "content": "Use the echo tool"}
	first := post(t, url, openAIAuth(), openAIBody(map[string]any{"role": "system", "content": "Be brief."}, user))
	if first.status != http.StatusOK {
		t.Fatalf("first turn: %d %s", first.status, first.raw)
	}
	if err := llmtest.ValidateOpenAI("CreateChatCompletionResponse", first.raw); err != nil {
		t.Errorf("tool-call response is not a CreateChatCompletionResponse: %v", err)
	}
	shapeDiff(t, "tool calls", recordedJSON(t, "openai_chat_tool_calls.json"), first.body)
	choice := first.body["choices"].([]any)[0].(map[string]any)
	if choice["finish_reason"] != "tool_calls" {
		t.Errorf("finish_reason %v", choice["finish_reason"])
	}
	msg := choice["message"].(map[string]any)
	if msg["content"] != nil {
		t.Errorf("content %v, want null with tool calls", msg["content"])
	}
	call := msg["tool_calls"].([]any)[0].(map[string]any)
	id := call["id"].(string)
	if !regexp.MustCompile(`^call_[A-Za-z0-9]{24}$`).MatchString(id) {
		t.Errorf("tool call id %q", id)
	}
	if !regexp.MustCompile(`^chatcmpl-[A-Za-z0-9]{29}$`).MatchString(first.body["id"].(string)) {
		t.Errorf("completion id %q", first.body["id"])
	}
	fn := call["function"].(map[string]any)
	if fn["name"] != "test_echo" || fn["arguments"] != `{"msg":"hi"}` {
		t.Errorf("function %v", fn)
	}
	if u := first.body["usage"].(map[string]any); u["prompt_tokens"] != 149.0 || u["completion_tokens"] != 60.0 || u["total_tokens"] != 209.0 {
		t.Errorf("usage %v", u)
	}

	// The loop sends the assistant message back with the tool's result.
	second := post(t, url, openAIAuth(), openAIBody(user,
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call}},
		map[string]any{"role": "tool", "tool_call_id": id, "content": `{"msg":"hi"}`},
	))
	if second.status != http.StatusOK {
		t.Fatalf("second turn: %d %s", second.status, second.raw)
	}
	if err := llmtest.ValidateOpenAI("CreateChatCompletionResponse", second.raw); err != nil {
		t.Errorf("final response: %v", err)
	}
	shapeDiff(t, "final", recordedJSON(t, "openai_chat_final.json"), second.body)
	final := second.body["choices"].([]any)[0].(map[string]any)
	if final["finish_reason"] != "stop" || final["message"].(map[string]any)["content"] != "Final answer after tool call" {
		t.Errorf("final choice %v", final)
	}
	// Exhausted script: "done".
	third := post(t, url, openAIAuth(), openAIBody(user))
	if got := third.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; got != llmtest.DoneText {
		t.Errorf("after the script: %v", got)
	}
	if r := s.Rejections(); len(r) != 0 {
		t.Errorf("rejections: %v", r)
	}
	reqs := s.Requests()
	if len(reqs) != 3 || reqs[0].Path != "/v1/chat/completions" || reqs[0].Method != http.MethodPost || reqs[0].Body["model"] != "gpt-4o" {
		t.Errorf("recorded %+v", reqs)
	}
	if reqs[1].Header.Get("Authorization") != "Bearer "+openAIKey || len(reqs[1].Raw) == 0 {
		t.Errorf("recorded header/raw: %v", reqs[1].Header)
	}
}

func TestOpenAIAcceptsWhatTheAPIAccepts(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	url := s.URL + "/chat/completions"
	for name, body := range map[string]map[string]any{
		"nulls where the API takes null": {"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": "hi"}},
			"max_completion_tokens": nil, "temperature": nil, "stream": nil, "tools": []any{echoToolOpenAI}, "tool_choice": "auto"},
		"content parts and developer role": {"model": "gpt-4o", "messages": []any{
			map[string]any{"role": "developer", "content": "be brief"},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}}},
		"parallel calls answered in any order": {"model": "gpt-4o", "messages": []any{
			map[string]any{"role": "user", "content": "two"},
			map[string]any{"role": "assistant", "tool_calls": []any{
				map[string]any{"id": "call_a", "type": "function", "function": map[string]any{"name": "test_echo", "arguments": "{}"}},
				map[string]any{"id": "call_b", "type": "function", "function": map[string]any{"name": "test_echo", "arguments": `{"msg":"x"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_b", "content": "b"},
			map[string]any{"role": "tool", "tool_call_id": "call_a", "content": "a"},
			map[string]any{"role": "user", "content": "more"}}, "tools": []any{echoToolOpenAI}},
		"no key configured, none sent": {"model": "anything", "messages": []any{map[string]any{"role": "user", "content": "hi"}}},
	} {
		if r := post(t, url, nil, body); r.status != http.StatusOK {
			t.Errorf("%s: %d %s", name, r.status, r.raw)
		}
	}
	if r := s.Rejections(); len(r) != 0 {
		t.Errorf("rejections: %v", r)
	}
}

func TestOpenAIRejections(t *testing.T) {
	user := map[string]any{"role": "user", "content": "hi"}
	call := func(id, args string) map[string]any {
		return map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "test_echo", "arguments": args}}
	}
	assistant := func(calls ...map[string]any) map[string]any {
		list := make([]any, len(calls))
		for i, c := range calls {
			list[i] = c
		}
		return map[string]any{"role": "assistant", "content": nil, "tool_calls": list}
	}
	tool := func(id string) map[string]any {
		return map[string]any{"role": "tool", "tool_call_id": id, "content": "ok"}
	}
	null := "<null>"
	cases := []struct {
		name    string
		header  map[string]string
		path    string
		body    any
		status  int
		message string // exact, or a prefix when it ends in "…"
		param   string // "<null>" for null
		code    string
	}{
		{name: "no API key", header: map[string]string{"Authorization": ""}, body: openAIBody(user), status: 401,
			message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.",
			param:   null, code: null},
		{name: "wrong API key", header: map[string]string{"Authorization": "Bearer sk-wrong-key-123456"}, body: openAIBody(user), status: 401,
			message: "Incorrect API key provided: sk-************3456. You can find your API key at https://platform.openai.com/account/api-keys.", param: null, code: "invalid_api_key"},
		{name: "wrong path", path: "/v1/chat/completion", body: openAIBody(user), status: 404, message: "Invalid URL (POST /v1/chat/completion)", param: null, code: null},
		{name: "not JSON", body: []byte(`{"model":`), status: 400, message: "We could not parse the JSON body of your request. …", param: null, code: null},
		{name: "unknown argument", body: map[string]any{"model": "gpt-4o", "messages": []any{user}, "max_output_tokens": 5}, status: 400,
			message: "Unrecognized request argument supplied: max_output_tokens", param: null, code: null},
		{name: "no messages", body: map[string]any{"model": "gpt-4o"}, status: 400,
			message: "Missing required parameter: 'messages'.", param: "messages", code: "missing_required_parameter"},
		{name: "empty messages", body: map[string]any{"model": "gpt-4o", "messages": []any{}}, status: 400,
			message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", param: "messages", code: "empty_array"},
		{name: "message without content", body: openAIBody(map[string]any{"role": "user"}), status: 400,
			message: "Missing required parameter: 'messages[0].content'.", param: "messages[0].content", code: "missing_required_parameter"},
		{name: "message without role", body: openAIBody(map[string]any{"content": "hi"}), status: 400,
			message: "Missing required parameter: 'messages[0].role'.", param: "messages[0].role", code: "missing_required_parameter"},
		{name: "unknown role", body: openAIBody(map[string]any{"role": "model", "content": "hi"}), status: 400,
			message: "Invalid value: 'model'. Supported values are: 'assistant', 'developer', 'function', 'system', 'tool', and 'user'.", param: "messages[0].role", code: "invalid_value"},
		{name: "content of the wrong type", body: openAIBody(map[string]any{"role": "user", "content": 5}), status: 400,
			message: "Invalid type for 'messages[0].content': expected one of a string or an array, but got an integer instead.", param: "messages[0].content", code: "invalid_type"},
		{name: "temperature out of range", body: map[string]any{"model": "gpt-4o", "messages": []any{user}, "temperature": 3}, status: 400,
			message: "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead.", param: "temperature", code: "decimal_above_max_value"},
		{name: "tool name with a slash", body: map[string]any{"model": "gpt-4o", "messages": []any{user}, "tools": []any{
			map[string]any{"type": "function", "function": map[string]any{"name": "test/echo"}}}}, status: 400,
			message: "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", param: "tools[0].function.name", code: "invalid_value"},
		{name: "tool name with a dot", body: map[string]any{"model": "gpt-4o", "messages": []any{user}, "tools": []any{echoToolOpenAI,
			map[string]any{"type": "function", "function": map[string]any{"name": "files.read"}}}}, status: 400,
			message: "Invalid 'tools[1].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", param: "tools[1].function.name", code: "invalid_value"},
		{name: "tool name of 65 characters", body: map[string]any{"model": "gpt-4o", "messages": []any{user}, "tools": []any{
			map[string]any{"type": "function", "function": map[string]any{"name": strings.Repeat("a", 65)}}}}, status: 400,
			message: "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64, but got a string with length 65 instead.", param: "tools[0].function.name", code: "string_above_max_length"},
		{name: "empty tools", body: map[string]any{"model": "gpt-4o", "messages": []any{user}, "tools": []any{}}, status: 400,
			message: "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.", param: "tools", code: "empty_array"},
		{name: "tool_choice without tools", body: map[string]any{"model": "gpt-4o", "messages": []any{user}, "tool_choice": "auto"}, status: 400,
			message: "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", param: "tool_choice", code: null},
		{name: "parallel_tool_calls without tools", body: map[string]any{"model": "gpt-4o", "messages": []any{user}, "parallel_tool_calls": false}, status: 400,
			message: "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.", param: "parallel_tool_calls", code: null},
		{name: "tool without type", body: map[string]any{"model": "gpt-4o", "messages": []any{user}, "tools": []any{
			map[string]any{"function": map[string]any{"name": "x"}}}}, status: 400,
			message: "Missing required parameter: 'tools[0].type'.", param: "tools[0].type", code: "missing_required_parameter"},
		{name: "arguments as an object", body: openAIBody(user, map[string]any{"role": "assistant", "tool_calls": []any{
			map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "test_echo", "arguments": map[string]any{"msg": "hi"}}}}}, tool("call_1")), status: 400,
			message: "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, but got an object instead.", param: "messages[1].tool_calls[0].function.arguments", code: "invalid_type"},
		{name: "arguments not JSON", body: openAIBody(user, assistant(call("call_1", `{"msg": `)), tool("call_1")), status: 400,
			message: `Invalid 'messages[1].tool_calls[0].function.arguments': expected a string containing valid JSON, but got "{\"msg\": " instead.`, param: "messages[1].tool_calls[0].function.arguments", code: "invalid_value"},
		{name: "stream index left in a tool call", body: openAIBody(user, assistant(map[string]any{"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": "test_echo", "arguments": "{}"}}), tool("call_1")), status: 400,
			message: "Unknown parameter: 'messages[1].tool_calls[0].index'.", param: "messages[1].tool_calls[0].index", code: "unknown_parameter"},
		{name: "tool call without id", body: openAIBody(user, assistant(map[string]any{"type": "function", "function": map[string]any{"name": "test_echo", "arguments": "{}"}})), status: 400,
			message: "Missing required parameter: 'messages[1].tool_calls[0].id'.", param: "messages[1].tool_calls[0].id", code: "missing_required_parameter"},
		{name: "tool call not answered", body: openAIBody(user, assistant(call("call_x", "{}")), map[string]any{"role": "user", "content": "again"}), status: 400,
			message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_x", param: "messages.[1].role", code: null},
		{name: "one of two calls answered", body: openAIBody(user, assistant(call("call_a", "{}"), call("call_b", "{}")), tool("call_a")), status: 400,
			message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_b", param: "messages.[1].role", code: null},
		{name: "empty tool_calls on an assistant message", body: openAIBody(user, map[string]any{"role": "assistant", "content": "hello", "tool_calls": []any{}}, user), status: 400,
			message: "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.", param: "messages[1].tool_calls", code: "empty_array"},
		{name: "assistant message with null content and no calls", body: openAIBody(user, map[string]any{"role": "assistant", "content": nil}, user), status: 400,
			message: "Invalid value for 'content': expected a string, got null.", param: "messages.[1].content", code: null},
		{name: "tool message without a tool call", body: openAIBody(user, tool("call_x")), status: 400,
			message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", param: "messages.[1].role", code: null},
		{name: "tool message after a user message", body: openAIBody(user, assistant(call("call_a", "{}")), tool("call_a"), user, tool("call_a")), status: 400,
			message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", param: "messages.[4].role", code: null},
		{name: "tool message answering another id", body: openAIBody(user, assistant(call("call_a", "{}")), tool("call_zzz")), status: 400,
			message: "Invalid parameter: 'tool_call_id' of 'call_zzz' not found in 'tool_calls' of previous message.", param: "messages.[2].tool_call_id", code: null},
		{name: "tool message without tool_call_id", body: openAIBody(user, assistant(call("call_a", "{}")), map[string]any{"role": "tool", "content": "ok"}), status: 400,
			message: "Missing required parameter: 'messages[2].tool_call_id'.", param: "messages[2].tool_call_id", code: "missing_required_parameter"},
		{name: "unknown model", body: map[string]any{"model": "gpt-9", "messages": []any{user}}, status: 404,
			message: "The model `gpt-9` does not exist or you do not have access to it.", param: null, code: "model_not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.New(t, llmtest.OpenAI, llmtest.WithAPIKey(openAIKey), llmtest.WithModel("gpt-4o"))
			header := openAIAuth()
			for k, v := range tc.header {
				header[k] = v
			}
			path := tc.path
			if path == "" {
				path = "/v1/chat/completions"
			}
			r := post(t, s.Origin+path, header, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.raw)
			}
			e, ok := r.body["error"].(map[string]any)
			if !ok || len(r.body) != 1 {
				t.Fatalf("body %s is not {\"error\": {…}}", r.raw)
			}
			if got := keysOf(e); strings.Join(got, ",") != "code,message,param,type" {
				t.Errorf("error keys %v", got)
			}
			if e["type"] != "invalid_request_error" {
				t.Errorf("type %v", e["type"])
			}
			msg, _ := e["message"].(string)
			if prefix, ok := strings.CutSuffix(tc.message, "…"); ok {
				if !strings.HasPrefix(msg, prefix) {
					t.Errorf("message %q, want prefix %q", msg, prefix)
				}
			} else if msg != tc.message {
				t.Errorf("message\n got %q\nwant %q", msg, tc.message)
			}
			checkNullable := func(field, want string) {
				got, present := e[field]
				if !present {
					t.Errorf("%s missing", field)
					return
				}
				if want == null {
					if got != nil {
						t.Errorf("%s = %v, want null", field, got)
					}
				} else if got != want {
					t.Errorf("%s = %v, want %q", field, got, want)
				}
			}
			checkNullable("param", tc.param)
			checkNullable("code", tc.code)
			if rej := s.Rejections(); len(rej) != 1 || !strings.Contains(rej[0], msg) {
				t.Errorf("rejections %q", rej)
			}
		})
	}
}

func TestOpenAIScriptedFailures(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Script(
		llmtest.Turn{Status: 429, RetryAfter: "2"},
		llmtest.Turn{Status: 500},
		llmtest.Turn{Status: 400, ErrorMessage: "context_length_exceeded"},
		llmtest.Turn{Text: "recovered"},
	)
	url := s.URL + "/chat/completions"
	body := openAIBody(map[string]any{"role": "user", "content": "hi"})
	r := post(t, url, nil, body)
	if r.status != 429 || r.header.Get("Retry-After") != "2" {
		t.Errorf("429: %d %v", r.status, r.header)
	}
	e := r.body["error"].(map[string]any)
	if e["type"] != "requests" || e["code"] != "rate_limit_exceeded" || !strings.HasPrefix(e["message"].(string), "Rate limit reached") {
		t.Errorf("429 body %s", r.raw)
	}
	r = post(t, url, nil, body)
	if r.status != 500 || r.body["error"].(map[string]any)["type"] != "server_error" {
		t.Errorf("500: %d %s", r.status, r.raw)
	}
	r = post(t, url, nil, body)
	if r.status != 400 || errorMessage(r) != "context_length_exceeded" {
		t.Errorf("400: %d %s", r.status, r.raw)
	}
	r = post(t, url, nil, body)
	if r.status != 200 {
		t.Errorf("after failures: %d %s", r.status, r.raw)
	}
	if rej := s.Rejections(); len(rej) != 0 {
		t.Errorf("scripted failures counted as rejections: %v", rej)
	}
}

func TestOpenAIAlwaysAndTurnFunc(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Always(llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "test_echo", Arguments: map[string]any{"msg": "again"}}}})
	url := s.URL + "/chat/completions"
	ids := map[string]bool{}
	for range 3 {
		r := post(t, url, nil, openAIBody(map[string]any{"role": "user", "content": "loop"}))
		id := r.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["id"].(string)
		ids[id] = true
	}
	if len(ids) != 3 {
		t.Errorf("Always reused tool call ids: %v", ids)
	}

	// A TurnFunc echoing the last tool result; a zero Turn defers to the script.
	echo := llmtest.New(t, llmtest.OpenAI, llmtest.WithTurnFunc(func(req llmtest.Recorded) llmtest.Turn {
		msgs := req.Body["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)
		if last["role"] == "tool" {
			return llmtest.Turn{Text: "tool said " + last["content"].(string)}
		}
		return llmtest.Turn{}
	}))
	echo.Script(llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "call_fixed", Name: "test_echo"}}})
	u := echo.URL + "/chat/completions"
	r := post(t, u, nil, openAIBody(map[string]any{"role": "user", "content": "go"}))
	c := r.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if c["id"] != "call_fixed" || c["function"].(map[string]any)["arguments"] != "{}" {
		t.Errorf("scripted call %v", c)
	}
	r = post(t, u, nil, openAIBody(map[string]any{"role": "user", "content": "go"},
		map[string]any{"role": "assistant", "tool_calls": []any{c}},
		map[string]any{"role": "tool", "tool_call_id": "call_fixed", "content": "pong"}))
	if got := r.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; got != "tool said pong" {
		t.Errorf("echo %v", got)
	}
}

func TestOpenAITextToolCall(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Script(llmtest.Turn{TextToolCall: true, ToolCalls: []llmtest.Call{{Name: "test_echo", Arguments: map[string]any{"msg": "hi"}}}})
	r := post(t, s.URL+"/chat/completions", nil, openAIBody(map[string]any{"role": "user", "content": "hi"}))
	if err := llmtest.ValidateOpenAI("CreateChatCompletionResponse", r.raw); err != nil {
		t.Error(err)
	}
	choice := r.body["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	if choice["finish_reason"] != "stop" || msg["tool_calls"] != nil {
		t.Errorf("choice %v", choice)
	}
	var call struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(msg["content"].(string)), &call); err != nil || call.Name != "test_echo" || call.Arguments["msg"] != "hi" {
		t.Errorf("content %q: %v", msg["content"], err)
	}
}

func TestOpenAIStream(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	s.Script(
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "GetWeatherArgs", Arguments: map[string]any{"city": "Edinburgh"}}, {Name: "get_stock_price", Arguments: map[string]any{"ticker": "AAPL"}}}},
		llmtest.Turn{Text: "It is sunny in Edinburgh."},
	)
	body := openAIBody(map[string]any{"role": "user", "content": "hi"})
	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	r := post(t, s.URL+"/chat/completions", nil, body)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %v", r.status, r.header)
	}
	got := sseEvents(t, r.raw)
	want := sseEvents(t, recorded(t, "openai_chat_tool_calls_stream.txt"))
	if got[len(got)-1].data != "[DONE]" {
		t.Errorf("last event %q", got[len(got)-1].data)
	}
	// Same chunk kinds, in the same order, as the recorded stream: role,
	// call 0 start, its argument pieces, call 1 start, pieces, finish, usage.
	kinds := func(evs []sseEvent) []string {
		var out []string
		for _, ev := range evs {
			if ev.data == "[DONE]" {
				out = append(out, "done")
				continue
			}
			var c map[string]any
			if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
				t.Fatal(err)
			}
			choices := c["choices"].([]any)
			if len(choices) == 0 {
				out = append(out, "usage")
				continue
			}
			ch := choices[0].(map[string]any)
			d := ch["delta"].(map[string]any)
			switch {
			case ch["finish_reason"] != nil:
				out = append(out, "finish:"+ch["finish_reason"].(string))
			case d["role"] != nil:
				out = append(out, "role")
			case d["tool_calls"] != nil:
				tc := d["tool_calls"].([]any)[0].(map[string]any)
				if tc["id"] != nil {
					out = append(out, "start")
				} else if len(out) == 0 || out[len(out)-1] != "args" {
					out = append(out, "args")
				}
			default:
				out = append(out, "content")
			}
		}
		return out
	}
	if g, w := strings.Join(kinds(got), " "), strings.Join(kinds(want), " "); g != w {
		t.Errorf("chunk sequence\n got %s\nwant %s", g, w)
	}
	shapeDiff(t, "second chunk", mustJSON(t, want[1].data), mustJSON(t, got[1].data))
	shapeDiff(t, "usage chunk", mustJSON(t, want[len(want)-2].data), mustJSON(t, got[len(got)-2].data))
	// The arguments reassemble.
	args := map[int]string{}
	for _, ev := range got[:len(got)-1] {
		c := mustJSON(t, ev.data)
		for _, ch := range c["choices"].([]any) {
			if tcs, ok := ch.(map[string]any)["delta"].(map[string]any)["tool_calls"].([]any); ok {
				tc := tcs[0].(map[string]any)
				args[int(tc["index"].(float64))] += tc["function"].(map[string]any)["arguments"].(string)
			}
		}
	}
	if args[0] != `{"city":"Edinburgh"}` || args[1] != `{"ticker":"AAPL"}` {
		t.Errorf("arguments %v", args)
	}

	// A text stream reassembles to the text.
	body["stream_options"] = nil
	r = post(t, s.URL+"/chat/completions", nil, body)
	var text strings.Builder
	for _, ev := range sseEvents(t, r.raw) {
		if ev.data == "[DONE]" {
			continue
		}
		c := mustJSON(t, ev.data)
		if c["usage"] != nil {
			t.Error("usage chunk without include_usage")
		}
		for _, ch := range c["choices"].([]any) {
			if s, ok := ch.(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
				text.WriteString(s)
			}
		}
	}
	if text.String() != "It is sunny in Edinburgh." {
		t.Errorf("streamed text %q", text.String())
	}
}

func mustJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return m
}
