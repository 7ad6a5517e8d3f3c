package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/toolrouterd/toolrouterd/api"
)

// fastValid says "valid" only where the spec's schema does, and says it for
// the plain bodies it exists for (else it would spare nothing).
func TestFastValidAgreesWithTheSpec(t *testing.T) {
	doc, err := loadSpec(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	call := `{"id":"c","type":"function","function":{"name":"test/echo","arguments":"{}"}}`
	bodies := map[string][]struct {
		body  string
		plain bool // fastValid must pass it
	}{
		"route": {
			{`{"plan_id":"p","tool_call":` + call + `}`, true},
			{`{"plan_id":"p","tool_call":{},"provider_metadata":{"a":1}}`, true},
			{`{"plan_id":"` + strings.Repeat("é", 256) + `","tool_call":{}}`, true},
			{`{"plan_id":"` + strings.Repeat("é", 257) + `","tool_call":{}}`, false},
			{`{"plan_id":"","tool_call":{}}`, false},
			{`{"plan_id":"a\u0001","tool_call":{}}`, false},
			{`{"plan_id":"a\u007f","tool_call":{}}`, false},
			{`{"plan_id":"p"}`, false},
			{`{"tool_call":{}}`, false},
			{`{"plan_id":1,"tool_call":{}}`, false},
			{`{"plan_id":"p","tool_call":[]}`, false},
			{`{"plan_id":"p","tool_call":null}`, false},
			{`{"plan_id":"p","tool_call":{},"provider_metadata":null}`, false},
			{`{"plan_id":"p","tool_call":{},"extra":1}`, false},
		},
		"routeBatch": {
			{`{"plan_id":"p","tool_calls":[` + call + `,{}]}`, true},
			{`{"plan_id":"p","message":{"role":"assistant"},"provider_metadata":{}}`, true},
			{`{"plan_id":"p","message":null}`, false},
			{`{"plan_id":"p","message":"text"}`, true},
			{`{"plan_id":"p","tool_calls":[]}`, true},
			{`{"plan_id":"p","tool_calls":[1]}`, false},
			{`{"plan_id":"p","tool_calls":null}`, false},
			{`{"plan_id":"p","tool_calls":[` + strings.Repeat(`{},`, 1024) + `{}]}`, false},
			{`{"tool_calls":[]}`, false},
			{`{"plan_id":"p","other":1}`, false},
		},
	}
	for op, cases := range bodies {
		var schema *openapi3.Schema
		for _, item := range doc.Paths.Map() {
			for _, o := range item.Operations() {
				if o.OperationID == op {
					schema = o.RequestBody.Value.Content.Get("application/json").Schema.Value
				}
			}
		}
		if schema == nil || fastValid[op] == nil {
			t.Fatalf("no schema or fast check for %s", op)
		}
		for _, c := range cases {
			var v any
			if err := json.Unmarshal([]byte(c.body), &v); err != nil {
				t.Fatal(err)
			}
			obj := v.(map[string]any)
			fast := fastValid[op](obj)
			kin := schema.VisitJSON(obj, openapi3.MultiErrors(), openapi3.VisitAsRequest())
			if fast && kin != nil {
				t.Errorf("%s %.80s: fast check passes what the spec refuses: %v", op, c.body, kin)
			}
			if fast != c.plain {
				t.Errorf("%s %.80s: fast check = %v, want %v", op, c.body, fast, c.plain)
			}
		}
	}
}
