package format_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// A 1x1 PNG (the MCP conformance suite's) and a tiny WAV.
const (
	png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	wav = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

// mcpImageResult is a CallToolResult with text, an image and audio.
var mcpImageResult = json.RawMessage(`{"content":[{"type":"text","text":"Here is the chart."},` +
	`{"type":"image","data":"` + png + `","mimeType":"image/png"},{"type":"audio","data":"` + wav + `","mimeType":"audio/wav"}]}`)

// TestMultimodalToolResult: an MCP result with an image becomes every
// provider's native blocks (golden), and a text-only provider gets
// markers, never base64.
func TestMultimodalToolResult(t *testing.T) {
	t.Parallel()
	const text = `"Here is the chart."`
	const marker = `[audio: audio/wav, 44 bytes]`
	tests := []struct {
		name, payload, want string
	}{
		{"openai chat", `{"id":"call_abc","type":"function","function":{"name":"chart","arguments":"{}"}}`,
			`{"role":"tool","tool_call_id":"call_abc","content":"Here is the chart.\n[image: image/png, 70 bytes]\n` + marker + `"}`},
		{"openai responses", `{"type":"function_call","id":"fc_1","call_id":"call_r","name":"chart","arguments":"{}"}`,
			`{"type":"function_call_output","call_id":"call_r","output":[{"type":"input_text","text":` + text + `},` +
				`{"type":"input_image","image_url":"data:image/png;base64,` + png + `"},{"type":"input_text","text":"` + marker + `"}]}`},
		{"anthropic", `{"type":"tool_use","id":"toolu_01","name":"chart","input":{}}`,
			`{"type":"tool_result","tool_use_id":"toolu_01","is_error":false,"content":[{"type":"text","text":` + text + `},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}},{"type":"text","text":"` + marker + `"}]}`},
		{"bedrock", `{"toolUse":{"toolUseId":"tooluse_1","name":"chart","input":{}}}`,
			`{"toolResult":{"toolUseId":"tooluse_1","status":"success","content":[{"text":` + text + `},` +
				`{"image":{"format":"png","source":{"bytes":"` + png + `"}}},{"text":"` + marker + `"}]}}`},
		{"gemini", `{"functionCall":{"id":"fc_g","name":"chart","args":{}}}`,
			`{"functionResponse":{"id":"fc_g","name":"chart","response":{"output":"Here is the chart.\n` + marker + `"},` +
				`"parts":[{"inlineData":{"mimeType":"image/png","data":"` + png + `"}}]}}`},
		{"langchain", `{"name":"chart","args":{},"id":"call_lc","type":"tool_call"}`,
			`{"type":"tool","tool_call_id":"call_lc","name":"chart","status":"success","content":[{"type":"text","text":` + text + `},` +
				`{"type":"image","base64":"` + png + `","mime_type":"image/png"},{"type":"audio","base64":"` + wav + `","mime_type":"audio/wav"}]}`},
		{"mcp", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"chart","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":7,"result":{"isError":false,"content":` + string(mcpImageResult[len(`{"content":`):len(mcpImageResult)-1]) + `}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call := normalize(t, tt.payload)
			// From an MCP backend (its CallToolResult), and from an HTTP
			// tool replying with the same content blocks.
			for _, got := range []any{
				format.ToolResultContent(call, true, json.RawMessage(`"Here is the chart."`), "", mcpImageResult),
				format.ToolResultContent(call, true, mcpImageResult, "", nil),
			} {
				assertJSON(t, got, tt.want)
			}
		})
	}
}

// TestMultimodalOnlyWithMedia: text-only content, failures and outputs that
// merely look like content keep the usual result shape.
func TestMultimodalOnlyWithMedia(t *testing.T) {
	t.Parallel()
	call := normalize(t, `{"type":"tool_use","id":"toolu_01","name":"chart","input":{}}`)
	for _, tc := range []struct{ name, out, want string }{
		{"text only", `{"content":[{"type":"text","text":"hi"}]}`, `{"type":"tool_result","tool_use_id":"toolu_01","content":"{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}","is_error":false}`},
		{"unknown block type", `{"content":[{"type":"picture","data":"x"}]}`, `{"type":"tool_result","tool_use_id":"toolu_01","content":"{\"content\":[{\"type\":\"picture\",\"data\":\"x\"}]}","is_error":false}`},
		{"image without data", `{"content":[{"type":"image","mimeType":"image/png"}]}`, `{"type":"tool_result","tool_use_id":"toolu_01","content":"{\"content\":[{\"type\":\"image\",\"mimeType\":\"image/png\"}]}","is_error":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertJSON(t, format.ToolResultContent(call, true, json.RawMessage(tc.out), "", nil), tc.want)
		})
	}
	assertJSON(t, format.ToolResultContent(call, false, nil, "boom", mcpImageResult),
		`{"type":"tool_result","tool_use_id":"toolu_01","content":"boom","is_error":true}`)
	// An image type Anthropic does not take is a marker.
	tiff := json.RawMessage(`{"content":[{"type":"image","data":"AAAA","mimeType":"image/tiff"}]}`)
	assertJSON(t, format.ToolResultContent(call, true, tiff, "", nil),
		`{"type":"tool_result","tool_use_id":"toolu_01","is_error":false,"content":[{"type":"text","text":"[image: image/tiff, 3 bytes]"}]}`)
}

// TestMultimodalOpenAISchemas checks the OpenAI shapes against OpenAI's
// own schema (testdata/openai-subset.schema.json).
func TestMultimodalOpenAISchemas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ payload, def string }{
		{`{"type":"function_call","id":"fc_1","call_id":"call_r","name":"chart","arguments":"{}"}`, "FunctionCallOutputItemParam"},
		{`{"id":"call_abc","type":"function","function":{"name":"chart","arguments":"{}"}}`, "ChatCompletionRequestToolMessage"},
	} {
		got := format.ToolResultContent(normalize(t, tc.payload), true, nil, "", mcpImageResult)
		if err := openAISchema(t, tc.def).Validate(asInstance(t, got)); err != nil {
			t.Errorf("%s: %v", tc.def, err)
		}
		if b, _ := json.Marshal(got); tc.def == "ChatCompletionRequestToolMessage" && strings.Contains(string(b), png) {
			t.Errorf("base64 in a Chat Completions tool message: %s", b)
		}
	}
}

func openAISchema(t *testing.T, def string) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile("testdata/openai-subset.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://toolrouterd.test/openai-subset.schema.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url + "#/components/schemas/" + def)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func normalize(t *testing.T, payload string) toolrouter.Call {
	t.Helper()
	c, err := format.Normalize(decode(t, payload))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func assertJSON(t *testing.T, got any, want string) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("got  %s\nwant %s", gb, wb)
	}
}
