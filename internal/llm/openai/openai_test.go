package openai_test

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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/llm/openai"
)

const testKey = "sk-test-SECRET-0123456789abcdef"

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

// conversation: system, user, assistant with 2 parallel tool calls, the 2
// tool results (one failed), the assistant's answer and a follow-up.
func conversation() llm.Request {
	return llm.Request{
		Model: "gpt-4o",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are terse."},
			{Role: llm.RoleUser, Content: "Weather and time in Paris?"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: map[string]any{"city": "Paris"}},
				{ID: "call_2", Name: "get_time", Arguments: map[string]any{"city": "Paris"}},
			}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Name: "get_weather", Content: `{"temp_c":21}`},
			{Role: llm.RoleTool, ToolCallID: "call_2", Name: "get_time", Content: "error: timeout", IsError: true},
			{Role: llm.RoleAssistant, Content: "21°C; time unknown."},
			{Role: llm.RoleUser, Content: "Thanks. Tomorrow?"},
		},
		Tools:      weatherTools(),
		ToolChoice: "auto",
		MaxTokens:  256,
	}
}

const goldenRequest = `{
  "model": "gpt-4o",
  "messages": [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather and time in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
      {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{\"city\":\"Paris\"}"}}
    ]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\":21}"},
    {"role": "tool", "tool_call_id": "call_2", "content": "error: timeout"},
    {"role": "assistant", "content": "21°C; time unknown."},
    {"role": "user", "content": "Thanks. Tomorrow?"}
  ],
  "tools": [
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "Local time for a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
  ],
  "tool_choice": "auto",
  "max_tokens": 256
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

// compiledSchema compiles the request schema once for all the (parallel)
// tests.
var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	b, err := os.ReadFile("testdata/openai-subset.schema.json")
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	const url = "https://toolrouterd.test/openai-subset.schema.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url + "#/components/schemas/CreateChatCompletionRequest")
})

func requestSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	sch, err := compiledSchema()
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func validateRequest(t *testing.T, body []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := requestSchema(t).Validate(inst); err != nil {
		t.Fatalf("request violates CreateChatCompletionRequest: %v\n%s", err, body)
	}
}

func TestSchemaCanReject(t *testing.T) {
	t.Parallel()
	// The schema must be able to fail, or validating against it proves nothing.
	for _, bad := range []string{
		`{"model":"m","messages":[{"role":"tool","content":"x"}]}`,                                                                           // no tool_call_id
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{}}}]}]}`, // object arguments
		`{"model":"m","messages":[]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"description":"no name"}}]}`,
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if requestSchema(t).Validate(inst) == nil {
			t.Errorf("schema accepted %s", bad)
		}
	}
}

func TestPrepareRequestGolden(t *testing.T) {
	t.Parallel()
	a := openai.New(llm.Config{BaseURL: "http://127.0.0.1:11434/v1"})
	body, err := a.PrepareRequest(conversation())
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, body, goldenRequest)
	validateRequest(t, body)
}

func TestPrepareRequestOpenAIUsesMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	a := openai.New(llm.Config{BaseURL: "https://api.openai.com/v1"})
	body, err := a.PrepareRequest(conversation())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	if m["max_completion_tokens"] != 256.0 || m["max_tokens"] != nil {
		t.Fatalf("want max_completion_tokens only, got %v / %v", m["max_completion_tokens"], m["max_tokens"])
	}
	validateRequest(t, body)
}

func TestPrepareRequestMinimal(t *testing.T) {
	t.Parallel()
	a := openai.New(llm.Config{})
	body, err := a.PrepareRequest(llm.Request{Model: "m", ToolChoice: "required",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	// No tools: neither tools nor tool_choice (OpenAI rejects tool_choice alone).
	jsonEqual(t, body, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	validateRequest(t, body)

	// A tool without parameters gets an empty object schema; an assistant
	// turn with both text and tool calls keeps its text.
	body, err = a.PrepareRequest(llm.Request{Model: "m",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "hi"},
			{Role: llm.RoleAssistant, Content: "Let me look.", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "ping"}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Content: ""},
		},
		Tools: []llm.Tool{{Name: "ping"}}})
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, body, `{"model":"m","messages":[
		{"role":"user","content":"hi"},
		{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"c1","type":"function","function":{"name":"ping","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":""}],
		"tools":[{"type":"function","function":{"name":"ping","parameters":{"type":"object","properties":{}}}}]}`)
	validateRequest(t, body)
}

