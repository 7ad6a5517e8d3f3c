package llmtest_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
)

const anthropicKey = "sk-ant-test"

func anthropicHeaders() map[string]string {
	return map[string]string{"x-api-key": anthropicKey, "anthropic-version": "2023-06-01"}
}

var echoToolAnthropic = map[string]any{"name": "test_echo", "description": "Echo tool",
	"input_schema": map[string]any{"type": "object", "properties": map[string]any{"msg": map[string]any{"type": "string"}}}}

func anthropicBody(msgs ...map[string]any) map[string]any {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = m
	}
	return map[string]any{"model": "claude-haiku-4-5-20251001", "max_tokens": 1024, "system": "Be brief.",
		"messages": list, "tools": []any{echoToolAnthropic}}
}

func TestAnthropicToolUseRoundTrip(t *testing.T) {
	s := llmtest.New(t, llmtest.Anthropic, llmtest.WithAPIKey(anthropicKey), llmtest.WithModel("claude-haiku-4-5-20251001"))
	if s.URL != s.Origin {
		t.Fatalf("base URL %q, want the origin %q", s.URL, s.Origin)
	}
	s.Script(
		llmtest.Turn{Text: "I'll echo that.", ToolCalls: []llmtest.Call{{Name: "test_echo", Arguments: map[string]any{"msg": "hi"}}}},
		llmtest.Turn{Text: "Final answer after tool call", Usage: &llmtest.Usage{InputTokens: 770, OutputTokens: 25}},
	)
	url := s.URL + "/v1/messages"
	user := map[string]any{"role": "user", "content": "Use the echo tool"}
	first := post(t, url, anthropicHeaders(), anthropicBody(user))
	if first.status != http.StatusOK {
		t.Fatalf("%d %s", first.status, first.raw)
	}
	shapeDiff(t, "tool_use", recordedJSON(t, "anthropic_tool_use.json"), first.body)
	if first.body["stop_reason"] != "tool_use" || first.body["stop_sequence"] != nil || first.body["type"] != "message" || first.body["role"] != "assistant" {
		t.Errorf("message %s", first.raw)
	}
	if !regexp.MustCompile(`^msg_01[A-Za-z0-9]{22}$`).MatchString(first.body["id"].(string)) {
		t.Errorf("id %v", first.body["id"])
	}
	if first.header.Get("request-id") == "" {
		t.Error("no request-id header")
	}
	content := first.body["content"].([]any)
	shapeDiff(t, "tool_use block", recordedJSON(t, "anthropic_tool_use.json")["content"].([]any)[1], content[1])
	use := content[1].(map[string]any)
	id := use["id"].(string)
	if !regexp.MustCompile(`^toolu_01[A-Za-z0-9]{22}$`).MatchString(id) || use["name"] != "test_echo" || use["input"].(map[string]any)["msg"] != "hi" {
		t.Errorf("tool_use %v", use)
	}

	assistant := map[string]any{"role": "assistant", "content": content}
	result := map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": `{"msg":"hi"}`}}}
	second := post(t, url, anthropicHeaders(), anthropicBody(user, assistant, result))
	if second.status != http.StatusOK {
		t.Fatalf("%d %s", second.status, second.raw)
	}
	shapeDiff(t, "end_turn", recordedJSON(t, "anthropic_final.json"), second.body)
	if second.body["stop_reason"] != "end_turn" || second.body["content"].([]any)[0].(map[string]any)["text"] != "Final answer after tool call" {
		t.Errorf("final %s", second.raw)
	}
	if u := second.body["usage"].(map[string]any); u["input_tokens"] != 770.0 || u["output_tokens"] != 25.0 {
		t.Errorf("usage %v", u)
	}
	if r := s.Rejections(); len(r) != 0 {
		t.Errorf("rejections %v", r)
	}
}

func TestAnthropicAcceptsWhatTheAPIAccepts(t *testing.T) {
	s := llmtest.New(t, llmtest.Anthropic)
	url := s.URL + "/v1/messages"
	toolUse := map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "tool_use", "id": "toolu_a", "name": "test_echo", "input": map[string]any{}},
		map[string]any{"type": "tool_use", "id": "toolu_b", "name": "test_echo", "input": map[string]any{"msg": "x"}}}}
	for name, body := range map[string]map[string]any{
		"consecutive user messages": anthropicBody(map[string]any{"role": "user", "content": "one"}, map[string]any{"role": "user", "content": "two"}),
		"results in any order, then text, with is_error": anthropicBody(map[string]any{"role": "user", "content": "go"}, toolUse,
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_b", "content": "b", "is_error": true},
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_a", "content": []any{map[string]any{"type": "text", "text": "a"}}},
				map[string]any{"type": "text", "text": "continue"}}}),
		"prefilled final assistant message": anthropicBody(map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "The answer is"}),
		"system as blocks, stream false": {"model": "m", "max_tokens": 5, "stream": false, "system": []any{map[string]any{"type": "text", "text": "sys"}},
			"messages": []any{map[string]any{"role": "user", "content": "hi"}}},
		"no key configured, none sent": {"model": "m", "max_tokens": 5, "messages": []any{map[string]any{"role": "user", "content": "hi"}}},
	} {
		h := anthropicHeaders()
		h["x-api-key"] = ""
		if r := post(t, url, h, body); r.status != http.StatusOK {
			t.Errorf("%s: %d %s", name, r.status, r.raw)
		}
	}
	if r := s.Rejections(); len(r) != 0 {
		t.Errorf("rejections %v", r)
	}
}

