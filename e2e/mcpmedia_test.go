package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestImageResultInEveryProviderShape: the MCP fixture (a stdio backend
// here) answers test_image_content with an MCP image; /route answers it
// to Claude as a tool_result image block, to the OpenAI Responses API as
// an input_image, to Chat Completions as text with a marker (no base64).
func TestImageResultInEveryProviderShape(t *testing.T) {
	t.Parallel()
	router, _ := startRouter(t, fmt.Sprintf(`
mcp_servers:
  - name: fixture
    command: [%q, -stdio]
    prefix: ""
`, fixtureBin(t)))
	waitTools(t, router, "test_image_content")
	route := func(call string) map[string]any {
		t.Helper()
		var tc any
		if err := json.Unmarshal([]byte(call), &tc); err != nil {
			t.Fatal(err)
		}
		r := do(t, http.MethodPost, router.URL()+"/route", map[string]any{"plan_id": "media", "tool_call": tc})
		if r.Status != http.StatusOK {
			t.Fatalf("POST /route = %d %s", r.Status, r.Body)
		}
		res := r.JSON(t)
		if res["success"] != true {
			t.Fatalf("route: %v", res)
		}
		return res
	}
	pr := func(res map[string]any) string {
		b, _ := json.Marshal(res["provider_result"])
		return string(b)
	}

	claude := pr(route(`{"type":"tool_use","id":"toolu_01","name":"test_image_content","input":{}}`))
	if !strings.Contains(claude, `{"source":{"data":"iVBORw0KGgo`) || !strings.Contains(claude, `"media_type":"image/png","type":"base64"},"type":"image"}`) ||
		!strings.Contains(claude, `"tool_use_id":"toolu_01","type":"tool_result"`) {
		t.Errorf("anthropic provider_result = %s", claude)
	}
	responses := pr(route(`{"type":"function_call","id":"fc_1","call_id":"call_r","name":"test_image_content","arguments":"{}"}`))
	if !strings.Contains(responses, `{"image_url":"data:image/png;base64,iVBORw0KGgo`) || !strings.Contains(responses, `"type":"input_image"`) {
		t.Errorf("openai responses provider_result = %s", responses)
	}
	chat := pr(route(`{"id":"call_c","type":"function","function":{"name":"test_image_content","arguments":"{}"}}`))
	if !strings.Contains(chat, `"content":"[image: image/png, 70 bytes]"`) || strings.Contains(chat, "iVBORw0KGgo") {
		t.Errorf("openai chat provider_result = %s", chat)
	}
	gemini := pr(route(`{"functionCall":{"id":"g1","name":"test_image_content","args":{}}}`))
	if !strings.Contains(gemini, `"parts":[{"inlineData":{"data":"iVBORw0KGgo`) {
		t.Errorf("gemini provider_result = %s", gemini)
	}
}