func TestPrepareRequestRejectsBrokenToolPairing(t *testing.T) {
	t.Parallel()
	a := openai.New(llm.Config{})
	call := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
		{ID: "c1", Name: "f"}, {ID: "c2", Name: "f"}}}
	cases := map[string][]llm.Message{
		"unanswered before user": {{Role: llm.RoleUser, Content: "x"}, call,
			{Role: llm.RoleTool, ToolCallID: "c1", Content: "ok"}, {Role: llm.RoleUser, Content: "y"}},
		"unanswered at end": {{Role: llm.RoleUser, Content: "x"}, call, {Role: llm.RoleTool, ToolCallID: "c2", Content: "ok"}},
		"unknown id": {{Role: llm.RoleUser, Content: "x"}, call, {Role: llm.RoleTool, ToolCallID: "c1", Content: "ok"},
			{Role: llm.RoleTool, ToolCallID: "c9", Content: "ok"}},
		"no id":        {{Role: llm.RoleUser, Content: "x"}, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "f"}}}},
		"orphan tool":  {{Role: llm.RoleUser, Content: "x"}, {Role: llm.RoleTool, ToolCallID: "c1", Content: "ok"}},
		"unknown role": {{Role: "robot", Content: "x"}},
		"empty":        nil,
	}
	for name, msgs := range cases {
		if _, err := a.PrepareRequest(llm.Request{Model: "m", Messages: msgs}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := a.PrepareRequest(llm.Request{Model: "m", ToolChoice: "sometimes",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}); err == nil {
		t.Error("unknown tool_choice accepted")
	}
}

func TestFormatToolResult(t *testing.T) {
	t.Parallel()
	a := openai.New(llm.Config{})
	got := a.FormatToolResult("call_1", "get_weather", llm.ToolResult{Success: true, Output: json.RawMessage(`{"temp_c":21}`)})
	want := map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"temp_c":21}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v", got)
	}
	got = a.FormatToolResult("call_2", "get_time", llm.ToolResult{Error: "timeout"})
	want = map[string]any{"role": "tool", "tool_call_id": "call_2", "content": "error: timeout"}
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
	a := openai.New(llm.Config{})
	r, err := a.ParseResponse(readFixture(t, "openai_chat_tool_calls.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{
		Content: "",
		ToolCalls: []llm.ToolCall{
			{ID: "call_fdNz3vOBKYgOIpMdWotB9MjY", Name: "GetWeatherArgs", Arguments: map[string]any{"city": "Edinburgh", "country": "GB", "units": "c"}},
			{ID: "call_h1DWI1POMJLb0KwIyQHWXD4p", Name: "get_stock_price", Arguments: map[string]any{"ticker": "AAPL", "exchange": "NASDAQ"}},
		},
		Usage:      &llm.Usage{InputTokens: 149, OutputTokens: 60},
		StopReason: "tool_calls",
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got %+v", r)
	}
}

