package llmtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
)

var echoToolOllama = map[string]any{"type": "function", "function": map[string]any{
	"name": "test/echo", "description": "Echo tool",
	"parameters": map[string]any{"type": "object", "required": []any{"msg"}, "properties": map[string]any{"msg": map[string]any{"type": "string", "description": "text"}}},
}}

func ollamaBody(stream *bool, msgs ...map[string]any) map[string]any {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = m
	}
	b := map[string]any{"model": "llama3.2", "messages": list, "tools": []any{echoToolOllama}}
	if stream != nil {
		b["stream"] = *stream
	}
	return b
}

var noStream = func() *bool { f := false; return &f }()

func ndjson(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestOllamaToolCallRoundTrip(t *testing.T) {
	s := llmtest.New(t, llmtest.Ollama, llmtest.WithModel("llama3.2"))
	if s.URL != s.Origin {
		t.Fatalf("base URL %q", s.URL)
	}
	s.Script(
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "test/echo", Arguments: map[string]any{"msg": "hi"}}}, Usage: &llmtest.Usage{InputTokens: 169, OutputTokens: 18}},
		llmtest.Turn{Text: "Final answer after tool call"},
	)
	url := s.URL + "/api/chat"
	user := map[string]any{"role": "user", "content": "Use the echo tool"}
	first := post(t, url, nil, ollamaBody(noStream, map[string]any{"role": "system", "content": "Be brief."}, user))
	if first.status != 200 || first.header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("%d %v %s", first.status, first.header, first.raw)
	}
	msg := first.body["message"].(map[string]any)
	call := msg["tool_calls"].([]any)[0].(map[string]any)
	// Current Ollama (v0.12.10+) sends an id and the call's index.
	if id, _ := call["id"].(string); !regexp.MustCompile(`^call_[a-z0-9]{8}$`).MatchString(id) {
		t.Errorf("id %v", call["id"])
	}
	fn := call["function"].(map[string]any)
	if fn["index"] != 0.0 || fn["name"] != "test/echo" || fn["arguments"].(map[string]any)["msg"] != "hi" {
		t.Errorf("function %v", fn)
	}
	// Otherwise the body is the recorded one's shape (ids aside).
	delete(call, "id")
	delete(fn, "index")
	shapeDiff(t, "tool calls", recordedJSON(t, "ollama_chat_tool_calls.json"), first.body)
	if first.body["prompt_eval_count"] != 169.0 || first.body["eval_count"] != 18.0 || first.body["done_reason"] != "stop" || first.body["done"] != true {
		t.Errorf("counts %s", first.raw)
	}
	if _, err := time.Parse(time.RFC3339Nano, first.body["created_at"].(string)); err != nil {
		t.Error(err)
	}

	second := post(t, url, nil, ollamaBody(noStream, user,
		map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"function": map[string]any{"name": "test/echo", "arguments": map[string]any{"msg": "hi"}}}}},
		map[string]any{"role": "tool", "content": `{"msg":"hi"}`, "tool_name": "test/echo"}))
	if second.status != 200 {
		t.Fatalf("%d %s", second.status, second.raw)
	}
	shapeDiff(t, "final", recordedJSON(t, "ollama_chat_final.json"), second.body)
	if second.body["message"].(map[string]any)["content"] != "Final answer after tool call" {
		t.Errorf("final %s", second.raw)
	}
	if r := s.Rejections(); len(r) != 0 {
		t.Errorf("rejections %v", r)
	}
}

func TestOllamaWithoutToolCallIDs(t *testing.T) {
	s := llmtest.New(t, llmtest.Ollama, llmtest.WithoutToolCallIDs())
	s.Script(llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "get_weather", Arguments: map[string]any{"city": "Tokyo"}}}})
	r := post(t, s.URL+"/api/chat", nil, ollamaBody(noStream, map[string]any{"role": "user", "content": "weather"}))
	// Exactly the recorded docs/api.md shape: no id, no index.
	shapeDiff(t, "tool calls", recordedJSON(t, "ollama_chat_tool_calls.json"), r.body)
	call := r.body["message"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if strings.Join(keysOf(call), ",") != "function" || strings.Join(keysOf(call["function"].(map[string]any)), ",") != "arguments,name" {
		t.Errorf("call %v", call)
	}
}

