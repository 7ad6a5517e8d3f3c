package format_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// FuzzNormalize feeds any JSON document to every entry point: none may
// panic, a success must have a name and non-nil arguments, a failure must
// be an EINVALID *toolrouter.Error, and the result message must marshal.
func FuzzNormalize(f *testing.F) {
	for _, fx := range loadFixtures(f) {
		b, err := json.Marshal(fx.ToolCall)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`null`, `[]`, `"x"`, `1`, `{}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"x","arguments":{"a":[1]}}}`,
		`{"functionCall":{"name":"x","args":"{\"a\":1}"},"thoughtSignature":null}`,
		`{"name":"x","arguments":" [1] "}`,
		`{"name":"x","args":"{\"a\":1}","input":7,"parameters":"{}"}`,
	} {
		f.Add([]byte(s))
	}
	formats := append(format.SchemaFormats(), "bogus")
	f.Fuzz(func(t *testing.T, data []byte) {
		var payload any
		if json.Unmarshal(data, &payload) != nil {
			return
		}
		_ = format.Detect(payload)
		check := func(c toolrouter.Call, err error) {
			if err != nil {
				var e *toolrouter.Error
				if !errors.As(err, &e) || e.Code != toolrouter.EINVALID || e.Field != "tool_call" {
					t.Fatalf("error %v (%T) is not an EINVALID tool_call error", err, err)
				}
				return
			}
			if c.ToolName == "" || c.Arguments == nil {
				t.Fatalf("call %#v has no name or nil arguments", c)
			}
			for _, ok := range []bool{true, false} {
				if _, err := json.Marshal(format.ToolResult(c, ok, data, "boom")); err != nil {
					t.Fatalf("ToolResult of %#v does not marshal: %v", c, err)
				}
			}
		}
		check(format.Normalize(payload))
		for _, fm := range formats {
			check(format.NormalizeAs(payload, fm))
		}
	})
}
