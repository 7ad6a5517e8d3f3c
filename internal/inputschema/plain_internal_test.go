package inputschema

import (
	"encoding/json"
	"testing"
)

// plainCheck says valid only where the full validator does, and does say
// it for plain schemas (else it would spare nothing).
func TestPlainCheckAgreesWithTheValidator(t *testing.T) {
	t.Parallel()
	schemas := []string{
		`{"type":"object","properties":{"msg":{"type":"string"}}}`,
		`{"type":"object","properties":{"n":{"type":"integer"},"x":{"type":["number","null"]}},"required":["n"],"additionalProperties":false}`,
		`{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"array"}},"additionalProperties":{"type":"boolean"}}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","description":"d","properties":{"s":true}}`,
		`{"type":"object","properties":{"s":false}}`,
	}
	args := []string{`{}`, `{"msg":"hi"}`, `{"msg":1}`, `{"n":1}`, `{"n":1.5}`, `{"n":1,"x":null}`, `{"n":1,"x":"a"}`,
		`{"n":1,"y":1}`, `{"o":{"a":[1]}}`, `{"o":{"a":1}}`, `{"o":{"b":true}}`, `{"o":{"b":1}}`, `{"o":[]}`, `{"s":1}`, `{"n":1e300}`}
	plainPassed := 0
	for _, sj := range schemas {
		var schema map[string]any
		if err := json.Unmarshal([]byte(sj), &schema); err != nil {
			t.Fatal(err)
		}
		plain := plainCheck(schema)
		if plain == nil {
			t.Fatalf("%s: no plain check", sj)
		}
		compiled, err := compileSchema(schema)
		if err != nil {
			t.Fatal(err)
		}
		full := argsValidator(compiled)
		for _, aj := range args {
			var a map[string]any
			if err := json.Unmarshal([]byte(aj), &a); err != nil {
				t.Fatal(err)
			}
			p, ferr := plain(a), full(a)
			if p && ferr != nil {
				t.Errorf("schema %s, args %s: plain check passes what the validator refuses: %v", sj, aj, ferr)
			}
			if !p && ferr == nil {
				t.Errorf("schema %s, args %s: plain check refuses valid arguments (spares nothing)", sj, aj)
			}
			if p {
				plainPassed++
			}
		}
	}
	if plainPassed == 0 {
		t.Fatal("the plain check passed nothing")
	}
	for _, sj := range []string{`{"type":"object","properties":{"s":{"minLength":2}}}`, `{"$ref":"#/x"}`, `{"$schema":"http://json-schema.org/draft-04/schema#"}`, `{"type":"object","required":"x"}`} {
		var schema map[string]any
		_ = json.Unmarshal([]byte(sj), &schema)
		if plainCheck(schema) != nil {
			t.Errorf("%s: a plain check for a schema it does not cover", sj)
		}
	}
}