func TestAnthropicRejections(t *testing.T) {
	user := map[string]any{"role": "user", "content": "hi"}
	toolUse := func(ids ...string) map[string]any {
		var blocks []any
		for _, id := range ids {
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": "test_echo", "input": map[string]any{"msg": "hi"}})
		}
		return map[string]any{"role": "assistant", "content": blocks}
	}
	results := func(blocks ...map[string]any) map[string]any {
		list := make([]any, len(blocks))
		for i, b := range blocks {
			list[i] = b
		}
		return map[string]any{"role": "user", "content": list}
	}
	result := func(id string) map[string]any {
		return map[string]any{"type": "tool_result", "tool_use_id": id, "content": "ok"}
	}
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	without := func(m map[string]any, key string) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			if k != key {
				out[k] = v
			}
		}
		return out
	}
	with := func(m map[string]any, key string, v any) map[string]any {
		out := without(m, key)
		out[key] = v
		return out
	}
	cases := []struct {
		name    string
		header  map[string]string
		path    string
		body    any
		status  int
		typ     string
		message string
	}{
		{"no API key", map[string]string{"x-api-key": ""}, "", anthropicBody(user), 401, "authentication_error", "x-api-key header is required"},
		{"wrong API key", map[string]string{"x-api-key": "sk-ant-other"}, "", anthropicBody(user), 401, "authentication_error", "invalid x-api-key"},
		{"bearer instead of x-api-key", map[string]string{"x-api-key": "", "Authorization": "Bearer " + anthropicKey}, "", anthropicBody(user), 401, "authentication_error", "x-api-key header is required"},
		{"no anthropic-version", map[string]string{"anthropic-version": ""}, "", anthropicBody(user), 400, "invalid_request_error", "anthropic-version: header is required"},
		{"bad anthropic-version", map[string]string{"anthropic-version": "2024-01-01"}, "", anthropicBody(user), 400, "invalid_request_error", `anthropic-version: "2024-01-01" is not a valid version`},
		{"form content-type", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "", anthropicBody(user), 400, "invalid_request_error", "content-type: must be application/json"},
		{"wrong path", nil, "/v1/chat/completions", anthropicBody(user), 404, "not_found_error", "Not Found"},
		{"not JSON", nil, "", []byte("{"), 400, "invalid_request_error", "There was an error parsing the body of your request. Please make sure it is valid JSON."},
		{"no max_tokens", nil, "", without(anthropicBody(user), "max_tokens"), 400, "invalid_request_error", "max_tokens: Field required"},
		{"no model", nil, "", without(anthropicBody(user), "model"), 400, "invalid_request_error", "model: Field required"},
		{"no messages", nil, "", without(anthropicBody(user), "messages"), 400, "invalid_request_error", "messages: Field required"},
		{"max_tokens 0", nil, "", with(anthropicBody(user), "max_tokens", 0), 400, "invalid_request_error", "max_tokens: Input should be greater than or equal to 1"},
		{"max_tokens as text", nil, "", with(anthropicBody(user), "max_tokens", "1024"), 400, "invalid_request_error", "max_tokens: Input should be a valid integer"},
		{"OpenAI's max_completion_tokens", nil, "", with(anthropicBody(user), "max_completion_tokens", 5), 400, "invalid_request_error", "max_completion_tokens: Extra inputs are not permitted"},
		{"empty messages", nil, "", anthropicBody(), 400, "invalid_request_error", "messages: at least one message is required"},
		{"system message in messages", nil, "", anthropicBody(map[string]any{"role": "system", "content": "sys"}, user), 400, "invalid_request_error",
			"messages: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role."},
		{"tool role", nil, "", anthropicBody(user, map[string]any{"role": "tool", "content": "x"}), 400, "invalid_request_error", `messages: Unexpected role "tool". Allowed roles are "user" or "assistant"`},
		{"first message from the assistant", nil, "", anthropicBody(map[string]any{"role": "assistant", "content": "hello"}, user), 400, "invalid_request_error", `messages: first message must use the "user" role`},
		{"OpenAI tool_calls on a message", nil, "", anthropicBody(user, map[string]any{"role": "assistant", "content": "", "tool_calls": []any{}}), 400, "invalid_request_error", "messages.1.tool_calls: Extra inputs are not permitted"},
		{"empty user content", nil, "", anthropicBody(map[string]any{"role": "user", "content": ""}), 400, "invalid_request_error", "messages.0: all messages must have non-empty content except for the optional final assistant message"},
		{"empty content list", nil, "", anthropicBody(user, map[string]any{"role": "assistant", "content": []any{}}, user), 400, "invalid_request_error", "messages.1: all messages must have non-empty content except for the optional final assistant message"},
		{"whitespace text block", nil, "", anthropicBody(results(text(" \n"))), 400, "invalid_request_error", "messages: text content blocks must contain non-whitespace text"},
		{"empty text block before a tool_use", nil, "", anthropicBody(user, map[string]any{"role": "assistant", "content": []any{text(""),
			map[string]any{"type": "tool_use", "id": "toolu_x", "name": "test_echo", "input": map[string]any{}}}}, results(result("toolu_x"))), 400, "invalid_request_error", "messages: text content blocks must be non-empty"},
		{"tool name with a slash", nil, "", with(anthropicBody(user), "tools", []any{map[string]any{"name": "test/echo", "input_schema": map[string]any{"type": "object"}}}), 400, "invalid_request_error",
			"tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"},
		{"tool name of 65 characters", nil, "", with(anthropicBody(user), "tools", []any{echoToolAnthropic, map[string]any{"name": strings.Repeat("x", 65), "input_schema": map[string]any{"type": "object"}}}), 400, "invalid_request_error",
			"tools.1.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"},
		{"tool without input_schema", nil, "", with(anthropicBody(user), "tools", []any{map[string]any{"name": "test_echo"}}), 400, "invalid_request_error", "tools.0.custom.input_schema: Field required"},
		{"OpenAI-shaped tool", nil, "", with(anthropicBody(user), "tools", []any{map[string]any{"name": "test_echo", "parameters": map[string]any{"type": "object"}}}), 400, "invalid_request_error",
			"tools.0.custom.parameters: Extra inputs are not permitted"},
		{"input_schema not an object schema", nil, "", with(anthropicBody(user), "tools", []any{map[string]any{"name": "test_echo", "input_schema": map[string]any{"type": "string"}}}), 400, "invalid_request_error",
			"tools.0.custom.input_schema.type: Input should be 'object'"},
		{"tool_use not answered", nil, "", anthropicBody(user, toolUse("toolu_01A"), map[string]any{"role": "user", "content": "and?"}), 400, "invalid_request_error",
			"messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"one of two tool_use answered", nil, "", anthropicBody(user, toolUse("toolu_01A", "toolu_01B"), results(result("toolu_01A"))), 400, "invalid_request_error",
			"messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01B. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"tool_use as the last message", nil, "", anthropicBody(user, toolUse("toolu_01A")), 400, "invalid_request_error",
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"results one message too late", nil, "", anthropicBody(user, toolUse("toolu_01A"), user, results(result("toolu_01A"))), 400, "invalid_request_error",
			"messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"text before the tool_result", nil, "", anthropicBody(user, toolUse("toolu_01A"), results(text("here:"), result("toolu_01A"))), 400, "invalid_request_error",
			"messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks."},
		{"tool_result without a tool_use", nil, "", anthropicBody(user, map[string]any{"role": "assistant", "content": "ok"}, results(result("toolu_01Z"))), 400, "invalid_request_error",
			"messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01Z. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"tool_result answering another id", nil, "", anthropicBody(user, toolUse("toolu_01A"), results(result("toolu_01A"), result("toolu_01Q"))), 400, "invalid_request_error",
			"messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01Q. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"tool blocks without tools", nil, "", without(anthropicBody(user, toolUse("toolu_01A"), results(result("toolu_01A"))), "tools"), 400, "invalid_request_error",
			"Requests which include `tool_use` or `tool_result` blocks must define tools."},
		{"tool_use input as a string", nil, "", anthropicBody(user, map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": "toolu_x", "name": "test_echo", "input": `{"msg":"hi"}`}}}, results(result("toolu_x"))), 400, "invalid_request_error",
			"messages.1.content.0.tool_use.input: Input should be a valid dictionary"},
		{"OpenAI tool message fields in a block", nil, "", anthropicBody(user, toolUse("toolu_01A"), results(map[string]any{"type": "tool_result", "tool_use_id": "toolu_01A", "tool_call_id": "toolu_01A", "content": "ok"})), 400, "invalid_request_error",
			"messages.2.content.0.tool_result.tool_call_id: Extra inputs are not permitted"},
		{"unknown model", nil, "", with(anthropicBody(user), "model", "claude-9"), 404, "not_found_error", "model: claude-9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.New(t, llmtest.Anthropic, llmtest.WithAPIKey(anthropicKey), llmtest.WithModel("claude-haiku-4-5-20251001"))
			h := anthropicHeaders()
			for k, v := range tc.header {
				h[k] = v
			}
			path := tc.path
			if path == "" {
				path = "/v1/messages"
			}
			r := post(t, s.URL+path, h, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.raw)
			}
			if r.body["type"] != "error" {
				t.Errorf("body %s", r.raw)
			}
			e, _ := r.body["error"].(map[string]any)
			if e["type"] != tc.typ || e["message"] != tc.message {
				t.Errorf("error\n got %v %q\nwant %v %q", e["type"], e["message"], tc.typ, tc.message)
			}
			if id, _ := r.body["request_id"].(string); !strings.HasPrefix(id, "req_") {
				t.Errorf("request_id %v", r.body["request_id"])
			}
			if rej := s.Rejections(); len(rej) != 1 || !strings.HasSuffix(rej[0], tc.message) {
				t.Errorf("rejections %q", rej)
			}
		})
	}
}

