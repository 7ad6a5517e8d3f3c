package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// tcID is the contract's tool_call_id of a plan's sequence.
func tcID(plan string, seq int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s:%d", plan, seq)))
	return "tc_" + hex.EncodeToString(sum[:])[:24]
}

// TestBatchMessage: a whole assistant turn of each provider posted as
// "message" to /route/batch has its tool calls routed in order (the
// sequences and ids of the same calls sent as tool_calls), its text and
// thinking skipped, and is answered with the messages to append in that
// provider's shape; a turn sent to /route is a 400 that burns no sequence.
func TestBatchMessage(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr))
	aliases := openAIAliases(t, rt)
	echo, fail := aliases["test/echo"], aliases["test/fail"]
	if echo == "" || fail == "" {
		t.Fatalf("aliases %v", aliases)
	}
	const boom = "RuntimeError: boom"
	cases := []struct {
		name     string
		message  string
		messages string // want, with TC0, TC1 standing for the tc_ ids of sequences 0 and 1
	}{
		{
			name: "openai chat completion",
			message: `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[
				{"id":"call_a","type":"function","function":{"name":"ECHO","arguments":"{\"msg\":\"hi\"}"}},
				{"id":"call_b","type":"function","function":{"name":"FAIL","arguments":"{}"}}]}}]}`,
			messages: `[{"role":"tool","tool_call_id":"call_a","content":"{\"msg\":\"hi\"}"},{"role":"tool","tool_call_id":"call_b","content":"BOOM"}]`,
		},
		{
			name: "gemini openai-compatible endpoint, empty ids",
			message: `{"role":"assistant","tool_calls":[
				{"id":"","type":"function","function":{"name":"ECHO","arguments":"{\"msg\":\"hi\"}"}}]}`,
			messages: `[{"role":"tool","tool_call_id":"","content":"{\"msg\":\"hi\"}"}]`,
		},
		{
			name: "anthropic response with thinking and text",
			message: `{"id":"msg_1","type":"message","role":"assistant","model":"claude","stop_reason":"tool_use","content":[
				{"type":"thinking","thinking":"two calls","signature":"sig"},
				{"type":"text","text":"Let me check."},
				{"type":"tool_use","id":"toolu_a","name":"ECHO","input":{"msg":"hi"}},
				{"type":"tool_use","id":"toolu_b","name":"FAIL","input":{}}]}`,
			messages: `[{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"toolu_a","content":"{\"msg\":\"hi\"}","is_error":false},
				{"type":"tool_result","tool_use_id":"toolu_b","content":"BOOM","is_error":true}]}]`,
		},
		{
			name: "gemini response",
			message: `{"candidates":[{"content":{"role":"model","parts":[
				{"text":"thinking","thought":true},
				{"functionCall":{"name":"ECHO","args":{"msg":"hi"}},"thoughtSignature":"c2ln"},
				{"functionCall":{"id":"fc-b","name":"FAIL","args":{}}}]},"finishReason":"STOP"}]}`,
			messages: `[{"role":"user","parts":[
				{"functionResponse":{"id":"TC0","name":"ECHO","response":{"output":{"msg":"hi"}}}},
				{"functionResponse":{"id":"fc-b","name":"FAIL","response":{"error":"BOOM"}}}]}]`,
		},
		{
			name: "responses output",
			message: `[{"type":"reasoning","id":"rs_1","summary":[]},
				{"type":"function_call","id":"fc_a","call_id":"call_a","name":"ECHO","arguments":"{\"msg\":\"hi\"}","status":"completed"},
				{"type":"function_call","id":"fc_b","call_id":"call_b","name":"FAIL","arguments":"{}","status":"completed"}]`,
			messages: `[{"type":"function_call_output","call_id":"call_a","output":"{\"msg\":\"hi\"}"},{"type":"function_call_output","call_id":"call_b","output":"BOOM"}]`,
		},
		{
			name: "bedrock converse response",
			message: `{"output":{"message":{"role":"assistant","content":[{"text":"ok"},
				{"toolUse":{"toolUseId":"tu_a","name":"ECHO","input":{"msg":"hi"}}}]}},"stopReason":"tool_use"}`,
			messages: `[{"role":"user","content":[{"toolResult":{"toolUseId":"tu_a","status":"success","content":[{"json":{"msg":"hi"}}]}}]}]`,
		},
		{
			name:     "text answer",
			message:  `{"role":"assistant","content":"All done."}`,
			messages: `[]`,
		},
	}
	names := strings.NewReplacer(`"ECHO"`, `"`+echo+`"`, `"FAIL"`, `"`+fail+`"`)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := fmt.Sprintf("turn-%d", i)
			var msg any
			if err := json.Unmarshal([]byte(names.Replace(c.message)), &msg); err != nil {
				t.Fatal(err)
			}
			resp := do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": plan, "message": msg})
			if resp.Status != 200 {
				t.Fatalf("%d %s", resp.Status, resp.Body)
			}
			body := resp.JSON(t)
			results := body["results"].([]any)
			for seq, r := range results {
				res := r.(map[string]any)
				if res["sequence"] != float64(seq) || res["tool_call_id"] != tcID(plan, seq) {
					t.Errorf("result %d: sequence %v, id %v", seq, res["sequence"], res["tool_call_id"])
				}
			}
			want := strings.NewReplacer("TC0", tcID(plan, 0), "TC1", tcID(plan, 1), "BOOM", boom).Replace(names.Replace(c.messages))
			var w any
			if err := json.Unmarshal([]byte(want), &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(body["messages"], w) {
				got, _ := json.Marshal(body["messages"])
				t.Errorf("messages\n got  %s\n want %s", got, want)
			}

			// The same calls as tool_calls take the next sequences and
			// answer the same provider results.
			if len(results) == 0 {
				return
			}
			again := do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": plan, "tool_calls": splitCalls(t, msg)}).JSON(t)
			if _, ok := again["messages"]; ok {
				t.Errorf("tool_calls answered with messages: %v", again)
			}
			for j, r := range again["results"].([]any) {
				res, first := r.(map[string]any), results[j].(map[string]any)
				if res["sequence"] != float64(len(results)+j) {
					t.Errorf("tool_calls result %d: sequence %v", j, res["sequence"])
				}
				if pr, fr := res["provider_result"], first["provider_result"]; first["provider_call_id"] != nil && !reflect.DeepEqual(pr, fr) {
					t.Errorf("provider_result %v, want %v", pr, fr)
				}
			}
		})
	}

	t.Run("a turn sent to /route is a 400 that burns no sequence", func(t *testing.T) {
		turn := map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c", "type": "function", "function": map[string]any{"name": echo, "arguments": "{}"}}}}
		resp := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "turn-route", "tool_call": turn})
		p := resp.JSON(t)
		if resp.Status != 400 || p["field"] != "tool_call" || !strings.Contains(p["detail"].(string), `"message" to POST /route/batch`) {
			t.Fatalf("%d %s", resp.Status, resp.Body)
		}
		res := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "turn-route", "tool_call": turn["tool_calls"].([]any)[0]}).JSON(t)
		if res["sequence"] != float64(0) || res["success"] != true {
			t.Errorf("first call after the 400: %v", res)
		}
	})

	for _, c := range []struct{ name, body, field, detail string }{
		{"both", `{"plan_id":"p","tool_calls":[],"message":{"role":"assistant","content":"x"}}`, "message", "tool_calls, message: send exactly one"},
		{"neither", `{"plan_id":"p"}`, "message", "tool_calls, message: one of them is required"},
		{"not a turn", `{"plan_id":"p","message":{"name":"x"}}`, "message", "not an assistant turn"},
		{"a user message", `{"plan_id":"p","message":{"role":"user","content":"hi"}}`, "message.role", "assistant"},
		{"a block toolrouterd cannot answer", `{"plan_id":"p","message":{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":{}},{"type":"image","source":{}}]}}`, "message.content[1].type", `"image"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := do(t, "POST", rt.URL()+"/route/batch", c.body)
			p := resp.JSON(t)
			if resp.Status != 400 || p["field"] != c.field || !strings.Contains(p["detail"].(string), c.detail) {
				t.Errorf("%d %s", resp.Status, resp.Body)
			}
		})
	}
	// The refused turn burned nothing: plan p starts at 0.
	res := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": echo, "arguments": "{}"}}).JSON(t)
	if res["sequence"] != float64(0) {
		t.Errorf("sequence %v after refused batches, want 0", res["sequence"])
	}
}

// splitCalls returns the tool calls of a test turn, as a client would list
// them in tool_calls.
func splitCalls(t *testing.T, msg any) []any {
	t.Helper()
	var calls []any
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if x["type"] == "tool_use" || x["type"] == "function_call" || x["functionCall"] != nil || x["toolUse"] != nil || x["function"] != nil {
				calls = append(calls, x)
				return
			}
			for _, k := range []string{"choices", "message", "tool_calls", "content", "candidates", "parts", "output"} {
				walk(x[k])
			}
		}
	}
	walk(msg)
	return calls
}
