package ollama_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/llm/ollama"
)

const testKey = "ollama-test-SECRET-0123456789"

func weatherTools() []llm.Tool {
	return []llm.Tool{
		{Name: "get_weather", Description: "Current weather for a city", Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required":   []any{"city"},
		}},
		{Name: "get_time", Description: "Local time for a city", Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
		}},
	}
}

func conversation() llm.Request {
	return llm.Request{
		Model: "llama3.2",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are terse."},
			{Role: llm.RoleUser, Content: "Weather and time in Paris?"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: map[string]any{"city": "Paris"}},
				{ID: "call_2", Name: "get_time", Arguments: map[string]any{"city": "Paris"}},
			}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Name: "get_weather", Content: `{"temp_c":21}`},
			// No Name: tool_name comes from the assistant's call.
			{Role: llm.RoleTool, ToolCallID: "call_2", Content: "error: timeout", IsError: true},
			{Role: llm.RoleAssistant, Content: "21°C; time unknown."},
			{Role: llm.RoleUser, Content: "Thanks. Tomorrow?"},
		},
		Tools:      weatherTools(),
		ToolChoice: "auto",
		MaxTokens:  256,
	}
}

const goldenRequest = `{
  "model": "llama3.2",
  "messages": [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather and time in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
      {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
      {"function": {"name": "get_time", "arguments": {"city": "Paris"}}}
    ]},
    {"role": "tool", "content": "{\"temp_c\":21}", "tool_name": "get_weather"},
    {"role": "tool", "content": "error: timeout", "tool_name": "get_time"},
    {"role": "assistant", "content": "21°C; time unknown."},
    {"role": "user", "content": "Thanks. Tomorrow?"}
  ],
  "tools": [
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "Local time for a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
  ],
  "stream": false,
  "options": {"num_predict": 256}
}`

func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want invalid JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		gi, _ := json.MarshalIndent(g, "", "  ")
		wi, _ := json.MarshalIndent(w, "", "  ")
		t.Fatalf("JSON differs\n got: %s\nwant: %s", gi, wi)
	}
}

func TestPrepareRequestGolden(t *testing.T) {
	t.Parallel()
	body, err := ollama.New(llm.Config{}).PrepareRequest(conversation())
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, body, goldenRequest)
}

