package inputschema_test

import (
	"encoding/json"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/inputschema"
)

// BenchmarkValidateArgs checks one call's arguments as Tool.ValidateArgs
// does, for the schemas most tools have (the example tool server's
// test/echo and math/add). bench/README.md's decision table has what a
// hand-written shortcut in front of it (plainCheck) gained.
func BenchmarkValidateArgs(b *testing.B) {
	for _, tc := range []struct{ name, schema, args string }{
		{"echo", `{"type":"object","properties":{"msg":{"type":"string"}}}`, `{"msg":"hi"}`},
		{"add", `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`, `{"a":1,"b":2}`},
	} {
		var schema, args map[string]any
		if err := json.Unmarshal([]byte(tc.schema), &schema); err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tc.args), &args); err != nil {
			b.Fatal(err)
		}
		validate, problems := inputschema.Compile(schema)
		if problems != nil {
			b.Fatal(problems)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := validate(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
