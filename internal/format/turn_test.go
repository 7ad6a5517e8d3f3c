package format_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

var update = flag.Bool("update", false, "rewrite testdata/turns/golden from the code (review the diff)")

// answer builds the results the router gives the calls of t: each call
// succeeds with {"ok":true}, except a call named "broken", which fails;
// a call without a provider id is answered under its tc_ id, as the router
// does.
func answer(t *testing.T, turn *format.Turn) []*toolrouter.Result {
	t.Helper()
	results := make([]*toolrouter.Result, len(turn.Calls))
	for i, p := range turn.Calls {
		c, err := format.Normalize(p)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if !c.HasProviderCallID {
			c.ProviderCallID = fmt.Sprintf("tc_%024d", i)
		}
		ok, out, msg := true, json.RawMessage(`{"ok":true}`), ""
		if c.ToolName == "broken" {
			ok, out, msg = false, nil, "tool failed"
		}
		results[i] = &toolrouter.Result{ToolName: c.ToolName, Success: ok, Output: out, ProviderResult: format.ToolResult(c, ok, out, msg)}
	}
	return results
}

// turnGolden is what a golden file holds for one fixture.
type turnGolden struct {
	API      format.TurnAPI `json:"api"`
	Calls    []any          `json:"calls"`
	Messages any            `json:"messages"`
}

