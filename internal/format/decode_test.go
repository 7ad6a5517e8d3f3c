package format

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// checkDecode fails unless decodeArgs(s) gives what it gives through
// encoding/json alone: the same value (not just an equal JSON text: the
// same Go types) or the same error.
func checkDecode(t *testing.T, s string) {
	t.Helper()
	got, gotErr := decodeArgs(s)
	want, wantErr := slowDecodeArgs(s)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%q: error %v, want %v", s, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) || !sameZeros(got, want) {
		t.Fatalf("%q:\ngot  %#v\nwant %#v", s, got, want)
	}
}

// slowDecodeArgs is decodeArgs for a string without the fast path.
func slowDecodeArgs(a string) (map[string]any, error) {
	s := strings.TrimSpace(a)
	if s == "" {
		return map[string]any{}, nil
	}
	var out any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, invalid("parse error: arguments are not valid JSON: %v", err)
	}
	if out == nil {
		return map[string]any{}, nil
	}
	obj, ok := out.(map[string]any)
	if !ok {
		return nil, invalid("parse error: arguments must be a JSON object, got %s", kind(out))
	}
	return obj, nil
}

// sameZeros tells -0 from 0, which reflect.DeepEqual does not.
func sameZeros(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, _ := b.(float64)
		return math.Signbit(x) == math.Signbit(y)
	case map[string]any:
		y, _ := b.(map[string]any)
		for k, v := range x {
			if !sameZeros(v, y[k]) {
				return false
			}
		}
	case []any:
		y, _ := b.([]any)
		for i, v := range x {
			if !sameZeros(v, y[i]) {
				return false
			}
		}
	}
	return true
}

var decodeCases = []string{
	`{}`, ` { } `, "\t{\"a\":1}\r\n", `{"city":"Edinburgh","country":"UK","units":"c"}`,
	`{"a":1,"a":2}`, `{"a":{"b":[1,2,{"c":null}]},"d":[],"e":{}}`,
	`{"t":true,"f":false,"n":null}`,
	`{"n":[0,-0,1,-1,1.5,1e3,1E+3,1e-3,-0.0,12345678901234567890,1.7976931348623157e308,5e-324,2.5e-400]}`,
	`{"big":1e400}`, `{"big":-1e999}`,
	`{"s":"héllo wörld 世界 🚀"}`, `{"s":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude80"}`,
	`{"s":"\ud800"}`, `{"s":"\ud800\u0041"}`, `{"s":"lone \udc00"}`, "{\"s\":\"bad \xff utf8\"}", "{\"s\xff\":1}",
	"{\"ctl\":\"a\x01b\"}", `{"s":"\x"}`, `{"s":"\u12"}`, `{"s":"unterminated}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`, `{"a":-}`, `{"a":1e}`, `{"a":1e+}`, `{"a":0x10}`, `{"a":NaN}`,
	`{"a":tru}`, `{"a":truex}`, `{"a":nul}`, `{"a":1,}`, `{"a":[1,]}`, `{"a" 1}`, `{a:1}`, `{"a":1}}`, `{"a":1} x`,
	`{"a":1}{}`, `{"a":[1 2]}`, `{"a":{"b":1}`, `{`, `{"a"`, `{"a":`, `{"a":1`, `[1]`, `[]`, `"x"`, `1`, `null`, ` null `,
	`true`, `nul`, "", "   ", "\u00a0{\"a\":1}\u00a0",
	"{\"a\":\"\u2028\u2029\"}", `{"":""}`, `{"a":"\u0000"}`,
	"{\"a\":1}\x00",
}

func TestDecodeObjectIsEncodingJSON(t *testing.T) {
	for _, s := range decodeCases {
		checkDecode(t, s)
	}
	deep := strings.Repeat(`{"a":`, 500) + "1" + strings.Repeat("}", 500)
	checkDecode(t, deep)
	deepArr := `{"a":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "}"
	checkDecode(t, deepArr)
	tooDeep := `{"a":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "}"
	checkDecode(t, tooDeep)
}

func FuzzDecodeArgs(f *testing.F) {
	for _, s := range decodeCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkDecode(t, s)
		checkDecodeJSON(t, []byte(s))
	})
}

// checkDecodeJSON fails unless DecodeJSON(data) is json.Unmarshal into an
// any: the same value or the same error (type, text and offset).
func checkDecodeJSON(t *testing.T, data []byte) {
	t.Helper()
	got, gotErr := DecodeJSON(data)
	var want any
	wantErr := json.Unmarshal(data, &want)
	if !reflect.DeepEqual(gotErr, wantErr) {
		t.Fatalf("%q: error %#v, want %#v", data, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) || !sameZeros(got, want) {
		t.Fatalf("%q:\ngot  %#v\nwant %#v", data, got, want)
	}
}

func TestDecodeJSONIsUnmarshal(t *testing.T) {
	for _, s := range decodeCases {
		checkDecodeJSON(t, []byte(s))
	}
	for _, s := range []string{
		`{"plan_id":"bench","tool_call":{"id":"call_1","type":"function","function":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}}`,
		`[1,"a",{"b":[]}]`, `"x"`, `"\u00e9"`, `1e400`, `-0`, `0`, ` true `, `false`, `null`, `nul`, `1 2`, `[`, `]`, `{}x`,
	} {
		checkDecodeJSON(t, []byte(s))
	}
	data := []byte(`{"k":"value"}`)
	v, _ := DecodeJSON(data)
	copy(data, `{"k":"XXXXX"}`)
	if v.(map[string]any)["k"] != "value" {
		t.Error("the value shares memory with the input")
	}
	if _, err := DecodeJSON([]byte(strings.Repeat("[", 20000))); err == nil {
		t.Error("deep nesting: no error")
	}
}

func TestDecodeObjectTakesTheFastPath(t *testing.T) {
	for _, s := range []string{
		`{"city":"Edinburgh","country":"UK","units":"c"}`,
		`{"a":{"b":[1,2,{"c":null}]},"d":[],"e":{},"t":true,"f":false}`,
		`{"s":"héllo","e":"a\nb"}`,
	} {
		if _, ok := decodeObject(s); !ok {
			t.Errorf("%s: not decoded by the fast path", s)
		}
	}
}
