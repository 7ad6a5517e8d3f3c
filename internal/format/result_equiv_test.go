package format

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// mapToolResult is ToolResult as it was built from maps; the structs of
// ToolResult must marshal to exactly its bytes.
func mapToolResult(call toolrouter.Call, success bool, output json.RawMessage, errMsg string) any {
	out := bytes.TrimSpace(output)
	text := resultText(success, out, errMsg)
	id := call.ProviderCallID
	switch call.Format {
	case toolrouter.FormatOpenAI:
		if call.Extra["openai_api"] == "responses" {
			return map[string]any{"type": "function_call_output", "call_id": id, "output": text}
		}
		return map[string]any{"role": "tool", "tool_call_id": id, "content": text}
	case toolrouter.FormatAnthropic:
		return map[string]any{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": !success}
	case toolrouter.FormatLangChain:
		return map[string]any{"type": "tool", "tool_call_id": id, "name": call.ToolName,
			"content": text, "status": status(success)}
	case toolrouter.FormatGemini:
		response := map[string]any{"output": jsonValue(out)}
		if !success {
			response = map[string]any{"error": text}
		}
		fr := map[string]any{"name": call.ToolName, "response": response}
		if id != "" {
			fr["id"] = id
		}
		return map[string]any{"functionResponse": fr}
	case toolrouter.FormatBedrock:
		content := []any{map[string]any{"text": text}}
		if success && isObject(out) {
			content = []any{map[string]any{"json": json.RawMessage(out)}}
		}
		return map[string]any{"toolResult": map[string]any{"toolUseId": id, "content": content, "status": status(success)}}
	case toolrouter.FormatMCP:
		result := map[string]any{
			"content": []any{map[string]any{"type": "text", "text": text}},
			"isError": !success,
		}
		if success && isObject(out) {
			result["structuredContent"] = json.RawMessage(out)
		}
		return map[string]any{"jsonrpc": "2.0", "id": call.Extra["jsonrpc_id"], "result": result}
	}
	var e any
	if !success {
		e = text
	}
	return map[string]any{"tool_call_id": id, "name": call.ToolName, "success": success,
		"output": jsonValue(out), "error": e}
}

func TestToolResultMarshalsAsMaps(t *testing.T) {
	t.Parallel()
	outputs := []json.RawMessage{
		nil, json.RawMessage(``), json.RawMessage(`  `), json.RawMessage(`null`), json.RawMessage(`{"temp": 21, "h":"<&>"}`),
		json.RawMessage(" {\"a\" :\n [1, 2.50, \"\\u00e9\"]} \n"), json.RawMessage(`"héllo \"you\" <b>"`), json.RawMessage(`"\u2028"`),
		json.RawMessage(`[1,2]`), json.RawMessage(`42`), json.RawMessage(`true`), json.RawMessage(`{oops`), json.RawMessage(`"unterminated`),
		json.RawMessage("\"bad \xff\""), json.RawMessage("{\"k\":\"\xff\"}"),
	}
	calls := []toolrouter.Call{}
	for _, f := range append(SchemaFormats(), "bogus") {
		for _, id := range []string{"", "call_1", "<id&>"} {
			for _, extra := range []map[string]any{nil, {"openai_api": "responses", "jsonrpc_id": 7.0}, {"jsonrpc_id": "a-<1>"}, {"jsonrpc_id": map[string]any{"x": 1.0}}} {
				calls = append(calls, toolrouter.Call{ToolName: "get_weather<>", ProviderCallID: id, Format: f, Extra: extra})
			}
		}
	}
	n := 0
	for _, c := range calls {
		for _, out := range outputs {
			for _, success := range []bool{true, false} {
				for _, errMsg := range []string{"", "Tool 'w' not found <&>", "bad \xff\u2029"} {
					want, wantErr := json.Marshal(mapToolResult(c, success, out, errMsg))
					got, err := json.Marshal(ToolResult(c, success, out, errMsg))
					if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
						t.Fatalf("%+v success=%v out=%q err=%q:\ngot  %s (%v)\nwant %s (%v)", c, success, out, errMsg, got, err, want, wantErr)
					}
					n++
				}
			}
		}
	}
	t.Logf("%d results compared", n)
}

