package router

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestResultJSONAsEncodingJSON: a final result is encoded by
// segmentio/encoding/json (encodeResult), and its bytes, which the store
// keeps and /route answers, are those of encoding/json's Marshal for every
// field and value a Result carries: escaped HTML and line separators,
// invalid UTF-8, raw outputs with spaces, floats of every magnitude, maps
// with keys to sort, every provider's result type, costs, notes.
func TestResultJSONAsEncodingJSON(t *testing.T) {
	strs := []string{"", "hi", "<b>&amp;</b>", "line\u2028sep\u2029", "bad \xff utf-8 \xc3", "quote \" back \\ slash",
		"tab\tnew\nline\r\x00\x1f", "ünï©ødé 😀", strings.Repeat("long ", 50)}
	floats := []float64{0, 0.001, 1, -1, 2.281252, 1e-7, 1e-6, 123456789.5, 1e20, 1e21, 1.5e300, -0.0000012, math.SmallestNonzeroFloat64, math.MaxFloat64}
	outputs := []string{`{"msg":"hi"}`, ` { "a" : [1, 2.50, "x<y"] , "b":null } `, `"just a string"`, `null`, `12.500`, `[]`, `{"html":"<script>&</script>","u":"\u2028"}`,
		`{"n":1e400}`, `{"deep":{"er":{"est":[true,false,{"k":"v"}]}}}`,
		"\n\t[ 1 ,\r\n 2 ]\n ", "{\"bad\":\"\xff\xc3 utf-8\"}", "\"sep\u2028ar\u2029ate <&>\"", `{"esc":"\"\\\/\b\f\n\r\t\u0041\ud83d\ude00"}`,
		` "  spaced string  " `, `[{"a":[{"b":[{"c":[]}]}]},{},[]]`}
	formats := []toolrouter.Format{toolrouter.FormatOpenAI, toolrouter.FormatAnthropic, toolrouter.FormatGemini, toolrouter.FormatLangChain, toolrouter.FormatBedrock, toolrouter.FormatMCP, toolrouter.FormatUnknown, "ollama", ""}
	rng := rand.New(rand.NewPCG(37, 1))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	value := func(depth int) any { return nil }
	value = func(depth int) any {
		switch rng.IntN(7) {
		case 0:
			return pick(strs)
		case 1:
			return floats[rng.IntN(len(floats))]
		case 2:
			return rng.IntN(2) == 0
		case 3:
			return nil
		case 4:
			if depth > 2 {
				return "leaf"
			}
			l := make([]any, rng.IntN(4))
			for i := range l {
				l[i] = value(depth + 1)
			}
			return l
		default:
			if depth > 2 {
				return 7.0
			}
			m := map[string]any{}
			for range rng.IntN(5) {
				m[pick(strs)+pick([]string{"z", "a", "<", "é", ""})] = value(depth + 1)
			}
			return m
		}
	}
	for i := range 3000 {
		res := &toolrouter.Result{ToolCallID: "tc_" + pick(strs), PlanID: pick(strs), Sequence: rng.Int64N(1 << 40), ToolName: pick(strs),
			ProviderFormat: formats[rng.IntN(len(formats))], Success: rng.IntN(2) == 0, DurationMS: floats[rng.IntN(len(floats))],
			IsValidation: rng.IntN(3) == 0}
		if rng.IntN(2) == 0 {
			id := pick(strs)
			res.ProviderCallID = &id
		}
		if m, ok := value(0).(map[string]any); ok {
			res.Arguments = m
		} else if rng.IntN(2) == 0 {
			res.Arguments = map[string]any{}
		}
		if rng.IntN(4) > 0 {
			res.Output = json.RawMessage(outputs[rng.IntN(len(outputs))])
		}
		if !res.Success {
			msg, cat := pick(strs), toolrouter.ErrorCategory(pick([]string{"execution", "timeout", "<x>"}))
			res.Error, res.ErrorCategory = &msg, &cat
		}
		if res.IsValidation && rng.IntN(2) == 0 {
			p := rng.IntN(2) == 0
			res.ValidationPassed = &p
		}
		if m, ok := value(1).(map[string]any); ok {
			res.ProviderMetadata = m
		} else {
			res.ProviderMetadata = noMetadata
		}
		call := toolrouter.Call{Format: res.ProviderFormat, ToolName: res.ToolName, ProviderCallID: pick(strs), HasProviderCallID: true}
		res.ProviderResult = format.ToolResultContent(call, res.Success, res.Output, pick(strs), nil)
		if rng.IntN(5) == 0 {
			res.ProviderResult = value(0)
		}
		if rng.IntN(3) == 0 {
			res.Status, res.ApprovalID, res.ConnectURL = pick(strs), pick(strs), pick(strs)
		}
		for range rng.IntN(3) {
			res.Notes = append(res.Notes, pick(strs))
		}
		if rng.IntN(4) == 0 {
			res.Truncated, res.FullOutput = true, json.RawMessage(outputs[rng.IntN(len(outputs))])
		}
		switch rng.IntN(3) {
		case 0:
			res.Cost = &toolrouter.Cost{Unpriced: true}
		case 1:
			res.Cost = &toolrouter.Cost{Amount: toolrouter.Micros(rng.Int64N(1<<50) - 1<<49), Currency: pick([]string{"USD", "<€>"}), Source: pick(strs),
				Usage: &toolrouter.TokenUsage{InputTokens: rng.Int64N(1000), OutputTokens: rng.Int64N(1000)}}
		}
		want, wantErr := json.Marshal(res)
		// Every output here is valid JSON: encoded trusted (checked) or
		// not, the bytes are encoding/json's.
		for _, checked := range []bool{false, true} {
			got, gotErr := encodeResult(res, checked)
			if (wantErr != nil) != (gotErr != nil) {
				t.Fatalf("case %d (checked %v): errors differ: encoding/json %v, encodeResult %v", i, checked, wantErr, gotErr)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d (checked %v): encodeResult differs from encoding/json:\n got %s\nwant %s", i, checked, got, want)
			}
		}
	}
}