func TestParseRecordedFinal(t *testing.T) {
	t.Parallel()
	a := openai.New(llm.Config{})
	r, err := a.ParseResponse(readFixture(t, "openai_chat_final.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Content, "I'm unable to provide real-time weather updates.") || len(r.ToolCalls) != 0 ||
		r.StopReason != "stop" || *r.Usage != (llm.Usage{InputTokens: 14, OutputTokens: 37}) {
		t.Fatalf("got %+v", r)
	}
}

func TestParseArgumentsEdgeCases(t *testing.T) {
	t.Parallel()
	body := `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
		{"id":"a","type":"function","function":{"name":"f","arguments":""}},
		{"id":"b","type":"function","function":{"name":"g","arguments":"null"}},
		{"id":"c","type":"function","function":{"name":"h"}},
		{"id":"d","type":"function","function":{"name":"i","arguments":{"x":1}}}
	]},"finish_reason":"tool_calls"}]}`
	r, err := openai.New(llm.Config{}).ParseResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ToolCalls) != 4 {
		t.Fatalf("got %+v", r.ToolCalls)
	}
	for _, tc := range r.ToolCalls[:3] {
		if tc.Arguments == nil || len(tc.Arguments) != 0 {
			t.Errorf("%s: want {}, got %#v", tc.Name, tc.Arguments)
		}
	}
	if r.ToolCalls[3].Arguments["x"] != 1.0 {
		t.Errorf("object arguments: %#v", r.ToolCalls[3].Arguments)
	}
	if r.Usage != nil {
		t.Errorf("usage without usage: %+v", r.Usage)
	}

	for _, args := range []string{`"{\"city\": \"Par"`, `"[1,2]"`, `"42"`} {
		bad := `{"choices":[{"message":{"tool_calls":[{"id":"x","type":"function","function":{"name":"get_weather","arguments":` + args + `}}]}}]}`
		_, err := openai.New(llm.Config{}).ParseResponse([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), "get_weather") {
			t.Errorf("arguments %s: want an error naming get_weather, got %v", args, err)
		}
	}
}

func TestParseGeneratesUniqueIDs(t *testing.T) {
	t.Parallel()
	body := `{"choices":[{"message":{"role":"assistant","content":"","tool_calls":[
		{"type":"function","function":{"name":"get_weather","arguments":"{}"}},
		{"id":"","type":"function","function":{"name":"get_weather","arguments":"{}"}},
		{"id":"dup","type":"function","function":{"name":"get_time","arguments":"{}"}},
		{"id":"dup","type":"function","function":{"name":"get_time","arguments":"{}"}}
	]}}]}`
	r, err := openai.New(llm.Config{}).ParseResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tc := range r.ToolCalls {
		if tc.ID == "" || tc.ID == tc.Name || seen[tc.ID] {
			t.Fatalf("bad or duplicate id %q in %+v", tc.ID, r.ToolCalls)
		}
		seen[tc.ID] = true
	}
	if r.ToolCalls[2].ID != "dup" {
		t.Errorf("a provider id was replaced: %q", r.ToolCalls[2].ID)
	}
	for _, i := range []int{0, 1, 3} {
		if !strings.HasPrefix(r.ToolCalls[i].ID, "call_") || len(r.ToolCalls[i].ID) != len("call_")+24 {
			t.Errorf("generated id %q", r.ToolCalls[i].ID)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	a := openai.New(llm.Config{})
	if _, err := a.ParseResponse([]byte(`not json`)); err == nil {
		t.Error("no error for invalid JSON")
	}
	if _, err := a.ParseResponse([]byte(`{"choices":[]}`)); err == nil {
		t.Error("no error for no choices")
	}
	_, err := a.ParseResponse([]byte(`{"error":{"message":"model overloaded","type":"server_error"}}`))
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Message != "model overloaded" {
		t.Errorf("error body: got %v", err)
	}
}

func textBody(content string) []byte {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{
		"message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}}})
	return b
}

func TestTextToolCallRecovery(t *testing.T) {
	t.Parallel()
	tools := weatherTools()
	cases := []struct {
		name, content, rest string
		calls               []llm.ToolCall // ids ignored
	}{
		{"bare object", `{"name": "get_weather", "arguments": {"city": "Paris"}}`, "",
			[]llm.ToolCall{{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}}}},
		{"parameters, fenced", "```json\n{\"name\": \"get_time\", \"parameters\": {\"city\": \"Oslo\"}}\n```", "",
			[]llm.ToolCall{{Name: "get_time", Arguments: map[string]any{"city": "Oslo"}}}},
		{"string arguments", `{"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}`, "",
			[]llm.ToolCall{{Name: "get_weather", Arguments: map[string]any{"city": "Rome"}}}},
		{"two tagged blocks with text", "Checking both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
			"Checking both.",
			[]llm.ToolCall{{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}}, {Name: "get_time", Arguments: map[string]any{"city": "Paris"}}}},
		{"unclosed tagged block", "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}", "",
			[]llm.ToolCall{{Name: "get_time", Arguments: map[string]any{}}}},
		{"tagged block naming an unknown tool stays text", "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>",
			"<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>", nil},
		{"unknown name", `{"name": "Bob", "arguments": {"age": 3}}`, `{"name": "Bob", "arguments": {"age": 3}}`, nil},
		{"no arguments key", `{"name": "get_time"}`, `{"name": "get_time"}`, nil},
		{"object inside prose", `Call {"name": "get_time", "arguments": {}} now`, `Call {"name": "get_time", "arguments": {}} now`, nil},
		{"plain text", "It is sunny.", "It is sunny.", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := openai.ParseResponseFor(textBody(c.content), tools)
			if err != nil {
				t.Fatal(err)
			}
			if r.Content != c.rest {
				t.Errorf("content %q, want %q", r.Content, c.rest)
			}
			if len(r.ToolCalls) != len(c.calls) {
				t.Fatalf("calls %+v, want %+v", r.ToolCalls, c.calls)
			}
			seen := map[string]bool{}
			for i, tc := range r.ToolCalls {
				if !strings.HasPrefix(tc.ID, "call_") || seen[tc.ID] {
					t.Errorf("id %q", tc.ID)
				}
				seen[tc.ID] = true
				if tc.Name != c.calls[i].Name || !reflect.DeepEqual(tc.Arguments, c.calls[i].Arguments) {
					t.Errorf("call %d: %+v, want %+v", i, tc, c.calls[i])
				}
			}
		})
	}
	// Without the request's tools (ParseResponse) nothing is recovered.
	r, err := openai.New(llm.Config{}).ParseResponse(textBody(`{"name": "get_weather", "arguments": {"city": "Paris"}}`))
	if err != nil || len(r.ToolCalls) != 0 {
		t.Fatalf("recovered without tools: %+v %v", r, err)
	}
}

// server is an httptest server that checks every request strictly and
// answers with the queued replies in turn.
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
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
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
	want, err := openai.New(llm.Config{BaseURL: "http://127.0.0.1/v1"}).PrepareRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	validateRequest(t, want)
	srv, n := newServer(t, want, reply{status: 200, body: string(readFixture(t, "openai_chat_tool_calls.json"))})
	a := openai.New(llm.Config{BaseURL: srv.URL + "/v1/", APIKey: testKey})
	r, err := a.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 1 || len(r.ToolCalls) != 2 || r.ToolCalls[1].Name != "get_stock_price" || r.Usage.InputTokens != 149 {
		t.Fatalf("calls=%d response %+v", n.Load(), r)
	}
}

