package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/api"
)

// bodyOps is every operation of api/openapi.yaml with a JSON request body,
// as the request checker compiled it.
func bodyOps(t testing.TB) map[string]*opBody {
	t.Helper()
	doc, err := loadSpec(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newRequestChecker(doc, 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	ops := make(map[string]*opBody)
	for name, rt := range c.ops {
		if ob := c.bodies[rt]; ob != nil {
			ops[name] = ob
		}
	}
	return ops
}

// valid bodies of each operation, the seeds of the mutations.
var validBodies = map[string][]string{
	"POST /route": {
		`{"plan_id":"p","tool_call":{"id":"c","type":"function","function":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}}`,
		`{"plan_id":"p","tool_call":{"type":"tool_use","id":"t","name":"x","input":{"a":"\u00e9\n","n":[1,2.5,-0,1e308,true,null]}},"provider_metadata":{"a":1}}`,
		" \t\r\n{ \"tool_call\" : {} , \"plan_id\" : \"p\" } \n",
	},
	"POST /route/batch": {
		`{"plan_id":"p","tool_calls":[{"id":"c","type":"function","function":{"name":"a","arguments":"{}"}},{"name":"b"}]}`,
		`{"plan_id":"p","tool_calls":[]}`,
		`{"plan_id":"p","message":{"role":"assistant","tool_calls":[]},"provider_metadata":{}}`,
		`{"plan_id":"p","message":[1,"x"]}`,
	},
	"POST /runs": {
		`{"prompt":"hi"}`,
		`{"prompt":"hi","system":"s","provider":"openai","model":"m","max_iterations":3,"repeat_limit":0,"tools":["a","b"],"tool_choice":"auto","context":{"plan_id":"p","phase":"x","sandbox_root":"/s","resource_bindings":{"a":1}},"server":"v","search_mode":"call"}`,
	},
	"POST /approvals/{id}": {
		`{"decision":"approve"}`,
		`{"decision":"deny","reason":"no"}`,
	},
	// In the spec, not body-checked by the server (the MCP SDK reads them).
	"POST /mcp":          {`{"jsonrpc":"2.0","id":1,"method":"ping"}`},
	"POST /mcp/{server}": {`{"jsonrpc":"2.0","id":1,"method":"ping"}`},
}

// oddValues replace a property's value, or are added under a new name.
var oddValues = []string{
	`null`, `true`, `false`, `0`, `-1`, `1`, `1.5`, `1000`, `1001`, `1e300`, `-0`, `1e400`, `01`, `1.`, `NaN`,
	`""`, `"x"`, `"auto"`, `"inject"`, `"deny"`, `"a\u0001"`, `"a\u007f"`, `"a\u0085"`, `"a\u2028"`, `"\ud800"`, `"\"q\\"`,
	"\"\xff\xfe\"", "\"a\tb\"", `"` + strings.Repeat("é", 256) + `"`, `"` + strings.Repeat("é", 257) + `"`,
	`"` + strings.Repeat("😀", 128) + `"`, `"` + strings.Repeat("😀", 129) + `"`, `"` + strings.Repeat("x", 2001) + `"`,
	`"` + strings.Repeat("x", 65) + `"`,
	`[]`, `[1]`, `["a",1]`, `[{}]`, `[{},1,"x",null,[]]`, `{}`, `{"a":1}`, `{"plan_id":""}`, `{"plan_id":"p","x":1}`,
	`{"plan_id":1,"phase":2}`, `{"a":}`, `{"a":1,}`, `[1,]`, `{`, `[`, `"`, `tru`, `nul`,
	`[` + strings.Repeat(`{},`, 1024) + `{}]`, `[` + strings.Repeat(`{},`, 1023) + `{}]`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 9999) + strings.Repeat("]", 9999),
}

// bodyCorpus is the bodies the differential tests send to op: its valid
// bodies; each of its properties left out, and set to each odd value; odd
// keys added; and malformed or non-object bodies.
func bodyCorpus(op string, ob *opBody) []string {
	var out []string
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range ob.kin.Properties {
			if !yield(k) {
				return
			}
		}
	})
	for _, base := range validBodies[op] {
		out = append(out, base)
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(base), &m); err != nil {
			panic(err)
		}
		for _, name := range names {
			out = append(out, objectOf(m, name, ""))
			for _, v := range oddValues {
				out = append(out, objectOf(m, name, v))
			}
		}
		for _, extra := range []string{`"PLAN_ID"`, `"x"`, `"plan\u005fid"`, `"\u00e9"`, "\"\xff\"", `"0"`, `""`} {
			out = append(out, strings.Replace(base, "{", "{"+extra+":1,", 1))
		}
		// Several problems at once, more than five.
		many := base[:len(base)-1]
		for i := range 7 {
			many += fmt.Sprintf(`,"u%d":%d`, i, i)
		}
		out = append(out, many+"}", strings.Replace(many+"}", `"p"`, `""`, 1))
		// Duplicate keys: the last one counts.
		for _, name := range names {
			for _, v := range []string{`null`, `"p"`, `{}`, `[]`, `1`} {
				out = append(out, strings.Replace(base, "{", fmt.Sprintf("{%q:%s,", name, v), 1))
				out = append(out, base[:len(base)-1]+fmt.Sprintf(",%q:%s}", name, v))
			}
		}
		out = append(out, base+" x", base+"{}", "\ufeff"+base, base+"\f", "\v"+base, base[:len(base)-1], base+"}")
	}
	out = append(out, "", " ", "{", "}", "[]", "[{}]", "null", "1", `"s"`, "true", "{}", "{,}", `{"a" 1}`, `{'a':1}`,
		`{"a":1}/**/`, "\xff", `{"a":1e400}`, `{"a":[1e400]}`)
	return out
}