func TestOllamaStream(t *testing.T) {
	s := llmtest.New(t, llmtest.Ollama)
	s.Script(
		llmtest.Turn{Text: "Let me check.", ToolCalls: []llmtest.Call{{Name: "test/echo", Arguments: map[string]any{"msg": "hi"}}}},
		llmtest.Turn{Text: "The current temperature in Toronto is 11°C."},
	)
	url := s.URL + "/api/chat"
	// "stream" absent means streaming.
	r := post(t, url, nil, ollamaBody(nil, map[string]any{"role": "user", "content": "hi"}))
	if r.status != 200 || r.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%d %v", r.status, r.header)
	}
	lines := ndjson(t, r.raw)
	var text strings.Builder
	var calls []any
	for i, l := range lines {
		last := i == len(lines)-1
		if l["done"] != last {
			t.Errorf("line %d done=%v", i, l["done"])
		}
		m := l["message"].(map[string]any)
		text.WriteString(m["content"].(string))
		if tc, ok := m["tool_calls"].([]any); ok {
			calls = append(calls, tc...)
			if m["content"] != "" {
				t.Errorf("tool call chunk with content %v", m["content"])
			}
		}
		if !last && (l["done_reason"] != nil || l["eval_count"] != nil) {
			t.Errorf("line %d carries final fields: %v", i, l)
		}
	}
	final := lines[len(lines)-1]
	for _, k := range []string{"done_reason", "total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"} {
		if final[k] == nil {
			t.Errorf("final line has no %s: %v", k, final)
		}
	}
	if text.String() != "Let me check." || len(calls) != 1 {
		t.Errorf("text %q calls %v", text.String(), calls)
	}
	// stream: true, text only; the final line has the recorded final shape.
	st := true
	r = post(t, url, nil, ollamaBody(&st, map[string]any{"role": "user", "content": "hi"}))
	lines = ndjson(t, r.raw)
	text.Reset()
	for _, l := range lines {
		text.WriteString(l["message"].(map[string]any)["content"].(string))
	}
	if text.String() != "The current temperature in Toronto is 11°C." || len(lines) < 3 {
		t.Errorf("%d lines, text %q", len(lines), text.String())
	}
	shapeDiff(t, "final line", recordedJSON(t, "ollama_chat_final.json"), lines[len(lines)-1])
}

func TestOllamaAcceptsWhatOllamaAccepts(t *testing.T) {
	s := llmtest.New(t, llmtest.Ollama, llmtest.WithModel("llama3.2"))
	url := s.URL + "/api/chat"
	for name, body := range map[string]any{
		"tag spelled out":          map[string]any{"model": "llama3.2:latest", "stream": false, "messages": []any{map[string]any{"role": "user", "content": "hi"}}},
		"tool result with an id":   ollamaBody(noStream, map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "call_abcd1234", "function": map[string]any{"index": 0, "name": "test/echo", "arguments": map[string]any{}}}}}, map[string]any{"role": "tool", "content": "ok", "tool_call_id": "call_abcd1234"}),
		"unknown fields, options":  map[string]any{"model": "llama3.2", "stream": false, "messages": []any{map[string]any{"role": "user", "content": "hi", "x": 1}}, "options": map[string]any{"temperature": 0}, "keep_alive": "5m", "think": false},
		"null content":             ollamaBody(noStream, map[string]any{"role": "user", "content": nil}),
		"tool message without ids": ollamaBody(noStream, map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "tool", "content": "dangling"}),
	} {
		if r := post(t, url, nil, body); r.status != 200 {
			t.Errorf("%s: %d %s", name, r.status, r.raw)
		}
	}
	// No messages: Ollama loads the model and answers done_reason "load".
	r := post(t, url, nil, map[string]any{"model": "llama3.2", "messages": []any{}})
	if r.status != 200 || r.body["done_reason"] != "load" || r.body["done"] != true {
		t.Errorf("load: %d %s", r.status, r.raw)
	}
	if rej := s.Rejections(); len(rej) != 0 {
		t.Errorf("rejections %v", rej)
	}
	if s.Pending() != 0 {
		t.Errorf("pending %d", s.Pending())
	}
}

