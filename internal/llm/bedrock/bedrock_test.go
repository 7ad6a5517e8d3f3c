package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/llm/bedrock"
	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
)

const accessKey = "AKIATESTBEDROCK00001"

func tools() []llm.Tool {
	return []llm.Tool{
		{Name: "get_weather", Description: "Weather for a city", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}},
		{Name: "snapshot"},
	}
}

const pixel = `{"content":[{"type":"text","text":"the picture"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="}]}`

// credentials puts keys the fake knows in the environment, where the
// default chain finds them.
func credentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", llmtest.BedrockSecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
}

func newAdapter(t *testing.T, url string, retries int) *bedrock.Adapter {
	t.Helper()
	a, err := bedrock.New(context.Background(), llm.Config{BaseURL: url, MaxRetries: retries}, "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestMultiTurnParallelCallsAgainstFake(t *testing.T) {
	credentials(t)
	fake := llmtest.New(t, llmtest.Bedrock, llmtest.WithAPIKey(accessKey), llmtest.WithModel("anthropic.claude-3-5-haiku-20241022-v1:0"))
	fake.Script(
		llmtest.Turn{Text: "Checking.", ToolCalls: []llmtest.Call{{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}}, {Name: "snapshot"}}},
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "get_weather", Arguments: map[string]any{"city": "Rome"}}}},
		llmtest.Turn{Text: "21°C.", Usage: &llmtest.Usage{InputTokens: 80, OutputTokens: 4}},
	)
	a := newAdapter(t, fake.Origin, 0)
	results := map[string]llm.ToolResult{
		"get_weather": {Success: true, Output: json.RawMessage(`{"temp_c":21}`)},
		"snapshot":    {Success: true, Output: json.RawMessage(pixel)},
	}
	req := llm.Request{Model: "anthropic.claude-3-5-haiku-20241022-v1:0", Tools: tools(), ToolChoice: "required", MaxTokens: 300,
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Be terse."}, {Role: llm.RoleUser, Content: "Weather?"}}}
	var resp llm.Response
	for range 5 {
		var err error
		if resp, err = a.Chat(context.Background(), req); err != nil {
			t.Fatalf("Chat: %v", err)
		}
		if len(resp.ToolCalls) == 0 {
			break
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls, Provider: resp.Provider})
		for _, tc := range resp.ToolCalls {
			res := results[tc.Name]
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: res.Text(), Formatted: a.FormatToolResult(tc.ID, tc.Name, res)})
		}
	}
	if resp.Content != "21°C." || resp.Usage == nil || resp.Usage.InputTokens != 80 || resp.Usage.OutputTokens != 4 {
		t.Fatalf("final response: %+v", resp)
	}
	if rej := fake.Rejections(); len(rej) > 0 {
		t.Fatalf("the fake rejected: %v", rej)
	}
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests: want 3, got %d", len(reqs))
	}
	if auth := reqs[0].Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential="+accessKey+"/") || !strings.Contains(auth, "/eu-west-1/bedrock/aws4_request") {
		t.Errorf("Authorization: %q", auth)
	}
	raw := string(reqs[2].Raw)
	for _, want := range []string{`"image":{"format":"png","source":{"bytes":"iVBOR`, `"json":{"temp_c":21}`, `"any":{}`, `"maxTokens":300`} {
		if !strings.Contains(raw, want) {
			t.Errorf("the last request lacks %s:\n%s", want, raw)
		}
	}
	// PrepareRequest is the body the SDK sends.
	body, err := a.PrepareRequest(req)
	if err != nil || !json.Valid(body) || !strings.Contains(string(body), `"toolUse"`) {
		t.Fatalf("PrepareRequest: %v %s", err, body)
	}
}

func TestFakeRefusesBadSignature(t *testing.T) {
	credentials(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	fake := llmtest.New(t, llmtest.Bedrock)
	a := newAdapter(t, fake.Origin, -1)
	_, err := a.Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 403 || !strings.Contains(pe.Message, "InvalidSignatureException") {
		t.Fatalf("want a 403 InvalidSignatureException, got %v", err)
	}
}

func TestStopReasonsAndParse(t *testing.T) {
	credentials(t)
	fake := llmtest.New(t, llmtest.Bedrock)
	fake.Script(llmtest.Turn{Text: "no", FinishReason: "guardrail_intervened"})
	a := newAdapter(t, fake.Origin, 0)
	_, err := a.Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err == nil || !strings.Contains(err.Error(), "guardrail_intervened") {
		t.Fatalf("want an error naming guardrail_intervened, got %v", err)
	}
	resp, err := a.ParseResponse([]byte(`{"output":{"message":{"role":"assistant","content":[
		{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"sig1"}}},
		{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather","input":{"city":"Paris","days":2}}}]}},
		"stopReason":"tool_use","usage":{"inputTokens":5,"outputTokens":6,"totalTokens":11,"cacheReadInputTokens":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "tooluse_1" || resp.ToolCalls[0].Arguments["city"] != "Paris" || resp.ToolCalls[0].Arguments["days"] != float64(2) ||
		resp.Usage.InputTokens != 7 || !strings.Contains(string(resp.Provider), "sig1") {
		t.Fatalf("parsed: %+v %s", resp, resp.Provider)
	}
	// The reasoning block goes back before the toolUse block.
	body, err := a.PrepareRequest(llm.Request{Model: "m", Tools: tools(), Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"},
		{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls, Provider: resp.Provider},
		{Role: llm.RoleTool, ToolCallID: "tooluse_1", Name: "get_weather", Content: "21"}}})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(body); !strings.Contains(s, `"reasoningContent":{"reasoningText":{"signature":"sig1","text":"hmm"}}`) ||
		strings.Index(s, "reasoningContent") > strings.Index(s, "toolUse") {
		t.Fatalf("request: %s", body)
	}
}

// An answer longer than llm.MaxResponseBytes stops there, as every other
// adapter's does (issue 32, finding 7), and is not retried.
func TestAnswerCapped(t *testing.T) {
	credentials(t)
	fake := llmtest.New(t, llmtest.Bedrock)
	fake.Always(llmtest.Turn{Text: strings.Repeat("a", llm.MaxResponseBytes)})
	a := newAdapter(t, fake.Origin, 2)
	_, err := a.Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "exceeds 32 MiB") {
		t.Fatalf("want the answer refused as too large, got %v", err)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Fatalf("a too-large answer was retried: %d requests", n)
	}
}

// An endpoint that echoes the request's headers in its error must not put
// the access key id or the session token in the run's error; nor may
// credentials in base_url's query string appear (issue 32, finding 9).
func TestErrorsScrubCredentials(t *testing.T) {
	credentials(t)
	const token = "IQoJb3JpZ2luX2VjEXAMPLE/session+token=="
	t.Setenv("AWS_SESSION_TOKEN", token)
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var dump strings.Builder
		_ = r.Header.Write(&dump)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-amzn-ErrorType", "ValidationException")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": "bad request: " + r.URL.String() + "\n" + dump.String()})
	}))
	t.Cleanup(echo.Close)
	const querySecret = "proxy-credential-0042"
	a := newAdapter(t, echo.URL+"/?auth="+querySecret, -1)
	_, err := a.Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != http.StatusBadRequest || !strings.Contains(pe.Message, "ValidationException") {
		t.Fatalf("want the endpoint's 400, got %v", err)
	}
	for _, secret := range []string{accessKey, token, querySecret, llmtest.BedrockSecretKey} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error carries %q: %v", secret, err)
		}
	}
	if !strings.Contains(err.Error(), "[REDACTED]") {
		t.Errorf("the echoed headers should show as redacted: %v", err)
	}
}
