package httpapi

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/format"
)

// typedRouteSeeds are POST /route bodies for readTypedRoute: taken ones
// (taken true) and ones it must leave to the generic path.
var typedRouteSeeds = []struct {
	body  string
	taken bool
}{
	{`{"plan_id":"bench","tool_call":{"id":"call_1","type":"function","function":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}}`, true},
	{`{"plan_id":"bench","tool_call":{"type":"tool_use","id":"toolu_01","name":"test/echo","input":{"msg":"hi"}}}`, true},
	{` { "tool_call" : { "function" : { "arguments" : { "a" : [1, null, "x"] } , "name" : "t" } } , "plan_id" : "p" , "provider_metadata" : {"k":{"v":2}} } `, true},
	{`{"plan_id":"p","tool_call":{"function":{"name":"t"}}}`, true},
	{`{"plan_id":"p","tool_call":{"function":{"name":"t","arguments":null}}}`, true},
	{`{"plan_id":"p","tool_call":{"function":{"name":"t","arguments":"  "}}}`, true},
	{`{"plan_id":"p","tool_call":{"function":{"name":"t","arguments":"null"}}}`, true},
	{`{"plan_id":"p","tool_call":{"id":"","function":{"name":"t","arguments":"{}"}}}`, true},
	{`{"plan_id":"p","tool_call":{"name":"t","input":null}}`, true},
	{`{"plan_id":"p","tool_call":{"name":"t","input":{}},"provider_metadata":{}}`, true},
	{`{"plan_id":"p","tool_call":{"id":"c","type":"function_call","function":{"name":"t","arguments":"{}"}}}`, false},
	{`{"plan_id":"p","tool_call":{"function":{"name":"t","arguments":"[1]"}}}`, false},
	{`{"plan_id":"p","tool_call":{"function":{"name":"t","arguments":"{\"a\":\"\\u00e9\"}"}}}`, false},
	{`{"plan_id":"p","tool_call":{"function":{"name":"t","arguments":7}}}`, false},
	{`{"plan_id":"p","tool_call":{"function":{"name":" ","arguments":"{}"}}}`, false},
	{`{"plan_id":"p","tool_call":{"function":{"arguments":"{}"}}}`, false},
	{`{"plan_id":"p","tool_call":{"function":{"name":"t","extra":1}}}`, false},
	{`{"plan_id":"p","tool_call":{"id":7,"function":{"name":"t"}}}`, false},
	{`{"plan_id":"p","tool_call":{"id":null,"function":{"name":"t"}}}`, false},
	{`{"plan_id":"p","tool_call":{"name":"t","arguments":"{}"}}`, false},
	{`{"plan_id":"p","tool_call":{"name":"t","input":"{}"}}`, false},
	{`{"plan_id":"p","tool_call":{"name":"t","input":{},"function":{"name":"t"}}}`, false},
	{`{"plan_id":"p","tool_call":{"type":"tool_call","name":"t","input":{}}}`, false},
	{`{"plan_id":"p","tool_call":{"role":"assistant","name":"t","input":{}}}`, false},
	{`{"plan_id":"p","tool_call":{"name":"t","name":"u","input":{}}}`, false},
	{`{"plan_id":"p","plan_id":"q","tool_call":{"name":"t","input":{}}}`, false},
	{`{"plan_id":"","tool_call":{"name":"t","input":{}}}`, false},
	{`{"plan_id":"a\tb","tool_call":{"name":"t","input":{}}}`, false},
	{`{"plan_id":"p","tool_call":{"name":"t","input":{}},"provider_metadata":null}`, false},
	{`{"plan_id":"p","tool_call":{"name":"t","input":{}},"other":1}`, false},
	{`{"plan_id":"p"}`, false},
	{`{"tool_call":{"name":"t","input":{}}}`, false},
	{`{"plan_id":"p","tool_call":{"name":"t","input":{}}} x`, false},
	{`{"plan_id":"p","tool_call":{"name":"t","input":{}}`, false},
	{"{\"plan_id\":\"p\xff\",\"tool_call\":{\"name\":\"t\",\"input\":{}}}", false},
	{`[]`, false},
}

// checkTypedRoute fails t unless readTypedRoute(body) either declines or
// gives what the generic path gives: the checker's decoding and fast
// validation, Valid, and format.Normalize.
func checkTypedRoute(t *testing.T, body string) (taken bool) {
	t.Helper()
	var q typedRoute
	if !readTypedRoute(body, &q) {
		return false
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("readTypedRoute took %q, which encoding/json refuses: %v", body, err)
	}
	obj, ok := v.(map[string]any)
	if !ok || !fastValid["route"](obj) {
		t.Fatalf("readTypedRoute took %q, which the request checker would not pass as plainly valid", body)
	}
	var req routeRequest
	req.from(obj)
	if p := req.Valid(context.Background()); p != nil {
		t.Fatalf("readTypedRoute took %q, which Valid refuses: %v", body, p)
	}
	want, err := format.Normalize(req.ToolCall.v)
	if err != nil {
		t.Fatalf("readTypedRoute took %q, which format.Normalize refuses: %v", body, err)
	}
	if q.planID != req.PlanID || !reflect.DeepEqual(q.meta, req.ProviderMetadata) {
		t.Fatalf("readTypedRoute(%q): plan_id %q, metadata %#v; generic: %q, %#v", body, q.planID, q.meta, req.PlanID, req.ProviderMetadata)
	}
	if !reflect.DeepEqual(q.call.Call, want) {
		t.Fatalf("readTypedRoute(%q) = %#v; format.Normalize: %#v", body, q.call.Call, want)
	}
	return true
}

func TestTypedRouteAgreesWithTheGenericPath(t *testing.T) {
	for _, s := range typedRouteSeeds {
		if got := checkTypedRoute(t, s.body); got != s.taken {
			t.Errorf("readTypedRoute(%q) taken = %v, want %v", s.body, got, s.taken)
		}
	}
}

// FuzzTypedRoute: whatever readTypedRoute takes, the generic path takes
// the same way. Explore with
// go test -run='^$' -fuzz=FuzzTypedRoute ./internal/httpapi/
func FuzzTypedRoute(f *testing.F) {
	for _, s := range typedRouteSeeds {
		f.Add(s.body)
	}
	f.Fuzz(func(t *testing.T, body string) { checkTypedRoute(t, body) })
}
