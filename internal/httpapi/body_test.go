package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestRouteBodiesAgainstTheSpec: the spec (api/openapi.yaml) is the only
// schema of a POST /route or /route/batch body. What it admits decodes into
// the handler's typed request and is routed; what it refuses is a 400 worded
// by the request checker, naming the field.
func TestRouteBodiesAgainstTheSpec(t *testing.T) {
	s := newServer(t)
	call := `{"id":"c","type":"function","function":{"name":"test/echo","arguments":"{}"}}`
	anthropic := `{"type":"tool_use","id":"t","name":"test/echo","input":{"a":"\u00e9\n"}}`
	cases := []struct {
		path, body string
		field      string // "" when the spec admits the body (then 200)
	}{
		{"/route", `{"plan_id":"p","tool_call":` + call + `}`, ""},
		{"/route", `{"plan_id":"p","tool_call":` + anthropic + `,"provider_metadata":{"a":1}}`, ""},
		{"/route", `{"plan_id":"p","plan_id":"q","tool_call":` + call + `}`, ""},
		{"/route", `{"plan_id":"` + strings.Repeat("é", 256) + `","tool_call":` + call + `}`, ""},
		{"/route", `{"plan_id":"` + strings.Repeat("é", 257) + `","tool_call":{}}`, "plan_id"},
		{"/route", `{"plan_id":"","tool_call":{}}`, "plan_id"},
		{"/route", `{"plan_id":"a\u0001","tool_call":{}}`, "plan_id"},
		{"/route", `{"plan_id":"a\u007f","tool_call":{}}`, "plan_id"},
		{"/route", `{"tool_call":{}}`, "plan_id"},
		{"/route", `{"plan_id":1,"tool_call":{}}`, "plan_id"},
		{"/route", `{"plan_id":"p","tool_call":[]}`, "tool_call"},
		{"/route", `{"plan_id":"p","tool_call":null}`, "tool_call"},
		{"/route", `{"plan_id":"p","tool_call":{},"provider_metadata":null}`, "provider_metadata"},
		{"/route", `{"PLAN_ID":"p","plan_id":"p","tool_call":{}}`, "PLAN_ID"},
		{"/route/batch", `{"plan_id":"p","tool_calls":[` + call + `,` + anthropic + `]}`, ""},
		{"/route/batch", `{"plan_id":"p","tool_calls":[]}`, ""},
		{"/route/batch", `{"plan_id":"p","message":{"role":"assistant","tool_calls":[` + call + `]},"provider_metadata":{}}`, ""},
		{"/route/batch", `{"plan_id":"p","message":null}`, "message"},
		{"/route/batch", `{"plan_id":"p","tool_calls":[1]}`, "tool_calls[0]"},
		{"/route/batch", `{"plan_id":"p","tool_calls":null}`, "tool_calls"},
		{"/route/batch", `{"plan_id":"p","tool_calls":[` + strings.Repeat(`{},`, 1024) + `{}]}`, "tool_calls"},
		{"/route/batch", `{"tool_calls":[]}`, "plan_id"},
		{"/route/batch", `{"plan_id":"p","other":1}`, "other"},
	}
	for _, c := range cases {
		w := s.serve("POST", c.path, c.body)
		if c.field == "" {
			if w.Code != http.StatusOK {
				t.Errorf("%s %.80s: %d %s, want 200", c.path, c.body, w.Code, w.Body)
			}
			continue
		}
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s %.80s: %d %s, want 400", c.path, c.body, w.Code, w.Body)
			continue
		}
		if p := problemOf(t, w); p.Field != c.field || !strings.HasPrefix(p.Detail, c.field+": ") {
			t.Errorf("%s %.80s: field %q detail %q, want field %q", c.path, c.body, p.Field, p.Detail, c.field)
		}
	}
}
