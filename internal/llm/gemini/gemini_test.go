package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/llm/gemini"
	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
)

const testKey = "AIza-test-gemini-0123456789"

func tools() []llm.Tool {
	return []llm.Tool{
		{Name: "get_weather", Description: "Weather for a city", Parameters: map[string]any{
			"type": "object", "additionalProperties": false,
			"properties": map[string]any{"city": map[string]any{"type": []any{"string", "null"}}}, "required": []any{"city"}}},
		{Name: "snapshot", Description: "A picture"},
	}
}

const pixel = `{"content":[{"type":"text","text":"the picture"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="}]}`

func loop(t *testing.T, a llm.Adapter, req llm.Request, results map[string]llm.ToolResult) llm.Response {
	t.Helper()
	for range 5 {
		resp, err := a.Chat(context.Background(), req)
		if err != nil {
			t.Fatalf("Chat: %v", err)
		}
		if len(resp.ToolCalls) == 0 {
			return resp
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls, Provider: resp.Provider})
		for _, tc := range resp.ToolCalls {
			res := results[tc.Name]
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: res.Text(),
				IsError: !res.Success, Formatted: a.FormatToolResult(tc.ID, tc.Name, res)})
		}
	}
	t.Fatal("the loop did not end")
	return llm.Response{}
}

// A Gemini 3 model: parallel calls (without ids, then with ids), the
// thought signature carried back, an image result as inlineData, a failed
// call as {"error": …}.
func TestMultiTurnParallelCallsAgainstFake(t *testing.T) {
	fake := llmtest.New(t, llmtest.Gemini, llmtest.WithAPIKey(testKey), llmtest.WithModel("gemini-3-flash-preview"))
	fake.Script(
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}}, {Name: "snapshot"}}},
		llmtest.Turn{Text: "One more.", ToolCalls: []llmtest.Call{{ID: "fc-1", Name: "get_weather", Arguments: map[string]any{"city": "Rome"}}, {ID: "fc-2", Name: "get_weather", Arguments: map[string]any{"city": "Oslo"}}}},
		llmtest.Turn{Text: "Sunny.", Usage: &llmtest.Usage{InputTokens: 90, OutputTokens: 3}},
	)
	a := gemini.New(llm.Config{BaseURL: fake.URL, APIKey: testKey})
	results := map[string]llm.ToolResult{
		"get_weather": {Success: false, Error: "station offline"},
		"snapshot":    {Success: true, Output: json.RawMessage(pixel)},
	}
	resp := loop(t, a, llm.Request{Model: "gemini-3-flash-preview", Tools: tools(), ToolChoice: "auto", MaxTokens: 500, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "Be terse."}, {Role: llm.RoleUser, Content: "Weather?"}}}, results)
	if resp.Content != "Sunny." || resp.Usage == nil || resp.Usage.InputTokens != 90 || resp.Usage.OutputTokens != 3 {
		t.Fatalf("final response: %+v", resp)
	}
	if rej := fake.Rejections(); len(rej) > 0 {
		t.Fatalf("the fake rejected: %v", rej)
	}
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests: want 3, got %d", len(reqs))
	}
	if got := reqs[0].Header.Get("x-goog-api-key"); got != testKey {
		t.Errorf("x-goog-api-key: %q", got)
	}
	raw := string(reqs[2].Raw)
	for _, want := range []string{`"thoughtSignature"`, `"inlineData"`, `"id":"fc-1"`, `"error":"error: station offline"`, `"mode":"AUTO"`, `"maxOutputTokens":500`} {
		if !strings.Contains(raw, want) {
			t.Errorf("the last request lacks %s:\n%s", want, raw)
		}
	}
	contents := reqs[2].Body["contents"].([]any)
	first := contents[2].(map[string]any)["parts"].([]any)[0].(map[string]any)["functionResponse"].(map[string]any)
	if _, has := first["id"]; has {
		t.Errorf("a functionResponse answering a call without id has one: %v", first)
	}
}

// Without the model turn as the API sent it, the Gemini 3 fake refuses
// the request, as the API does.
func TestFakeRefusesMissingThoughtSignature(t *testing.T) {
	fake := llmtest.New(t, llmtest.Gemini)
	fake.Script(llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}}}})
	a := gemini.New(llm.Config{BaseURL: fake.URL, MaxRetries: -1})
	req := llm.Request{Model: "gemini-3-pro-preview", Tools: tools(), Messages: []llm.Message{{Role: llm.RoleUser, Content: "Weather?"}}}
	resp, err := a.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: resp.ToolCalls[0].ID, Name: "get_weather", Content: "21"})
	_, err = a.Chat(context.Background(), req)
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 400 || !strings.Contains(pe.Message, "thought_signature") {
		t.Fatalf("want a 400 about the thought signature, got %v", err)
	}
}

func TestBlockedAnswersAreErrors(t *testing.T) {
	fake := llmtest.New(t, llmtest.Gemini)
	fake.Script(llmtest.Turn{FinishReason: "SAFETY"})
	a := gemini.New(llm.Config{BaseURL: fake.URL})
	_, err := a.Chat(context.Background(), llm.Request{Model: "gemini-2.5-flash", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "finishReason SAFETY") {
		t.Fatalf("want an error naming SAFETY, got %v", err)
	}
	_, err = a.ParseResponse([]byte(`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}}`))
	if err == nil || !strings.Contains(err.Error(), "PROHIBITED_CONTENT") {
		t.Fatalf("blocked prompt: want an error naming PROHIBITED_CONTENT, got %v", err)
	}
}
