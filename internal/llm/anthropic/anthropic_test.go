package anthropic_test

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
	"github.com/toolrouterd/toolrouterd/internal/llm/anthropic"
)

const testKey = "sk-ant-test-SECRET-0123456789"

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
		Model: "claude-haiku-4-5",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are terse."},
			{Role: llm.RoleUser, Content: "Weather and time in Paris?"},
			{Role: llm.RoleAssistant, Content: "Checking both.", ToolCalls: []llm.ToolCall{
				{ID: "toolu_1", Name: "get_weather", Arguments: map[string]any{"city": "Paris"}},
				{ID: "toolu_2", Name: "get_time", Arguments: map[string]any{"city": "Paris"}},
			}},
			{Role: llm.RoleTool, ToolCallID: "toolu_1", Name: "get_weather", Content: `{"temp_c":21}`},
			{Role: llm.RoleTool, ToolCallID: "toolu_2", Name: "get_time", Content: "error: timeout", IsError: true},
			{Role: llm.RoleAssistant, Content: "21°C; time unknown."},
			{Role: llm.RoleUser, Content: "Thanks. Tomorrow?"},
		},
		Tools:      weatherTools(),
		ToolChoice: "auto",
	}
}

const goldenRequest = `{
  "model": "claude-haiku-4-5",
  "max_tokens": 4096,
  "system": "You are terse.",
  "messages": [
    {"role": "user", "content": "Weather and time in Paris?"},
    {"role": "assistant", "content": [
      {"type": "text", "text": "Checking both."},
      {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
      {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {"city": "Paris"}}
    ]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"temp_c\":21}", "is_error": false},
      {"type": "tool_result", "tool_use_id": "toolu_2", "content": "error: timeout", "is_error": true}
    ]},
    {"role": "assistant", "content": "21°C; time unknown."},
    {"role": "user", "content": "Thanks. Tomorrow?"}
  ],
  "tools": [
    {"name": "get_weather", "description": "Current weather for a city",
     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    {"name": "get_time", "description": "Local time for a city",
     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
  ],
  "tool_choice": {"type": "auto"}
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

// checkAlternation asserts the Messages API's structural rules on a body:
// roles alternate starting with user, every tool_use is answered by a
// tool_result in the next (user) message, tool_result blocks come first.
func checkAlternation(t *testing.T, body []byte) {
	t.Helper()
	var req struct {
		MaxTokens int `json:"max_tokens"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if req.MaxTokens <= 0 {
		t.Fatal("max_tokens missing")
	}
	var pending []string
	for i, m := range req.Messages {
		want := []string{"user", "assistant"}[i%2]
		if m.Role != want {
			t.Fatalf("message %d has role %s, want %s", i, m.Role, want)
		}
		var blocks []map[string]any
		if m.Content[0] == '[' {
			_ = json.Unmarshal(m.Content, &blocks)
		}
		seenOther := false
		answered := map[string]bool{}
		for _, b := range blocks {
			switch b["type"] {
			case "tool_use":
				pending = append(pending, b["id"].(string))
			case "tool_result":
				if seenOther {
					t.Fatalf("message %d: tool_result after other content", i)
				}
				answered[b["tool_use_id"].(string)] = true
			default:
				seenOther = true
			}
		}
		if m.Role == "user" {
			for _, id := range pending {
				if !answered[id] {
					t.Fatalf("message %d: tool_use %s not answered", i, id)
				}
			}
			pending = nil
		}
	}
}

func TestPrepareRequestGolden(t *testing.T) {
	t.Parallel()
	body, err := anthropic.New(llm.Config{}).PrepareRequest(conversation())
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, body, goldenRequest)
	checkAlternation(t, body)
}

func TestPrepareRequestMerges(t *testing.T) {
	t.Parallel()
	req := llm.Request{
		Model:     "m",
		MaxTokens: 100,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "A."},
			{Role: llm.RoleUser, Content: "one"},
			{Role: llm.RoleUser, Content: "two"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "ping"}}},
			{Role: llm.RoleTool, ToolCallID: "t1", Content: "pong"},
			{Role: llm.RoleSystem, Content: "B."},
			{Role: llm.RoleUser, Content: "and now?"},
		},
		Tools:      []llm.Tool{{Name: "ping"}},
		ToolChoice: "required",
	}
	body, err := anthropic.New(llm.Config{}).PrepareRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, body, `{"model":"m","max_tokens":100,"system":"A.\n\nB.",
	  "messages":[
	    {"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]},
	    {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ping","input":{}}]},
	    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"pong","is_error":false},{"type":"text","text":"and now?"}]}],
	  "tools":[{"name":"ping","input_schema":{"type":"object","properties":{}}}],
	  "tool_choice":{"type":"any"}}`)
	checkAlternation(t, body)
}