func TestAnthropicScriptedFailures(t *testing.T) {
	s := llmtest.New(t, llmtest.Anthropic)
	s.Script(
		llmtest.Turn{Status: 429, RetryAfter: "7"},
		llmtest.Turn{Status: 500},
		llmtest.Turn{Status: 529},
	)
	url := s.URL + "/v1/messages"
	h := anthropicHeaders()
	body := anthropicBody(map[string]any{"role": "user", "content": "hi"})
	for _, want := range []struct {
		status int
		typ    string
	}{{429, "rate_limit_error"}, {500, "api_error"}, {529, "overloaded_error"}} {
		r := post(t, url, h, body)
		e, _ := r.body["error"].(map[string]any)
		if r.status != want.status || r.body["type"] != "error" || e["type"] != want.typ || e["message"] == "" {
			t.Errorf("%d: %d %s", want.status, r.status, r.raw)
		}
		if want.status == 429 && r.header.Get("retry-after") != "7" {
			t.Errorf("retry-after %q", r.header.Get("retry-after"))
		}
		if want.status == 529 && e["message"] != "Overloaded" {
			t.Errorf("529 message %v", e["message"])
		}
	}
	if rej := s.Rejections(); len(rej) != 0 {
		t.Errorf("rejections %v", rej)
	}
}