func TestChatRecoversTextToolCalls(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, nil, reply{status: 200, body: string(textBody(`<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>`))})
	a := openai.New(llm.Config{BaseURL: srv.URL + "/v1", APIKey: testKey})
	r, err := a.Chat(context.Background(), conversation())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "get_weather" || r.ToolCalls[0].Arguments["city"] != "Lima" || r.Content != "" {
		t.Fatalf("got %+v", r)
	}
}

func TestChatRetriesAfterRetryAfter(t *testing.T) {
	t.Parallel()
	srv, n := newServer(t, nil,
		reply{status: 429, headers: map[string]string{"Retry-After": "1"}, body: `{"error":{"message":"Rate limit reached","type":"requests"}}`},
		reply{status: 200, body: string(readFixture(t, "openai_chat_final.json"))})
	a := openai.New(llm.Config{BaseURL: srv.URL + "/v1", APIKey: testKey})
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
	if r.StopReason != "stop" {
		t.Fatalf("got %+v", r)
	}
}

func TestChatBadRequest(t *testing.T) {
	t.Parallel()
	srv, n := newServer(t, nil, reply{status: 400, body: `{"error":{"message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.","type":"invalid_request_error","param":"messages.[3].role","code":null}}`})
	a := openai.New(llm.Config{BaseURL: srv.URL + "/v1", APIKey: testKey})
	_, err := a.Chat(context.Background(), conversation())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 400 || pe.Provider != "openai" ||
		pe.Message != "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'." {
		t.Fatalf("got %#v", err)
	}
	if n.Load() != 1 {
		t.Fatalf("400 was retried: %d attempts", n.Load())
	}
	if strings.Contains(err.Error(), testKey) {
		t.Fatal("key in error")
	}
}

func TestChatServerErrorsExhaustRetries(t *testing.T) {
	t.Parallel()
	// The server echoes the key back; it must not reach the error.
	srv, n := newServer(t, nil, reply{status: 500, body: `{"error":{"message":"internal error for key ` + testKey + `"}}`})
	a := openai.New(llm.Config{BaseURL: srv.URL + "/v1", APIKey: testKey, MaxRetries: 2})
	_, err := a.Chat(context.Background(), conversation())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 500 || !strings.Contains(pe.Message, "internal error") {
		t.Fatalf("got %#v", err)
	}
	if n.Load() != 3 {
		t.Fatalf("attempts %d, want 3 (1 + MaxRetries)", n.Load())
	}
	if strings.Contains(err.Error(), testKey) {
		t.Fatalf("key in error: %v", err)
	}
}

// TestPrepareRequestSendsFormattedToolResult: a tool message the loop
// formatted with FormatToolResult is sent as it is.
func TestPrepareRequestSendsFormattedToolResult(t *testing.T) {
	t.Parallel()
	a := openai.New(llm.Config{})
	res := llm.ToolResult{Success: true, Output: json.RawMessage(`{"pong":true}`)}
	body, err := a.PrepareRequest(llm.Request{Model: "m", Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "hi"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "ping"}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Formatted: a.FormatToolResult("c1", "ping", res)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, body, `{"model":"m","messages":[
		{"role":"user","content":"hi"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ping","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"{\"pong\":true}"}]}`)
}