// TestTurnFixtures splits the real provider responses of testdata/turns
// (recorded from the providers' APIs and docs; see
// testdata/turns/README.md) and checks the calls and the answering
// messages against testdata/turns/golden. The message nested in each
// response (a choice's message, a candidate and its content, the output
// array) gives the same turn.
func TestTurnFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/turns/*.json")
	if err != nil || len(files) != 10 {
		t.Fatalf("fixtures: %v, %d files, want 10", err, len(files))
	}
	wantAPI := map[string]format.TurnAPI{
		"anthropic": format.TurnAnthropic, "bedrock": format.TurnBedrock, "gemini": format.TurnGemini,
		"ollama": format.TurnOpenAIChat, "openai_chat": format.TurnOpenAIChat, "openai_responses": format.TurnOpenAIResponses,
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			whole := decode(t, string(raw))
			turn, err := format.SplitTurn(whole)
			if err != nil {
				t.Fatal(err)
			}
			for prefix, api := range wantAPI {
				if strings.HasPrefix(name, prefix) && turn.API != api {
					t.Errorf("API = %q, want %q", turn.API, api)
				}
			}
			if final := strings.HasSuffix(name, "_final"); final != (len(turn.Calls) == 0) {
				t.Errorf("%d calls in %s", len(turn.Calls), name)
			}
			got := turnGolden{API: turn.API, Calls: turn.Calls, Messages: turn.Messages(answer(t, turn))}
			golden := filepath.Join("testdata/turns/golden", name+".json")
			if *update {
				b, _ := json.MarshalIndent(got, "", "  ")
				if err := os.WriteFile(golden, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			jsonEqual(t, got, string(want))

			for _, inner := range nested(whole) {
				again, err := format.SplitTurn(inner)
				if err != nil {
					t.Fatalf("nested %v: %v", inner, err)
				}
				if again.API != turn.API || !reflect.DeepEqual(again.Calls, turn.Calls) {
					t.Errorf("nested turn = %+v, want %+v", again, turn)
				}
			}
		})
	}
}

// nested returns the turns a whole response holds, as a client could send
// them.
func nested(whole any) []any {
	m := whole.(map[string]any)
	var out []any
	if ch, ok := m["choices"].([]any); ok {
		out = append(out, ch[0].(map[string]any)["message"])
	}
	if cs, ok := m["candidates"].([]any); ok {
		c := cs[0].(map[string]any)
		out = append(out, c, c["content"])
	}
	if o, ok := m["output"].([]any); ok {
		out = append(out, o)
	}
	if o, ok := m["output"].(map[string]any); ok {
		msg := o["message"].(map[string]any)
		out = append(out, msg, msg["content"])
	}
	if msg, ok := m["message"]; ok {
		out = append(out, msg)
	}
	if c, ok := m["content"].([]any); ok && m["role"] != nil {
		out = append(out, map[string]any{"role": m["role"], "content": c}, c)
	}
	return out
}

// TestSplitTurn covers what the fixtures do not: text, thinking and
// reasoning skipped; provider-run calls skipped; ids sent as ""; failures.
func TestSplitTurn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		message  string
		api      format.TurnAPI
		messages string
	}{
		{
			name: "anthropic thinking, text, two tool_use, one failing",
			message: `{"role":"assistant","content":[
				{"type":"thinking","thinking":"let me see","signature":"sig"},
				{"type":"redacted_thinking","data":"xx"},
				{"type":"text","text":"Checking."},
				{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},
				{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},
				{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},
				{"type":"tool_use","id":"toolu_2","name":"broken","input":{}}]}`,
			api:      format.TurnAnthropic,
			messages: `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"{\"ok\":true}","is_error":false},{"type":"tool_result","tool_use_id":"toolu_2","content":"tool failed","is_error":true}]}]`,
		},
		{
			name: "openai chat, Gemini's OpenAI-compatible endpoint (empty ids)",
			message: `{"role":"assistant","content":null,"tool_calls":[
				{"id":"","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
				{"id":"","type":"function","function":{"name":"broken","arguments":"{}"}}]}`,
			api:      format.TurnOpenAIChat,
			messages: `[{"role":"tool","tool_call_id":"","content":"{\"ok\":true}"},{"role":"tool","tool_call_id":"","content":"tool failed"}]`,
		},
		{
			name:     "openai chat text answer",
			message:  `{"role":"assistant","content":"Done.","refusal":null,"tool_calls":null}`,
			api:      format.TurnOpenAIChat,
			messages: `[]`,
		},
		{
			name: "responses reasoning, message and hosted calls skipped",
			message: `[{"type":"reasoning","id":"rs_1","summary":[]},
				{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"ok"}]},
				{"type":"web_search_call","id":"ws_1","status":"completed"},
				{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{}"},
				{"type":"function_call","id":"fc_2","call_id":"call_2","name":"broken","arguments":"{}"}]`,
			api:      format.TurnOpenAIResponses,
			messages: `[{"type":"function_call_output","call_id":"call_1","output":"{\"ok\":true}"},{"type":"function_call_output","call_id":"call_2","output":"tool failed"}]`,
		},
		{
			name: "gemini thought and text parts skipped",
			message: `{"role":"model","parts":[
				{"text":"thinking…","thought":true},
				{"text":"Let me check."},
				{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2ln"},
				{"functionCall":{"id":"fc-2","name":"broken","args":{}}}]}`,
			api:      format.TurnGemini,
			messages: `[{"role":"user","parts":[{"functionResponse":{"id":"tc_000000000000000000000000","name":"get_weather","response":{"output":{"ok":true}}}},{"functionResponse":{"id":"fc-2","name":"broken","response":{"error":"tool failed"}}}]}]`,
		},
		{
			name:     "langchain AIMessage",
			message:  `{"type":"ai","content":"","tool_calls":[{"name":"get_weather","args":{"city":"Paris"},"id":"call_lc","type":"tool_call"}],"invalid_tool_calls":[]}`,
			api:      format.TurnLangChain,
			messages: `[{"type":"tool","tool_call_id":"call_lc","name":"get_weather","content":"{\"ok\":true}","status":"success"}]`,
		},
		{
			name:     "empty anthropic content",
			message:  `{"role":"assistant","content":[]}`,
			api:      format.TurnAnthropic,
			messages: `[]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turn, err := format.SplitTurn(decode(t, tt.message))
			if err != nil {
				t.Fatal(err)
			}
			if turn.API != tt.api {
				t.Errorf("API = %q, want %q", turn.API, tt.api)
			}
			jsonEqual(t, turn.Messages(answer(t, turn)), tt.messages)
		})
	}
}

// TestSplitTurnErrors: what is neither a call nor skippable is refused,
// naming the value, before any call is routed.
func TestSplitTurnErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		message string
		field   string
		words   []string
	}{
		{`"hi"`, "message", []string{"assistant message", "got string"}},
		{`{"foo":1}`, "message", []string{"not an assistant turn"}},
		{`{"role":"user","content":"hi"}`, "message.role", []string{"assistant", `"user"`}},
		{`{"choices":[]}`, "message.choices", []string{"exactly one choice", "got 0"}},
		{`{"candidates":[{},{}]}`, "message.candidates", []string{"exactly one candidate", "got 2"}},
		{`{"role":"assistant","tool_calls":{"id":"x"}}`, "message.tool_calls", []string{"list"}},
		{`{"role":"assistant","tool_calls":["x"]}`, "message.tool_calls[0]", []string{"dict"}},
		{`{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{"name":"x","input":"y"}}]}`, "message.tool_calls[0].type", []string{`"custom"`}},
		{`{"role":"assistant","tool_calls":[{"id":"c","type":"function"}]}`, "message.tool_calls[0]", []string{"well-formed openai", "unknown"}},
		{`{"role":"assistant","function_call":{"name":"x","arguments":"{}"}}`, "message.function_call", []string{"POST /route"}},
		{`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":{}},{"type":"image","source":{}}]}`, "message.content[1].type", []string{`"image"`}},
		{`[{"type":"function_call","call_id":"c","name":"x","arguments":"{}"},{"type":"computer_call","call_id":"d"}]`, "message[1].type", []string{`"computer_call"`}},
		{`{"role":"model","parts":[{"functionResponse":{"name":"x","response":{}}}]}`, "message.parts[0].functionResponse", []string{"answer"}},
		{`{"role":"assistant","content":[{"toolUse":{"toolUseId":"a","name":"x","input":{}}},{"weird":1}]}`, "message.content[1]", []string{"Bedrock"}},
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			_, err := format.SplitTurn(decode(t, tt.message))
			wantInvalid(t, err, tt.field, tt.words...)
		})
	}
}

// TestIsTurn: whole turns and responses are told from single tool calls;
// no real tool call of testdata/toolcalls.json reads as a turn.
func TestIsTurn(t *testing.T) {
	t.Parallel()
	for _, fx := range loadFixtures(t) {
		if format.IsTurn(fx.ToolCall) {
			t.Errorf("%s: a tool call reads as a turn", fx.ID)
		}
	}
	files, _ := filepath.Glob("testdata/turns/*.json")
	for _, file := range files {
		raw, _ := os.ReadFile(file)
		whole := decode(t, string(raw))
		for _, v := range append(nested(whole), whole) {
			if _, isList := v.([]any); !isList && !format.IsTurn(v) {
				t.Errorf("%s: %v does not read as a turn", file, v)
			}
		}
	}
}
