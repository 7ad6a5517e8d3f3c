package responses_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
	"github.com/toolrouterd/toolrouterd/internal/llm/responses"
)

const testKey = "sk-test-responses-0123456789"

func tools() []llm.Tool {
	return []llm.Tool{
		{Name: "get_weather", Description: "Weather for a city", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}},
		{Name: "snapshot", Description: "A picture"},
	}
}

// pixel is a 1×1 PNG as an MCP image result.
const pixel = `{"content":[{"type":"text","text":"the picture"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="}]}`

// loop drives the conversation the way internal/agent does: ask, answer
// every call with FormatToolResult, ask again.
func loop(t *testing.T, a llm.Adapter, req llm.Request, results map[string]llm.ToolResult) (llm.Response, llm.Request) {
	t.Helper()
	for range 5 {
		resp, err := a.Chat(context.Background(), req)
		if err != nil {
			t.Fatalf("Chat: %v", err)
		}
		if len(resp.ToolCalls) == 0 {
			return resp, req
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls, Provider: resp.Provider})
		for _, tc := range resp.ToolCalls {
			res := results[tc.Name]
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: res.Text(),
				IsError: !res.Success, Formatted: a.FormatToolResult(tc.ID, tc.Name, res)})
		}
	}
	t.Fatal("the loop did not end")
	return llm.Response{}, req
}

func TestMultiTurnParallelCallsAgainstFake(t *testing.T) {
	fake := llmtest.New(t, llmtest.OpenAIResponses, llmtest.WithAPIKey(testKey), llmtest.WithModel("gpt-5-mini"))
	fake.Script(
		llmtest.Turn{Text: "Checking.", ToolCalls: []llmtest.Call{{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}}, {Name: "snapshot"}}},
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "get_weather", Arguments: map[string]any{"city": "Rome"}}}},
		llmtest.Turn{Text: "21°C in both.", Usage: &llmtest.Usage{InputTokens: 100, OutputTokens: 7}},
	)
	a := responses.New(llm.Config{BaseURL: fake.URL, APIKey: testKey})
	results := map[string]llm.ToolResult{
		"get_weather": {Success: true, Output: json.RawMessage(`{"temp_c":21}`)},
		"snapshot":    {Success: true, Output: json.RawMessage(pixel)},
	}
	resp, _ := loop(t, a, llm.Request{Model: "gpt-5-mini", Tools: tools(), ToolChoice: "auto", Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "Be terse."}, {Role: llm.RoleUser, Content: "Weather?"}}}, results)
	if resp.Content != "21°C in both." || resp.Usage == nil || resp.Usage.InputTokens != 100 || resp.Usage.OutputTokens != 7 {
		t.Fatalf("final response: %+v", resp)
	}
	if rej := fake.Rejections(); len(rej) > 0 {
		t.Fatalf("the fake rejected: %v", rej)
	}
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests: want 3, got %d", len(reqs))
	}
	last := reqs[2].Body
	if last["store"] != false || last["instructions"] != "Be terse." {
		t.Errorf("store/instructions: %v %v", last["store"], last["instructions"])
	}
	var types []string
	var image bool
	for _, it := range last["input"].([]any) {
		m := it.(map[string]any)
		types = append(types, m["type"].(string))
		if out, ok := m["output"].([]any); ok {
			for _, o := range out {
				image = image || o.(map[string]any)["type"] == "input_image"
			}
		}
	}
	want := "message reasoning message function_call function_call function_call_output function_call_output reasoning function_call function_call_output"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("input items:\n got %s\nwant %s", got, want)
	}
	if !image {
		t.Error("the snapshot result did not go back as an input_image item")
	}
}

func TestFakeRefusesLostReasoning(t *testing.T) {
	fake := llmtest.New(t, llmtest.OpenAIResponses)
	fake.Script(llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}}}})
	a := responses.New(llm.Config{BaseURL: fake.URL, MaxRetries: -1})
	req := llm.Request{Model: "gpt-5-mini", Tools: tools(), Messages: []llm.Message{{Role: llm.RoleUser, Content: "Weather?"}}}
	resp, err := a.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// The turn without its output items (reasoning lost): refused.
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: resp.ToolCalls[0].ID, Name: "get_weather", Content: "21"})
	_, err = a.Chat(context.Background(), req)
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 400 || !strings.Contains(pe.Message, "reasoning item") {
		t.Fatalf("want a 400 about the reasoning item, got %v", err)
	}
}

func TestParseFailedAndIncomplete(t *testing.T) {
	a := responses.New(llm.Config{})
	for body, want := range map[string]string{
		`{"object":"response","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`:                     "boom",
		`{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}`:              "max_output_tokens",
		`{"object":"response","status":"completed","output":[{"type":"function_call","call_id":"c1","name":"f","arguments":"["}]}`: "not a JSON object",
	} {
		if _, err := a.ParseResponse([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want an error with %q, got %v", body, want, err)
		}
	}
}