// objectOf is m's JSON with name set to v ("": left out), keys in m's order
// sorted.
func objectOf(m map[string]json.RawMessage, name, v string) string {
	var b strings.Builder
	b.WriteByte('{')
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
	if _, ok := m[name]; !ok && v != "" {
		keys = append(keys, name)
	}
	first := true
	for _, k := range keys {
		val := string(m[k])
		if k == name {
			if v == "" {
				continue
			}
			val = v
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%q:%s", k, val)
	}
	b.WriteByte('}')
	return b.String()
}

// answer is what a body check tells the client, and the typed request it
// made.
type answer struct {
	ok            bool
	field, detail string
	route         routeRequest
	batch         batchRequest
}

// kinAnswer is the answer of kin-openapi's check (the ablation, and the
// request checker before issue 37).
func kinAnswer(ob *opBody, raw []byte) answer {
	var st reqState
	obj, field, detail, ok := kinCheck(ob.kin, raw)
	if ok && ob.target != nil {
		setFromGeneric(ob.target(&st), obj)
	}
	return answer{ok: ok, field: field, detail: detail, route: st.route, batch: st.batch}
}

// compiledAnswer is the answer of the compiled check.
func compiledAnswer(ob *opBody, raw []byte) answer {
	var st reqState
	field, detail, ok := ob.check(raw, &st)
	return answer{ok: ok, field: field, detail: detail, route: st.route, batch: st.batch}
}

// TestBodySchemaAnswersAsKinOpenAPI is the differential test of issue 37:
// every body of bodyCorpus, for every operation with a JSON body, gets the
// same answer (passes or not, the problem's field and detail, the typed
// request it decodes to) from the compiled check as from kin-openapi's.
func TestBodySchemaAnswersAsKinOpenAPI(t *testing.T) {
	if kinBody {
		t.Skip("-tags kinbody: the compiled check is not built in")
	}
	ops := bodyOps(t)
	for _, op := range []string{"POST /route", "POST /route/batch", "POST /runs", "POST /approvals/{id}"} {
		if ops[op] == nil || ops[op].schema == nil {
			t.Fatalf("%s: body schema not compiled", op)
		}
	}
	if len(ops) != len(validBodies) {
		t.Fatalf("%d operations with a JSON body, the test has bodies for %d: add the new one to validBodies", len(ops), len(validBodies))
	}
	var n, refused, fast int
	for op, ob := range ops {
		for _, body := range bodyCorpus(op, ob) {
			n++
			want, got := kinAnswer(ob, []byte(body)), compiledAnswer(ob, []byte(body))
			if !want.ok {
				refused++
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %.200q:\n got %+v\nwant %+v", op, body, got, want)
			}
			if ob.target != nil && want.ok && ob.schema.decodeInto([]byte(body), ob.target(&reqState{})) {
				fast++
			}
		}
	}
	t.Logf("%d bodies, %d refused, %d decoded straight into their typed request", n, refused, fast)
	if fast < 10 {
		t.Errorf("only %d bodies took the typed decoding", fast)
	}
}

// FuzzBodySchema: the differential test on any body (seeded with
// bodyCorpus): `go test -fuzz FuzzBodySchema ./internal/httpapi/`.
func FuzzBodySchema(f *testing.F) {
	if kinBody {
		f.Skip("-tags kinbody: the compiled check is not built in")
	}
	ops := bodyOps(f)
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range ops {
			if !yield(k) {
				return
			}
		}
	})
	for i, op := range names {
		for _, body := range validBodies[op] {
			f.Add(uint8(i), []byte(body))
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, body []byte) {
		ob := ops[names[int(i)%len(names)]]
		want, got := kinAnswer(ob, body), compiledAnswer(ob, body)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%.200q:\n got %+v\nwant %+v", body, got, want)
		}
	})
}

// BenchmarkBodyCheck: the request checker's work on the body of
// BenchmarkRouteHTTP/openai (bench/callgrind.sh's), kin-openapi's check
// (the ablation) against the compiled one.
func BenchmarkBodyCheck(b *testing.B) {
	ob := bodyOps(b)["POST /route"]
	raw := []byte(validBodies["POST /route"][0])
	b.Run("kin", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if a := kinAnswer(ob, raw); !a.ok {
				b.Fatal(a.detail)
			}
		}
	})
	b.Run("compiled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if a := compiledAnswer(ob, raw); !a.ok {
				b.Fatal(a.detail)
			}
		}
	})
}