// TestMayHaveContent: the filter before mediaBlocks' decoding must say
// yes to every key encoding/json would take as "content".
func TestMayHaveContent(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		`{"content":[]}`: true, `{"CONTENT":[]}`: true, `{"Content":1}`: true, `{"\u0063ontent":[]}`: true,
		`{"a":"\u0041"}`: true, `{"a":"\n\""}`: false, `{"msg":"hi"}`: false, `{"conten":1}`: false, `{"c":"c"}`: false, `{}`: false,
		`{"x":"contents"}`: true, `{"cc":"ccontent"}`: true,
	} {
		if got := mayHaveContent([]byte(s)); got != want {
			t.Errorf("mayHaveContent(%s) = %v, want %v", s, got, want)
		}
	}
}

// TestMayHaveMedia: the filter before mediaBlocks' decoding must say yes
// to every result encoding/json could read a media block from.
func TestMayHaveMedia(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`:                  true,
		`{"content":[{"type": "audio","data":"AA==","mimeType":"audio/wav"}]}`:                 true,
		`{"content":[{"type":"resource","resource":{"uri":"f","BLOB":"AA=="}}]}`:               true,
		`{"content":[{"type":"\u0069mage","data":"AA==","mimeType":"image/png"}]}`:             true,
		`{"content":[{"type":"text","text":"an image of a cat"}]}`:                             false,
		`{"content":[{"type":"text","text":"hi"},{"type":"resource_link","uri":"file:///x"}]}`: false,
	} {
		if got := mayHaveMedia([]byte(s)); got != want {
			t.Errorf("mayHaveMedia(%s) = %v, want %v", s, got, want)
		}
		if want && mediaBlocks([]byte(s), nil) == nil && !strings.Contains(s, `\u`) {
			t.Errorf("mediaBlocks(%s) found no media", s)
		}
	}
}

// FuzzMediaFilter: the filters in front of mediaBlocks' decoding never
// turn away a result that holds media blocks.
func FuzzMediaFilter(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
		`{"CONTENT":[{"TYPE":"audio","Data":"AA==","MIMEType":"audio/wav"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"f","bLoB":"AA=="}}]}`,
		`{"content":[{"type":"\u0069mage","data":"AA==","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text","text":"{\"msg\":\"hi\"}"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) == 0 || src[0] != '{' {
			return
		}
		if decodeBlocks(src) != nil && (!mayHaveContent(src) || !mayHaveMedia(src)) {
			t.Errorf("%s holds media blocks, but the filters turn it away", src)
		}
	})
}

// TestContainsFoldAsLoop: containsFold, which looks for its word's first
// letter with bytes.IndexByte, says what the byte-by-byte loop it
// replaced said (foldLoop), on 20,000 random texts over the letters of
// its words in both cases, at every position and length (issue 37).
func TestContainsFoldAsLoop(t *testing.T) {
	t.Parallel()
	foldLoop := func(src []byte, word string) bool {
		for i := 0; i+len(word) <= len(src); i++ {
			if (src[i]|0x20) == word[0] && bytes.EqualFold(src[i:i+len(word)], []byte(word)) {
				return true
			}
		}
		return false
	}
	rng := rand.New(rand.NewPCG(37, 3))
	letters := []byte(`contebloBLOCNTE"\ {}x`)
	for range 20_000 {
		src := make([]byte, rng.IntN(40))
		for i := range src {
			src[i] = letters[rng.IntN(len(letters))]
		}
		for _, w := range []string{"content", "blob"} {
			if got, want := containsFold(src, w), foldLoop(src, w); got != want {
				t.Fatalf("containsFold(%q, %s) = %v, the loop says %v", src, w, got, want)
			}
		}
	}
}
