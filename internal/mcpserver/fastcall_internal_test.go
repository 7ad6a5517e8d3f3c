package mcpserver

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFastParamsAsTheSDKs: the fast path decodes every field of the
// SDK's tools/call params, under the same JSON names; a go-sdk upgrade
// that adds one fails here until fastParams has it too.
func TestFastParamsAsTheSDKs(t *testing.T) {
	names := func(typ reflect.Type) []string {
		var out []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out = append(out, f.Name+":"+name)
		}
		return out
	}
	sdk, fast := names(reflect.TypeFor[mcp.CallToolParamsRaw]()), names(reflect.TypeFor[fastParams]())
	if !reflect.DeepEqual(sdk, fast) {
		t.Errorf("mcp.CallToolParamsRaw has %v, fastParams %v", sdk, fast)
	}
}

// TestEnvelopeAsEncodeMessage: the fast path's response envelope is the
// SDK's encoding byte for byte.
func TestEnvelopeAsEncodeMessage(t *testing.T) {
	raw := []byte(`{"content":[{"type":"text","text":"<a&b>"}],"resultType":"complete"}`)
	for _, v := range []any{float64(0), float64(-7), float64(1 << 52), "x", "<é\u2028\"\\>", ""} {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: raw})
		if err != nil {
			t.Fatal(err)
		}
		if got := envelope(id, raw); !bytes.Equal(got, want) {
			t.Errorf("id %v: got %s, want %s", v, got, want)
		}
	}
}

// TestDecodeResultAsTheSDK: a backend's CallToolResult decodes as its
// UnmarshalJSON decodes it (or fails where it fails), whichever way
// decodeResult takes: text-only results on its own, the rest through the
// SDK.
func TestDecodeResultAsTheSDK(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b","_meta":{"k":1},"annotations":{"audience":["user"],"priority":0.5}}],"structuredContent":{"z":1,"a":[1,"x",null]},"isError":true,"_meta":{"m":"v"}}`,
		`{"content":[]}`,
		`{}`,
		`{"content":null,"isError":false}`,
		`{"content":[{"type":"text","text":"x","data":5}]}`,
		`{"content":[{"type":"text","Text":"case"}]}`,
		`{"content":[null]}`,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"text","text":"t"}]}`,
		`{"content":[{"type":"bogus"}]}`,
		`{"content":[{"type":"text","text":"t"}],"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"mode":"form","message":"m","requestedSchema":{"type":"object"}}}},"requestState":"s"}`,
		`{"content":[{"type":"text","text":"t"}],"resultType":"complete"}`,
		`{"content":[{"type":"text","text":"t"}],"requestState":"s"}`,
		`{"content":[{"type":"text","text":"\u00e9\ud800"}],"structuredContent":"str"}`,
		`{"content":[{"type":"text","text":"t"}]} trailing`,
		`[1]`,
		`{"content":[{"type":"text","text":"t"}],"x":"\q"}`,
		`{"content":[{"type":"text","text":"t"}],"x":{"k":"\ud834\udd1e"},"_meta":{"n":1e400}}`,
		`{"content":[{"type":"text","text":"t"}],"structuredContent":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	} {
		var sdk, own mcp.CallToolResult
		sdkOK := json.Unmarshal([]byte(raw), &sdk) == nil
		ownOK := decodeResult([]byte(raw), &own)
		if sdkOK != ownOK {
			t.Errorf("%.80s: decoded %v, the SDK %v", raw, ownOK, sdkOK)
			continue
		}
		if !sdkOK {
			continue
		}
		a, errA := json.Marshal(&own)
		b, errB := json.Marshal(&sdk)
		if errA != nil || errB != nil || !bytes.Equal(a, b) || own.NeedsInput() != sdk.NeedsInput() || !reflect.DeepEqual(own.Content, sdk.Content) {
			t.Errorf("%.80s:\n got %s (%v)\nwant %s (%v)", raw, a, errA, b, errB)
		}
	}
}
