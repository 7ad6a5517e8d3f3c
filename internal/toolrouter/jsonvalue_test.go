package toolrouter_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// checkDecodeJSON fails t unless DecodeJSON(s) either declines or gives
// exactly what json.Unmarshal gives.
func checkDecodeJSON(t *testing.T, s string) (taken bool) {
	t.Helper()
	got, ok := toolrouter.DecodeJSON(s)
	var want any
	err := json.Unmarshal([]byte(s), &want)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("DecodeJSON(%q) took what encoding/json refuses (%v)", s, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeJSON(%q) = %#v, encoding/json: %#v", s, got, want)
	}
	return true
}

var decodeJSONSeeds = []string{
	`{"plan_id":"p","tool_call":{"id":"call_1","type":"function","function":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}}`,
	`{"msg":"hi"}`, ` { "a" : [ 1 , -2.5e3 , true , false , null , {} , [] , "é" ] } `,
	`0`, `-0`, `1e400`, `01`, `1.`, `.1`, `1e`, `-`, `"\u00e9"`, `"a\"b\\c\/d\be\ff\ng\rh\ti"`, `"\x"`, `"\`, `"\"`, "\"\\\x01\"", "\"a\x01\"", "\"\xff\"", `{"a":1,"a":2}`,
	`{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{1:2}`, `tru`, `nulll`, `"abc`, ``, ` `, `{}x`, `[[[[[[]]]]]]`,
	`{"A":{"b":[{"c":null}]}}`, `123456789012345678901234567890`, `1E+2`, `-1e-2`, "\t[\r\n]",
}

func TestDecodeJSONAgreesWithEncodingJSON(t *testing.T) {
	taken := 0
	for _, s := range decodeJSONSeeds {
		if checkDecodeJSON(t, s) {
			taken++
		}
	}
	// The recorded provider payloads (golden fixtures of internal/format).
	files, _ := filepath.Glob("../format/testdata/*.json")
	more, _ := filepath.Glob("../format/testdata/*/*.json")
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if json.Unmarshal(b, &doc) != nil {
			continue
		}
		var walk func(any)
		walk = func(v any) {
			b, _ := json.Marshal(v)
			checkDecodeJSON(t, string(b))
			switch v := v.(type) {
			case map[string]any:
				for _, e := range v {
					walk(e)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			case string:
				checkDecodeJSON(t, v) // arguments as JSON text
			}
		}
		walk(doc)
	}
	if taken < 10 {
		t.Fatalf("DecodeJSON took only %d of the plain seeds", taken)
	}
	for _, s := range []string{`{"plan_id":"p","tool_call":{"type":"tool_use","id":"t","name":"n","input":{"msg":"hi"}}}`, `{"msg":"hi"}`} {
		if _, ok := toolrouter.DecodeJSON(s); !ok {
			t.Errorf("DecodeJSON declined the plain %s", s)
		}
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range decodeJSONSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkDecodeJSON(t, s) })
}