func TestToolChoice(t *testing.T) {
	t.Parallel()
	a := anthropic.New(llm.Config{})
	for choice, want := range map[string]any{"auto": map[string]any{"type": "auto"}, "required": map[string]any{"type": "any"},
		"none": map[string]any{"type": "none"}, "": nil} {
		req := conversation()
		req.ToolChoice = choice
		body, err := a.PrepareRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		if !reflect.DeepEqual(m["tool_choice"], want) {
			t.Errorf("%q: tool_choice %v, want %v", choice, m["tool_choice"], want)
		}
	}
	req := conversation()
	req.ToolChoice = "maybe"
	if _, err := a.PrepareRequest(req); err == nil {
		t.Error("unknown tool_choice accepted")
	}
}

func TestPrepareRequestRejectsBrokenToolPairing(t *testing.T) {
	t.Parallel()
	a := anthropic.New(llm.Config{})
	call := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f"}, {ID: "c2", Name: "f"}}}
	cases := map[string][]llm.Message{
		"unanswered before user": {{Role: llm.RoleUser, Content: "x"}, call,
			{Role: llm.RoleTool, ToolCallID: "c1", Content: "ok"}, {Role: llm.RoleUser, Content: "y"}},
		"unanswered at end": {{Role: llm.RoleUser, Content: "x"}, call},
		"unknown id":        {{Role: llm.RoleUser, Content: "x"}, call, {Role: llm.RoleTool, ToolCallID: "c3", Content: "ok"}},
		"no id":             {{Role: llm.RoleUser, Content: "x"}, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "f"}}}},
		"only system":       {{Role: llm.RoleSystem, Content: "x"}},
		"empty":             nil,
	}
	for name, msgs := range cases {
		if _, err := a.PrepareRequest(llm.Request{Model: "m", Messages: msgs}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestFormatToolResult(t *testing.T) {
	t.Parallel()
	a := anthropic.New(llm.Config{})
	got := a.FormatToolResult("toolu_1", "get_weather", llm.ToolResult{Success: true, Output: json.RawMessage(`"sunny"`)})
	want := map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny", "is_error": false}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v", got)
	}
	got = a.FormatToolResult("toolu_2", "get_time", llm.ToolResult{Error: "timeout"})
	want = map[string]any{"type": "tool_result", "tool_use_id": "toolu_2", "content": "error: timeout", "is_error": true}
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

func TestParseRecordedToolUse(t *testing.T) {
	t.Parallel()
	r, err := anthropic.New(llm.Config{}).ParseResponse(readFixture(t, "anthropic_tool_use.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{
		Content: "I'll get the weather for each of those cities. Let me start by checking San Francisco.",
		ToolCalls: []llm.ToolCall{{ID: "toolu_01LRanfq6DmHn1yDTB4d1SAh", Name: "get_weather",
			Arguments: map[string]any{"location": "San Francisco, CA", "units": "f"}}},
		Usage:      &llm.Usage{InputTokens: 701, OutputTokens: 93},
		StopReason: "tool_use",
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got %+v", r)
	}
}

func TestParseRecordedFinal(t *testing.T) {
	t.Parallel()
	r, err := anthropic.New(llm.Config{}).ParseResponse(readFixture(t, "anthropic_final.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{
		Content:    "The weather in San Francisco, CA is currently **Sunny** with a temperature of **68°F**.",
		Usage:      &llm.Usage{InputTokens: 770, OutputTokens: 25},
		StopReason: "end_turn",
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got %+v", r)
	}
}

func TestParseBlocksAndIDs(t *testing.T) {
	t.Parallel()
	body := `{"type":"message","role":"assistant","content":[
		{"type":"thinking","thinking":"hmm","signature":"x"},
		{"type":"text","text":"Part one, "},{"type":"text","text":"part two."},
		{"type":"tool_use","name":"get_weather","input":{"city":"Oslo"}},
		{"type":"tool_use","id":"","name":"get_time","input":null},
		{"type":"text","text":"After."}],
		"stop_reason":"tool_use","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":5}}`
	r, err := anthropic.New(llm.Config{}).ParseResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != "Part one, part two.\nAfter." {
		t.Errorf("content %q", r.Content)
	}
	if len(r.ToolCalls) != 2 || r.ToolCalls[0].ID == "" || r.ToolCalls[0].ID == r.ToolCalls[1].ID ||
		r.ToolCalls[0].ID == "get_weather" || r.ToolCalls[1].Arguments == nil || len(r.ToolCalls[1].Arguments) != 0 {
		t.Errorf("tool calls %+v", r.ToolCalls)
	}
	if *r.Usage != (llm.Usage{InputTokens: 100, OutputTokens: 5, CachedInputTokens: 90}) { // cache reads are priced apart (docs/costs.md)
		t.Errorf("usage %+v", *r.Usage)
	}

	if _, err := anthropic.New(llm.Config{}).ParseResponse([]byte(`{"type":"message","content":[{"type":"tool_use","id":"x","name":"f","input":[1]}]}`)); err == nil || !strings.Contains(err.Error(), `"f"`) {
		t.Errorf("array input: %v", err)
	}
	_, err = anthropic.New(llm.Config{}).ParseResponse([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Message != "Overloaded" {
		t.Errorf("error body: %v", err)
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
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			t.Errorf("got %s %s", r.Method, r.URL.Path)
		}
		for k, v := range map[string]string{"x-api-key": testKey, "anthropic-version": "2023-06-01", "content-type": "application/json"} {
			if got := r.Header.Get(k); got != v {
				t.Errorf("%s: %q, want %q", k, got, v)
			}
		}
		if r.Header.Get("Authorization") != "" {
			t.Errorf("Authorization header sent to Anthropic")
		}
		body, _ := io.ReadAll(r.Body)
		if wantBody != nil && !bytes.Equal(body, wantBody) {
			t.Errorf("body\n got %s\nwant %s", body, wantBody)
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
	want, err := anthropic.New(llm.Config{}).PrepareRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	srv, n := newServer(t, want, reply{status: 200, body: string(readFixture(t, "anthropic_tool_use.json"))})
	a := anthropic.New(llm.Config{BaseURL: srv.URL + "/", APIKey: testKey})
	r, err := a.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 1 || len(r.ToolCalls) != 1 || r.ToolCalls[0].ID != "toolu_01LRanfq6DmHn1yDTB4d1SAh" || r.StopReason != "tool_use" {
		t.Fatalf("calls=%d response %+v", n.Load(), r)
	}
}

func TestChatRetriesAfterRetryAfter(t *testing.T) {
	t.Parallel()
	srv, n := newServer(t, nil,
		reply{status: 429, headers: map[string]string{"Retry-After": "1"},
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`},
		reply{status: 200, body: string(readFixture(t, "anthropic_final.json"))})
	a := anthropic.New(llm.Config{BaseURL: srv.URL, APIKey: testKey})
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
	if r.StopReason != "end_turn" {
		t.Fatalf("got %+v", r)
	}
}

func TestChatBadRequest(t *testing.T) {
	t.Parallel()
	srv, n := newServer(t, nil, reply{status: 400,
		body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages.2: tool_use ids were found without tool_result blocks immediately after: toolu_1"}}`})
	a := anthropic.New(llm.Config{BaseURL: srv.URL, APIKey: testKey})
	_, err := a.Chat(context.Background(), conversation())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 400 || pe.Provider != "anthropic" ||
		pe.Message != "messages.2: tool_use ids were found without tool_result blocks immediately after: toolu_1" {
		t.Fatalf("got %#v", err)
	}
	if n.Load() != 1 {
		t.Fatalf("400 was retried: %d attempts", n.Load())
	}
}

func TestChatServerErrorsExhaustRetries(t *testing.T) {
	t.Parallel()
	srv, n := newServer(t, nil, reply{status: 500,
		body: `{"type":"error","error":{"type":"api_error","message":"Internal server error (key ` + testKey + `)"}}`})
	a := anthropic.New(llm.Config{BaseURL: srv.URL, APIKey: testKey, MaxRetries: 2})
	_, err := a.Chat(context.Background(), conversation())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 500 || !strings.HasPrefix(pe.Message, "Internal server error") {
		t.Fatalf("got %#v", err)
	}
	if n.Load() != 3 {
		t.Fatalf("attempts %d, want 3", n.Load())
	}
	if strings.Contains(err.Error(), testKey) {
		t.Fatalf("key in error: %v", err)
	}
}
