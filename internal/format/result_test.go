package format_test

import (
	"encoding/json"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/format"
)

// TestToolResult normalizes a real call of every format and checks the
// result message for success and failure, keyed by the provider's own id.
func TestToolResult(t *testing.T) {
	t.Parallel()
	out := json.RawMessage(`{"temp": 21}`)
	const boom = "Tool 'w' not found"
	tests := []struct {
		name    string
		payload string
		ok      string // want on success with out
		fail    string // want on failure with boom and no output
	}{
		{
			name:    "openai chat",
			payload: `{"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":"{}"}}`,
			ok:      `{"role":"tool","tool_call_id":"call_abc","content":"{\"temp\": 21}"}`,
			fail:    `{"role":"tool","tool_call_id":"call_abc","content":"Tool 'w' not found"}`,
		},
		{
			// Gemini's OpenAI-compatible endpoint sends "id": "": the
			// answer echoes "" so that the client pairs it with its call.
			name:    "openai chat, empty id (Gemini's OpenAI-compatible endpoint)",
			payload: `{"id":"","type":"function","function":{"name":"get_weather","arguments":"{}"}}`,
			ok:      `{"role":"tool","tool_call_id":"","content":"{\"temp\": 21}"}`,
			fail:    `{"role":"tool","tool_call_id":"","content":"Tool 'w' not found"}`,
		},
		{
			name:    "openai responses, empty call_id",
			payload: `{"type":"function_call","id":"fc_1","call_id":"","name":"get_weather","arguments":"{}"}`,
			ok:      `{"type":"function_call_output","call_id":"","output":"{\"temp\": 21}"}`,
			fail:    `{"type":"function_call_output","call_id":"","output":"Tool 'w' not found"}`,
		},
		{
			name:    "openai responses",
			payload: `{"type":"function_call","id":"fc_1","call_id":"call_r","name":"get_weather","arguments":"{}"}`,
			ok:      `{"type":"function_call_output","call_id":"call_r","output":"{\"temp\": 21}"}`,
			fail:    `{"type":"function_call_output","call_id":"call_r","output":"Tool 'w' not found"}`,
		},
		{
			name:    "anthropic",
			payload: `{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}`,
			ok:      `{"type":"tool_result","tool_use_id":"toolu_01","content":"{\"temp\": 21}","is_error":false}`,
			fail:    `{"type":"tool_result","tool_use_id":"toolu_01","content":"Tool 'w' not found","is_error":true}`,
		},
		{
			name:    "langchain",
			payload: `{"name":"get_weather","args":{},"id":"call_lc","type":"tool_call"}`,
			ok:      `{"type":"tool","tool_call_id":"call_lc","name":"get_weather","content":"{\"temp\": 21}","status":"success"}`,
			fail:    `{"type":"tool","tool_call_id":"call_lc","name":"get_weather","content":"Tool 'w' not found","status":"error"}`,
		},
		{
			name:    "gemini with id",
			payload: `{"functionCall":{"id":"fc-9","name":"get_weather","args":{}},"thoughtSignature":"sig"}`,
			ok:      `{"functionResponse":{"id":"fc-9","name":"get_weather","response":{"output":{"temp":21}}}}`,
			fail:    `{"functionResponse":{"id":"fc-9","name":"get_weather","response":{"error":"Tool 'w' not found"}}}`,
		},
		{
			name:    "gemini without id",
			payload: `{"functionCall":{"name":"get_weather","args":{}}}`,
			ok:      `{"functionResponse":{"name":"get_weather","response":{"output":{"temp":21}}}}`,
			fail:    `{"functionResponse":{"name":"get_weather","response":{"error":"Tool 'w' not found"}}}`,
		},
		{
			name:    "bedrock",
			payload: `{"toolUse":{"toolUseId":"tooluse_b","name":"get_weather","input":{}}}`,
			ok:      `{"toolResult":{"toolUseId":"tooluse_b","content":[{"json":{"temp":21}}],"status":"success"}}`,
			fail:    `{"toolResult":{"toolUseId":"tooluse_b","content":[{"text":"Tool 'w' not found"}],"status":"error"}}`,
		},
		{
			name:    "mcp",
			payload: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather","arguments":{}}}`,
			ok:      `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"temp\": 21}"}],"structuredContent":{"temp":21},"isError":false}}`,
			fail:    `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Tool 'w' not found"}],"isError":true}}`,
		},
		{
			name:    "mcp string id",
			payload: `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"get_weather"}}`,
			ok:      `{"jsonrpc":"2.0","id":"a-1","result":{"content":[{"type":"text","text":"{\"temp\": 21}"}],"structuredContent":{"temp":21},"isError":false}}`,
			fail:    `{"jsonrpc":"2.0","id":"a-1","result":{"content":[{"type":"text","text":"Tool 'w' not found"}],"isError":true}}`,
		},
		{
			name:    "unknown",
			payload: `{"name":"get_weather","parameters":{},"id":"u-1"}`,
			ok:      `{"tool_call_id":"u-1","name":"get_weather","success":true,"output":{"temp":21},"error":null}`,
			fail:    `{"tool_call_id":"u-1","name":"get_weather","success":false,"output":null,"error":"Tool 'w' not found"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := format.Normalize(decode(t, tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, format.ToolResult(c, true, out, ""), tt.ok)
			jsonEqual(t, format.ToolResult(c, false, nil, boom), tt.fail)
		})
	}
}

// TestToolResultOutputs checks string, non-object, empty and invalid outputs.
func TestToolResultOutputs(t *testing.T) {
	t.Parallel()
	chat, _ := format.Normalize(decode(t, `{"id":"c1","function":{"name":"f","arguments":"{}"}}`))
	bedrock, _ := format.Normalize(decode(t, `{"toolUse":{"toolUseId":"t1","name":"f","input":{}}}`))
	mcp, _ := format.Normalize(decode(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f"}}`))
	unknown, _ := format.Normalize(decode(t, `{"name":"f"}`))
	gemini, _ := format.Normalize(decode(t, `{"functionCall":{"name":"f"}}`))

	// A JSON string output is its own text.
	jsonEqual(t, format.ToolResult(chat, true, json.RawMessage(` "héllo \"you\"" `), ""),
		`{"role":"tool","tool_call_id":"c1","content":"héllo \"you\""}`)
	jsonEqual(t, format.ToolResult(bedrock, true, json.RawMessage(`"hi"`), ""),
		`{"toolResult":{"toolUseId":"t1","content":[{"text":"hi"}],"status":"success"}}`)
	// Non-object output: text only, no structuredContent.
	jsonEqual(t, format.ToolResult(mcp, true, json.RawMessage(`[1,2]`), ""),
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"[1,2]"}],"isError":false}}`)
	jsonEqual(t, format.ToolResult(bedrock, true, json.RawMessage(`42`), ""),
		`{"toolResult":{"toolUseId":"t1","content":[{"text":"42"}],"status":"success"}}`)
	jsonEqual(t, format.ToolResult(gemini, true, json.RawMessage(`"sunny"`), ""),
		`{"functionResponse":{"name":"f","response":{"output":"sunny"}}}`)
	// No output on success.
	jsonEqual(t, format.ToolResult(chat, true, nil, ""), `{"role":"tool","tool_call_id":"c1","content":"null"}`)
	jsonEqual(t, format.ToolResult(unknown, true, nil, ""),
		`{"tool_call_id":"","name":"f","success":true,"output":null,"error":null}`)
	// Output that is not JSON must not break marshalling.
	jsonEqual(t, format.ToolResult(unknown, true, json.RawMessage(`{oops`), ""),
		`{"tool_call_id":"","name":"f","success":true,"output":"{oops","error":null}`)
	jsonEqual(t, format.ToolResult(mcp, true, json.RawMessage(`{oops`), ""),
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{oops"}],"isError":false}}`)
	// A failure keeps a partial output out of the provider shapes but the
	// unknown shape reports it.
	jsonEqual(t, format.ToolResult(unknown, false, json.RawMessage(`{"partial":true}`), "timed out"),
		`{"tool_call_id":"","name":"f","success":false,"output":{"partial":true},"error":"timed out"}`)
	jsonEqual(t, format.ToolResult(bedrock, false, json.RawMessage(`{"partial":true}`), "timed out"),
		`{"toolResult":{"toolUseId":"t1","content":[{"text":"timed out"}],"status":"error"}}`)
	jsonEqual(t, format.ToolResult(gemini, false, json.RawMessage(`{"partial":true}`), ""),
		`{"functionResponse":{"name":"f","response":{"error":"tool call failed"}}}`)
	jsonEqual(t, format.ToolResult(mcp, false, json.RawMessage(`{"partial":true}`), "timed out"),
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"timed out"}],"isError":true}}`)
}

// TestEmptyProviderCallID: an id sent as "" counts as sent (the router then
// answers "" rather than its tc_ id); an absent or non-string one does not.
func TestEmptyProviderCallID(t *testing.T) {
	t.Parallel()
	for payload, has := range map[string]bool{
		`{"id":"","type":"function","function":{"name":"w","arguments":""}}`:            true,
		`{"type":"function_call","call_id":"","id":"fc_1","name":"w","arguments":"{}"}`: true,
		`{"type":"tool_use","id":"","name":"w","input":{}}`:                             true,
		`{"functionCall":{"id":"","name":"w","args":{}}}`:                               true,
		`{"toolUse":{"toolUseId":"","name":"w","input":{}}}`:                            true,
		`{"name":"w","args":{},"id":"","type":"tool_call"}`:                             true,
		`{"name":"w","parameters":{},"id":""}`:                                          true,
		`{"function":{"name":"w","arguments":{}}}`:                                      false,
		`{"functionCall":{"name":"w","args":{}}}`:                                       false,
		`{"name":"w","args":{},"id":null,"type":"tool_call"}`:                           false,
		`{"id":"","type":"function","function":{"name":"w","arguments":"{oops"}}`:       true, // a parse failure keeps the id
	} {
		c, _ := format.Normalize(decode(t, payload))
		if c.HasProviderCallID != has || c.ProviderCallID != "" {
			t.Errorf("%s: HasProviderCallID, ProviderCallID = %v, %q; want %v, \"\"", payload, c.HasProviderCallID, c.ProviderCallID, has)
		}
	}
}