func TestPrepareRequestStreamFalseAndToolChoice(t *testing.T) {
	t.Parallel()
	a := ollama.New(llm.Config{})
	body, err := a.PrepareRequest(llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, body, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":false}`)

	req := conversation()
	req.ToolChoice = "none"
	body, err = a.PrepareRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	if _, ok := m["tools"]; ok {
		t.Error(`tool_choice "none" still sent tools`)
	}
	req.ToolChoice = "maybe"
	if _, err := a.PrepareRequest(req); err == nil {
		t.Error("unknown tool_choice accepted")
	}
	if _, err := a.PrepareRequest(llm.Request{Model: "m"}); err == nil {
		t.Error("no messages accepted")
	}
}

func TestFormatToolResult(t *testing.T) {
	t.Parallel()
	a := ollama.New(llm.Config{})
	got := a.FormatToolResult("call_1", "get_weather", llm.ToolResult{Success: true, Output: json.RawMessage(`{"temp_c":21}`)})
	want := map[string]any{"role": "tool", "content": `{"temp_c":21}`, "tool_name": "get_weather"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v", got)
	}
	got = a.FormatToolResult("call_2", "get_time", llm.ToolResult{Error: "timeout"})
	want = map[string]any{"role": "tool", "content": "error: timeout", "tool_name": "get_time"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v", got)
	}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseRecordedToolCalls(t *testing.T) {
	t.Parallel()
	r, err := ollama.New(llm.Config{}).ParseResponse(readFixture(t, "ollama_chat_tool_calls.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ToolCalls) != 1 {
		t.Fatalf("got %+v", r)
	}
	tc := r.ToolCalls[0]
	if tc.Name != "get_weather" || !reflect.DeepEqual(tc.Arguments, map[string]any{"city": "Tokyo"}) ||
		!strings.HasPrefix(tc.ID, "call_") || tc.ID == tc.Name {
		t.Fatalf("tool call %+v", tc)
	}
	if r.Content != "" || r.StopReason != "stop" || *r.Usage != (llm.Usage{InputTokens: 169, OutputTokens: 18}) {
		t.Fatalf("got %+v", r)
	}
}

func TestParseRecordedFinal(t *testing.T) {
	t.Parallel()
	r, err := ollama.New(llm.Config{}).ParseResponse(readFixture(t, "ollama_chat_final.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{Content: "The current temperature in Toronto is 11°C.", StopReason: "stop",
		Usage: &llm.Usage{InputTokens: 94, OutputTokens: 11}}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got %+v", r)
	}
}

func TestParseGeneratesUniqueIDs(t *testing.T) {
	t.Parallel()
	body := `{"message":{"role":"assistant","content":"","tool_calls":[
		{"function":{"name":"get_weather","arguments":{"city":"A"}}},
		{"function":{"name":"get_weather","arguments":{"city":"B"}}},
		{"id":"call_x","function":{"name":"get_time","arguments":{}}}]},"done":true}`
	r, err := ollama.New(llm.Config{}).ParseResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ToolCalls) != 3 {
		t.Fatalf("got %+v", r.ToolCalls)
	}
	seen := map[string]bool{}
	for _, tc := range r.ToolCalls {
		if tc.ID == "" || tc.ID == tc.Name || seen[tc.ID] {
			t.Fatalf("bad or duplicate id in %+v", r.ToolCalls)
		}
		seen[tc.ID] = true
	}
	if r.ToolCalls[2].ID != "call_x" {
		t.Errorf("provider id replaced: %q", r.ToolCalls[2].ID)
	}
}

func TestParseNDJSON(t *testing.T) {
	t.Parallel()
	body := strings.Join([]string{
		`{"model":"qwen3","created_at":"2025-07-07T20:32:53Z","message":{"role":"assistant","content":"Let me "},"done":false}`,
		`{"model":"qwen3","created_at":"2025-07-07T20:32:53Z","message":{"role":"assistant","content":"check."},"done":false}`,
		`{"model":"qwen3","created_at":"2025-07-07T20:32:53Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Tokyo"}}}]},"done":false}`,
		`{"model":"qwen3","created_at":"2025-07-07T20:32:54Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_time","arguments":{"city":"Tokyo"}}}]},"done":false}`,
		`{"model":"qwen3","created_at":"2025-07-07T20:32:54Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"prompt_eval_count":42,"eval_count":7}`,
		``,
	}, "\n")
	r, err := ollama.New(llm.Config{}).ParseResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != "Let me check." || len(r.ToolCalls) != 2 || r.ToolCalls[0].ID == r.ToolCalls[1].ID ||
		r.ToolCalls[1].Name != "get_time" || r.StopReason != "stop" || *r.Usage != (llm.Usage{InputTokens: 42, OutputTokens: 7}) {
		t.Fatalf("got %+v", r)
	}

	if _, err := ollama.New(llm.Config{}).ParseResponse([]byte(`{"message":{"content":"cut"},"done":false}`)); err == nil {
		t.Error("stream without done:true accepted")
	}
	_, err = ollama.New(llm.Config{}).ParseResponse([]byte(`{"message":{"content":"a"},"done":false}` + "\n" + `{"error":"an error was encountered while running the model"}`))
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Message != "an error was encountered while running the model" {
		t.Errorf("error line: %v", err)
	}
	if _, err := ollama.New(llm.Config{}).ParseResponse([]byte(`{"message":{"tool_calls":[{"function":{"name":"get_weather","arguments":"{oops"}}]},"done":true}`)); err == nil || !strings.Contains(err.Error(), "get_weather") {
		t.Errorf("bad arguments: %v", err)
	}
}

func contentBody(content string) []byte {
	b, _ := json.Marshal(map[string]any{"model": "m", "message": map[string]any{"role": "assistant", "content": content},
		"done": true, "done_reason": "stop", "prompt_eval_count": 1, "eval_count": 1})
	return b
}

func TestTextToolCallRecovery(t *testing.T) {
	t.Parallel()
	tools := weatherTools()
	cases := []struct {
		name, content, rest string
		calls               []string
	}{
		{"bare", `{"name": "get_weather", "parameters": {"city": "Paris"}}`, "", []string{"get_weather"}},
		{"fenced", "```json\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Oslo\"}}\n```", "", []string{"get_time"}},
		{"tagged", "Sure.\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>\n<tool_call>{\"name\": \"get_time\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>",
			"Sure.", []string{"get_weather", "get_time"}},
		{"unknown tool", `{"name": "delete_all", "arguments": {}}`, `{"name": "delete_all", "arguments": {}}`, nil},
		{"text", "Hello.", "Hello.", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := ollama.ParseResponseFor(contentBody(c.content), tools)
			if err != nil {
				t.Fatal(err)
			}
			if r.Content != c.rest || len(r.ToolCalls) != len(c.calls) {
				t.Fatalf("got %+v", r)
			}
			seen := map[string]bool{}
			for i, tc := range r.ToolCalls {
				if tc.Name != c.calls[i] || tc.Arguments == nil || !strings.HasPrefix(tc.ID, "call_") || seen[tc.ID] {
					t.Fatalf("call %d: %+v", i, tc)
				}
				seen[tc.ID] = true
			}
		})
	}
}

type reply struct {
	status  int
	headers map[string]string
	body    string
}

func newServer(t *testing.T, wantBody []byte, replies ...reply) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if r.Method != http.MethodPost || r.URL.Path != "/api/chat" {
			t.Errorf("got %s %s", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("Authorization %q", got)
		}
		if got := r.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type %q", got)
		}
		body, _ := io.ReadAll(r.Body)
		if wantBody != nil && !bytes.Equal(body, wantBody) {
			t.Errorf("body\n got %s\nwant %s", body, wantBody)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil || m["stream"] != false {
			t.Errorf("stream is not false: %s", body)
		}
		rp := replies[min(i, len(replies)-1)]
		for k, v := range rp.headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rp.status)
		_, _ = io.WriteString(w, rp.body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestChat(t *testing.T) {
	t.Parallel()
	req := conversation()
	want, err := ollama.New(llm.Config{}).PrepareRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	srv, n := newServer(t, want, reply{status: 200, body: string(readFixture(t, "ollama_chat_tool_calls.json"))})
	a := ollama.New(llm.Config{BaseURL: srv.URL + "/", APIKey: testKey})
	r, err := a.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 1 || len(r.ToolCalls) != 1 || r.ToolCalls[0].Arguments["city"] != "Tokyo" {
		t.Fatalf("calls=%d response %+v", n.Load(), r)
	}
}

func TestChatRecoversTextToolCalls(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, nil, reply{status: 200, body: string(contentBody(`{"name": "get_time", "arguments": {"city": "Lima"}}`))})
	r, err := ollama.New(llm.Config{BaseURL: srv.URL, APIKey: testKey}).Chat(context.Background(), conversation())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "get_time" || r.Content != "" {
		t.Fatalf("got %+v", r)
	}
}

func TestChatRetriesAfterRetryAfter(t *testing.T) {
	t.Parallel()
	srv, n := newServer(t, nil,
		reply{status: 429, headers: map[string]string{"Retry-After": "1"}, body: `{"error":"too many requests"}`},
		reply{status: 200, body: string(readFixture(t, "ollama_chat_final.json"))})
	a := ollama.New(llm.Config{BaseURL: srv.URL, APIKey: testKey})
	start := time.Now()
	r, err := a.Chat(context.Background(), conversation())
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 2 {
		t.Fatalf("attempts %d, want 2", n.Load())
	}
	if el := time.Since(start); el < time.Second {
		t.Fatalf("retried after %v, before Retry-After", el)
	}
	if r.Content != "The current temperature in Toronto is 11°C." {
		t.Fatalf("got %+v", r)
	}
}

func TestChatBadRequest(t *testing.T) {
	t.Parallel()
	srv, n := newServer(t, nil, reply{status: 404, body: `{"error":"model \"llama9\" not found, try pulling it first"}`})
	_, err := ollama.New(llm.Config{BaseURL: srv.URL, APIKey: testKey}).Chat(context.Background(), conversation())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 404 || pe.Provider != "ollama" || pe.Message != `model "llama9" not found, try pulling it first` {
		t.Fatalf("got %#v", err)
	}
	if n.Load() != 1 {
		t.Fatalf("404 was retried: %d attempts", n.Load())
	}

	srv, _ = newServer(t, nil, reply{status: 400, body: `{"error":"invalid message format"}`})
	_, err = ollama.New(llm.Config{BaseURL: srv.URL, APIKey: testKey}).Chat(context.Background(), conversation())
	if !errors.As(err, &pe) || pe.Status != 400 || pe.Message != "invalid message format" {
		t.Fatalf("got %#v", err)
	}
}

func TestChatServerErrorsExhaustRetries(t *testing.T) {
	t.Parallel()
	srv, n := newServer(t, nil, reply{status: 500, body: `{"error":"llama runner process has terminated (key ` + testKey + `)"}`})
	a := ollama.New(llm.Config{BaseURL: srv.URL, APIKey: testKey, MaxRetries: 2})
	_, err := a.Chat(context.Background(), conversation())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 500 || !strings.HasPrefix(pe.Message, "llama runner process has terminated") {
		t.Fatalf("got %#v", err)
	}
	if n.Load() != 3 {
		t.Fatalf("attempts %d, want 3", n.Load())
	}
	if strings.Contains(err.Error(), testKey) {
		t.Fatalf("key in error: %v", err)
	}
}