func TestOllamaRejections(t *testing.T) {
	user := map[string]any{"role": "user", "content": "hi"}
	cases := []struct {
		name    string
		path    string
		body    any
		status  int
		message string
	}{
		{"no model", "", map[string]any{"messages": []any{user}}, 400, "model is required"},
		{"unknown model", "", map[string]any{"model": "qwen2.5:7b", "messages": []any{user}}, 404, "model 'qwen2.5:7b' not found"},
		{"other tag of the model", "", map[string]any{"model": "llama3.2:1b", "messages": []any{user}}, 404, "model 'llama3.2:1b' not found"},
		{"empty body", "", []byte(""), 400, "missing request body"},
		{"not JSON", "", []byte("{"), 400, "unexpected EOF"},
		{"arguments as a JSON string", "", ollamaBody(noStream, user, map[string]any{"role": "assistant", "content": "", "tool_calls": []any{
			map[string]any{"function": map[string]any{"name": "test/echo", "arguments": `{"msg":"hi"}`}}}}, map[string]any{"role": "tool", "content": "ok"}), 400,
			"json: cannot unmarshal string into Go struct field ChatRequest.messages.tool_calls.function.arguments of type api.ToolCallFunctionArguments"},
		{"content as parts", "", ollamaBody(noStream, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}), 400,
			"json: cannot unmarshal array into Go struct field ChatRequest.messages.content of type string"},
		{"stream as text", "", map[string]any{"model": "llama3.2", "messages": []any{user}, "stream": "false"}, 400,
			"json: cannot unmarshal string into Go struct field ChatRequest.stream of type bool"},
		{"required as text", "", map[string]any{"model": "llama3.2", "messages": []any{user}, "tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "x", "parameters": map[string]any{"type": "object", "required": "msg"}}}}}, 400,
			"json: cannot unmarshal string into Go struct field ChatRequest.tools.function.parameters.required of type []string"},
		{"top_logprobs out of range", "", map[string]any{"model": "llama3.2", "messages": []any{user}, "top_logprobs": 21}, 400, "top_logprobs must be between 0 and 20"},
		{"OpenAI path", "/v1/chat/completions", ollamaBody(noStream, user), 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.New(t, llmtest.Ollama, llmtest.WithModel("llama3.2"))
			path := tc.path
			if path == "" {
				path = "/api/chat"
			}
			r := post(t, s.URL+path, nil, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.raw)
			}
			if tc.message == "" {
				if string(r.raw) != "404 page not found" {
					t.Errorf("body %q", r.raw)
				}
			} else if len(r.body) != 1 || r.body["error"] != tc.message {
				t.Errorf("body %s, want {\"error\":%q}", r.raw, tc.message)
			}
			if rej := s.Rejections(); len(rej) != 1 {
				t.Errorf("rejections %q", rej)
			}
		})
	}
}

func TestOllamaScriptedFailuresAndTextToolCall(t *testing.T) {
	s := llmtest.New(t, llmtest.Ollama)
	s.Script(
		llmtest.Turn{Status: 500},
		llmtest.Turn{Status: 503, RetryAfter: "1"},
		llmtest.Turn{TextToolCall: true, ToolCalls: []llmtest.Call{{Name: "test/echo", Arguments: map[string]any{"msg": "hi"}}}},
	)
	url := s.URL + "/api/chat"
	body := ollamaBody(noStream, map[string]any{"role": "user", "content": "hi"})
	r := post(t, url, nil, body)
	if r.status != 500 || r.body["error"] == "" || len(r.body) != 1 {
		t.Errorf("500: %d %s", r.status, r.raw)
	}
	r = post(t, url, nil, body)
	if r.status != 503 || r.header.Get("Retry-After") != "1" {
		t.Errorf("503: %d %v", r.status, r.header)
	}
	r = post(t, url, nil, body)
	msg := r.body["message"].(map[string]any)
	var call map[string]any
	if msg["tool_calls"] != nil || json.Unmarshal([]byte(msg["content"].(string)), &call) != nil || call["name"] != "test/echo" {
		t.Errorf("text tool call %s", r.raw)
	}
	if rej := s.Rejections(); len(rej) != 0 {
		t.Errorf("rejections %v", rej)
	}
	_ = http.StatusOK
}

func TestParseTurnsAndNewServer(t *testing.T) {
	turns, err := llmtest.ParseTurns([]byte(`[{"tool_calls":[{"name":"test_echo","arguments":{"msg":"hi"}}]},{"status":429,"retry_after":"1"},{"text":"ok","usage":{"input_tokens":3,"output_tokens":4}}]`))
	if err != nil || len(turns) != 3 || turns[0].ToolCalls[0].Arguments["msg"] != "hi" || turns[1].RetryAfter != "1" || turns[2].Usage.OutputTokens != 4 {
		t.Fatalf("%+v %v", turns, err)
	}
	for _, bad := range []string{`[{"txt":"typo"}]`, `[{"tool_calls":[{"arguments":{}}]}]`, `{"text":"not a list"}`, `[] []`} {
		if _, err := llmtest.ParseTurns([]byte(bad)); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
	// The core server without a testing.TB.
	s := llmtest.NewServer(llmtest.Anthropic)
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Script(turns...)
	r := post(t, s.URL+"/v1/messages", map[string]string{"anthropic-version": "2023-06-01"}, anthropicBody(map[string]any{"role": "user", "content": "hi"}))
	if r.status != 200 || r.body["stop_reason"] != "tool_use" {
		t.Errorf("%d %s", r.status, r.raw)
	}
	if s.Pending() != 2 {
		t.Errorf("pending %d", s.Pending())
	}
}
