package remote

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// checkEncode fails unless encodeArgs(v) is byte for byte json.Marshal(v),
// errors included.
func checkEncode(t *testing.T, v map[string]any) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, err := encodeArgs(v)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("encodeArgs error %v, json.Marshal error %v", err, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeArgs\n%q\njson.Marshal\n%q", got, want)
	}
}

func TestEncodeArgsIsJSONMarshal(t *testing.T) {
	deep := map[string]any{}
	cur := deep
	for range maxEncodeDepth + 10 {
		next := map[string]any{}
		cur["x"] = next
		cur = next
	}
	many := map[string]any{}
	for i := range 100 {
		many[strings.Repeat("k", i%7)+string(rune('a'+i%26))+string(rune('A'+i/26))] = float64(i)
	}
	for _, v := range []map[string]any{
		{},
		{"msg": "hi"},
		{"": "", "a": nil, "b": true, "c": false},
		{"html": "<b>&amp;</b> > <", "quote": `" \ /`, "ctl": "\x00\x01\b\f\n\r\t\x1f\x7f"},
		{"utf8": "héllo wörld 世界 🚀", "bad": "a\xffb\xc3(c\xed\xa0\x80", "seps": "\u2028 \u2029", "bom": "\ufeff"},
		{"<key&>": 1.0, "ké\xff": 2.0, "\u2028": 3.0},
		{"nums": []any{0.0, -0.0, 1.0, -1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789012345678.0, 1.25e-9, math.MaxFloat64, math.SmallestNonzeroFloat64, 3.14159, 100.0, 1e300}},
		{"nested": map[string]any{"list": []any{1.0, "two", nil, true, []any{}, map[string]any{}}}},
		{"nilmap": map[string]any(nil), "nilslice": []any(nil)},
		{"deep": deep},
		{"many": many},
		{"ints": []any{0, -1, 42, int8(-8), int16(16), int32(-32), int64(math.MinInt64), uint(7), uint8(255), uint16(16), uint32(32), uint64(math.MaxUint64)}},
		{"f32": []any{float32(1.1), float32(-0.0), float32(1e-7), float32(1e21), float32(9.99e20), float32(3.4e38), float32(1e-45), float32(1.5e-6)}},
		// Values other than decoded JSON go to json.Marshal.
		{"num": json.Number("12"), "raw": json.RawMessage(`{"a" : 1}`)},
		{"f32inf": float32(math.Inf(1))},
		{"typed": map[string]string{"b": "<", "a": "x"}, "strs": []string{"a"}},
		{"ok": "x", "later": struct{ A int }{1}},
		// Errors are json.Marshal's.
		{"nan": math.NaN()},
		{"inf": []any{math.Inf(-1)}},
		{"ch": make(chan int)},
	} {
		checkEncode(t, v)
	}
}

func FuzzEncodeArgs(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"msg":"hi","n":1}`, `{"a":[1,"two",null,true,{"b":1e-7}],"c":"\u2028<>&\u00e9"}`,
		`{"x":1e300,"y":-0,"z":0.1}`,
	} {
		f.Add([]byte(s), "")
	}
	f.Add([]byte(`{}`), "a\xffb\u2029\x00")
	f.Fuzz(func(t *testing.T, data []byte, extra string) {
		var v map[string]any
		if json.Unmarshal(data, &v) != nil || v == nil {
			return
		}
		v[extra] = extra // a string that need not be valid UTF-8
		checkEncode(t, v)
	})
}
