package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/httpapi"
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

// TestBodyProblemsThroughTheServer: the differential test's bodies (see
// TestBodySchemaAnswersAsKinOpenAPI) sent to POST /route and /route/batch
// through the whole handler: each body kin-openapi refuses is the 400 it
// always was, field and detail; the same body sent as text/plain is 415
// and over the body limit 413, before any check (issue 37).
func TestBodyProblemsThroughTheServer(t *testing.T) {
	s := newServer(t, func(d *httpapi.Deps) { d.MaxBodyBytes = 64 << 10 })
	for _, c := range []struct{ op, path string }{{"POST /route", "/route"}, {"POST /route/batch", "/route/batch"}} {
		bodies, kin := httpapi.KinBodyAnswers(t, c.op)
		var refused int
		for _, body := range bodies {
			ok, field, detail := kin(body)
			if ok || len(body) > 64<<10 {
				continue
			}
			refused++
			w := s.serve("POST", c.path, body, "Content-Type", "application/json")
			if w.Code != http.StatusBadRequest {
				t.Errorf("%s %.100q: %d %s, want 400", c.path, body, w.Code, w.Body)
				continue
			}
			if p := problemOf(t, w); p.Field != field || p.Detail != detail {
				t.Errorf("%s %.100q: field %q detail %q, want %q %q", c.path, body, p.Field, p.Detail, field, detail)
			}
			if refused%50 == 1 {
				if w := s.serve("POST", c.path, body, "Content-Type", "text/plain"); w.Code != http.StatusUnsupportedMediaType {
					t.Errorf("%s %.100q as text/plain: %d, want 415", c.path, body, w.Code)
				}
				if w := s.serve("POST", c.path, body+strings.Repeat(" ", 64<<10), "Content-Type", "application/json"); w.Code != http.StatusRequestEntityTooLarge {
					t.Errorf("%s %.100q over the limit: %d, want 413", c.path, body, w.Code)
				}
			}
		}
		if refused < 500 {
			t.Errorf("%s: %d refused bodies, want the corpus's", c.path, refused)
		}
	}
}
