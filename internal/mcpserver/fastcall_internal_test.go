package mcpserver

import (
	"bytes"
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