func TestAnthropicStream(t *testing.T) {
	s := llmtest.New(t, llmtest.Anthropic)
	s.Script(llmtest.Turn{Text: "I'll check the current weather in Paris for you.", ToolCalls: []llmtest.Call{{Name: "get_weather", Arguments: map[string]any{"location": "Paris"}}}})
	body := anthropicBody(map[string]any{"role": "user", "content": "weather?"})
	body["stream"] = true
	r := post(t, s.URL+"/v1/messages", anthropicHeaders(), body)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %v %s", r.status, r.header, r.raw)
	}
	got := sseEvents(t, r.raw)
	want := sseEvents(t, recorded(t, "anthropic_tool_use_stream.txt"))
	compress := func(evs []sseEvent) string {
		var names []string
		for _, ev := range evs {
			if len(names) > 0 && names[len(names)-1] == ev.name && ev.name == "content_block_delta" {
				continue
			}
			names = append(names, ev.name)
		}
		return strings.Join(names, " ")
	}
	if g, w := compress(got), compress(want); g != w {
		t.Errorf("event sequence\n got %s\nwant %s", g, w)
	}
	for i, ev := range got {
		var data map[string]any
		if err := json.Unmarshal([]byte(ev.data), &data); err != nil || data["type"] != ev.name {
			t.Errorf("event %d %q: data %s", i, ev.name, ev.data)
		}
	}
	// message_start carries the message without content; the tool_use
	// block's JSON reassembles; message_delta has the stop reason.
	start := mustJSON(t, got[0].data)["message"].(map[string]any)
	if start["stop_reason"] != nil || len(start["content"].([]any)) != 0 || start["id"] == "" {
		t.Errorf("message_start %s", got[0].data)
	}
	var text, partial strings.Builder
	for _, ev := range got {
		d := mustJSON(t, ev.data)
		if delta, ok := d["delta"].(map[string]any); ok {
			switch delta["type"] {
			case "text_delta":
				text.WriteString(delta["text"].(string))
			case "input_json_delta":
				partial.WriteString(delta["partial_json"].(string))
			}
			if ev.name == "message_delta" && delta["stop_reason"] != "tool_use" {
				t.Errorf("message_delta %s", ev.data)
			}
		}
	}
	if text.String() != "I'll check the current weather in Paris for you." || partial.String() != `{"location":"Paris"}` {
		t.Errorf("text %q input %q", text.String(), partial.String())
	}
}
