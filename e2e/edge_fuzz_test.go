package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/toolrouterd/toolrouterd/api"

	"github.com/toolrouterd/toolrouterd/internal/poll"
)

// The edge fuzz: thousands of generated malformed and hostile requests
// against the real binary, on every endpoint and method. No answer may be
// 5xx, every answer must match api/openapi.yaml, every 4xx must be a
// problem document with a detail, and the process must stay alive,
// healthy and without leaked goroutines. TOOLROUTER_EDGE_SEED=N replays a
// run; TOOLROUTER_EDGE_N=N changes how many requests it sends.

// edgeRegistry is the example registry plus a provider served by the fake
// LLM (which answers "done" to everything not scripted).
func edgeRegistry(t *testing.T, toolsAddr string, f *fakeLLM) string {
	return exampleRegistry(t, toolsAddr) + fmt.Sprintf(`
providers:
  - name: fake
    kind: %s
    base_url: %s
    model: fake-model
    api_key_env: EDGE_LLM_KEY
default_provider: fake
`, f.provider, f.baseURL)
}

// edgeRequest is one generated request.
type edgeRequest struct {
	method, path string
	body         []byte // nil: no body
	header       [][2]string
	what         string // the generator, for failure messages
}

func (r edgeRequest) String() string {
	b := r.body
	if len(b) > 300 {
		b = append(append([]byte{}, b[:300]...), "…"...)
	}
	return fmt.Sprintf("[%s] %s %s %v %q", r.what, r.method, r.path, r.header, b)
}

// gen makes hostile requests from a seeded source.
type gen struct {
	r *rand.Rand
}

func (g *gen) n(k int) int           { return g.r.IntN(k) }
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func pick[T any](g *gen, xs ...T) T { return xs[g.n(len(xs))] }

// jsonString encodes s as a JSON string (valid UTF-8 kept as is).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// scalar is a JSON scalar, often an edge case, as raw JSON text.
func (g *gen) scalar() string {
	return pick(g,
		`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `1.5`, `1e308`, `-1e308`, `5e-324`, `1e-400`,
		`123456789012345678901234567890`, `9007199254740993`, `1E+2`, `0.1e1`,
		`""`, `" "`, `"x"`, `"NaN"`, `"Infinity"`, `"-Infinity"`, `"1e400"`, `"null"`, `"{}"`, `"[]"`,
		`"\u0000"`, `"\ud800"`, `"\udc00\ud800"`, `"\u202e"`, `"😀"`, `"日本語"`, `"\\"`, `"\"quoted\""`,
		`"<script>alert(1)</script>"`, `"'; DROP TABLE runs; --"`, `"../../etc/passwd"`, `"%00"`, `"\r\nX-Injected: 1"`,
		"\"\xff\xfe\"", "\"\xc3\x28\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
		jsonString(strings.Repeat("x", 1+g.n(5000))),
		jsonString(strings.Repeat("é", 1+g.n(2000))),
	)
}

// value is a random JSON value of bounded depth, as raw JSON text (which
// may hold duplicate keys, invalid UTF-8 and lone surrogates).
func (g *gen) value(depth int) string {
	if depth <= 0 || g.chance(0.5) {
		return g.scalar()
	}
	var b strings.Builder
	k := g.n(4)
	if g.chance(0.5) {
		b.WriteByte('[')
		for i := 0; i < k; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(g.value(depth - 1))
		}
		b.WriteByte(']')
		return b.String()
	}
	b.WriteByte('{')
	for i := 0; i < k; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		key := pick(g, `"a"`, `"a"`, `""`, `"name"`, `"arguments"`, `"id"`, `"type"`, `"__proto__"`, "\"\xff\"", `"\u0000"`)
		b.WriteString(key + ":" + g.value(depth-1))
	}
	b.WriteByte('}')
	return b.String()
}

// nested is n levels of arrays or objects.
func nested(n int, object bool) string {
	if object {
		return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)
	}
	return strings.Repeat("[", n) + strings.Repeat("]", n)
}

// toolName is a registry tool, an alias, an unknown name or junk.
func (g *gen) toolName() string {
	return pick(g,
		`"test/echo"`, `"test/echo"`, `"math/add"`, `"test/validator"`, `"test/validator-fail"`, `"test/fail"`, `"test/context"`,
		`"test_echo_8a21e386"`, `"math_add_bc986fc6"`, `"nope/nope"`, `""`, `" test/echo "`, `"TEST/ECHO"`,
		g.scalar(), g.value(2))
}

// arguments are the arguments of a call in any of the forms providers use,
// and in forms none does.
func (g *gen) arguments() string {
	obj := pick(g, `{}`, `{"msg":"hi"}`, `{"a":1,"b":2}`, `{"a":"two"}`, `{"a":1e308,"b":1e308}`, `{"msg":`+g.scalar()+`}`, g.value(3))
	switch g.n(12) {
	case 0:
		return obj
	case 1:
		return jsonString(obj) // OpenAI: a JSON string
	case 2:
		return jsonString(jsonString(obj)) // a string of JSON of a string
	case 3:
		return jsonString(jsonString(jsonString(obj)))
	case 4:
		return `""`
	case 5:
		return jsonString("{not json")
	case 6:
		return jsonString(`{"a":1e400}`)
	case 7:
		return jsonString(nested(100+g.n(20000), g.chance(0.5)))
	case 8:
		return pick(g, `7`, `[1,2]`, `true`, `null`, `[]`, `"[]"`, `"null"`, `"7"`)
	case 9:
		return `{"a":1,"a":2,"b":3,"b":"x"}` // duplicate keys
	case 10:
		return `{"msg":` + nested(50+g.n(500), g.chance(0.5)) + `}`
	}
	return g.value(3)
}

// toolCall is a tool call in one provider shape, with wrong types inside
// some of the time.
func (g *gen) toolCall() string {
	name, args := g.toolName(), g.arguments()
	id := pick(g, `"call_1"`, `"toolu_01"`, `""`, `1`, `null`, `{}`, g.scalar())
	maybe := func(valid string) string {
		if g.chance(0.15) {
			return g.value(2)
		}
		return valid
	}
	switch g.n(12) {
	case 0: // OpenAI Chat Completions
		return `{"id":` + id + `,"type":` + maybe(`"function"`) + `,"function":` + maybe(`{"name":`+name+`,"arguments":`+args+`}`) + `}`
	case 1: // OpenAI Responses
		return `{"type":` + maybe(`"function_call"`) + `,"call_id":` + id + `,"name":` + name + `,"arguments":` + args + `}`
	case 2: // flattened
		return `{"name":` + name + `,"arguments":` + args + `}`
	case 3: // Anthropic
		return `{"type":` + maybe(`"tool_use"`) + `,"id":` + id + `,"name":` + name + `,"input":` + args + `}`
	case 4: // LangChain
		return `{"name":` + name + `,"args":` + args + `,"id":` + id + `,"type":` + maybe(`"tool_call"`) + `}`
	case 5: // Ollama
		return `{"function":` + maybe(`{"name":`+name+`,"arguments":`+args+`}`) + `}`
	case 6: // Gemini
		return `{"functionCall":` + maybe(`{"name":`+name+`,"args":`+args+`,"id":`+id+`}`) + `}`
	case 7: // Bedrock
		return `{"toolUse":` + maybe(`{"toolUseId":`+id+`,"name":`+name+`,"input":`+args+`}`) + `}`
	case 8: // MCP tools/call
		return `{"jsonrpc":` + maybe(`"2.0"`) + `,"id":` + id + `,"method":` + maybe(`"tools/call"`) + `,"params":` + maybe(`{"name":`+name+`,"arguments":`+args+`}`) + `}`
	case 9: // {"name","parameters"}
		return `{"name":` + name + `,"parameters":` + args + `}`
	case 10: // several shapes at once
		return `{"name":` + name + `,"arguments":` + args + `,"function":{"name":` + name + `},"functionCall":{},"toolUse":null,"input":` + args + `}`
	}
	return g.value(3)
}

// routeBody is a POST /route body with each field valid, wrong, missing
// or repeated.
func (g *gen) routeBody() []byte {
	var fields []string
	switch g.n(6) {
	case 0:
	case 1:
		fields = append(fields, `"plan_id":`+g.scalar())
	default:
		fields = append(fields, `"plan_id":`+pick(g, `"edge-plan"`, `"edge-plan"`, jsonString(fmt.Sprintf("edge-%d", g.n(50))), `"`+strings.Repeat("p", 256)+`"`, `"`+strings.Repeat("p", 257)+`"`))
	}
	switch g.n(8) {
	case 0:
	case 1:
		fields = append(fields, `"tool_call":`+g.value(3))
	default:
		fields = append(fields, `"tool_call":`+g.toolCall())
	}
	switch g.n(5) {
	case 0:
		fields = append(fields, `"provider_metadata":`+g.value(3))
	case 1:
		fields = append(fields, `"provider_metadata":{"model":"gpt-4o","trace":`+g.value(2)+`}`)
	}
	if g.chance(0.05) {
		fields = append(fields, `"unknown_field":`+g.scalar())
	}
	if g.chance(0.05) && len(fields) > 0 { // duplicate key
		fields = append(fields, fields[g.n(len(fields))])
	}
	g.r.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	return []byte("{" + strings.Join(fields, ",") + "}")
}

func (g *gen) batchBody() []byte {
	var calls []string
	for i := g.n(6); i > 0; i-- {
		calls = append(calls, g.toolCall())
	}
	list := "[" + strings.Join(calls, ",") + "]"
	if g.chance(0.15) {
		list = g.value(2)
	}
	if g.chance(0.03) {
		list = "[" + strings.TrimSuffix(strings.Repeat(`{},`, 1025), ",") + "]" // over maxItems
	}
	return []byte(`{"plan_id":` + pick(g, `"edge-batch"`, g.scalar()) + `,"tool_calls":` + list + `}`)
}

func (g *gen) runBody() []byte {
	var fields []string
	fields = append(fields, `"prompt":`+pick(g, `"say done"`, `"say done"`, `""`, g.scalar()))
	if g.chance(0.4) {
		fields = append(fields, `"max_iterations":`+pick(g, `1`, `3`, `0`, `-1`, `1.5`, `1e300`, `99999999999999999999`, `"3"`, `null`))
	}
	if g.chance(0.3) {
		fields = append(fields, `"repeat_limit":`+pick(g, `0`, `2`, `-1`, `1e10`, `"x"`))
	}
	if g.chance(0.3) {
		fields = append(fields, `"tools":`+pick(g, `["test/echo"]`, `[]`, `["test_echo_8a21e386"]`, `["nope"]`, `[1]`, `"test/echo"`, g.value(2)))
	}
	if g.chance(0.2) {
		fields = append(fields, `"tool_choice":`+pick(g, `"auto"`, `"none"`, `"required"`, `"maybe"`, `1`))
	}
	if g.chance(0.2) {
		fields = append(fields, `"provider":`+pick(g, `"fake"`, `"nope"`, `""`, `1`))
	}
	if g.chance(0.2) {
		fields = append(fields, `"model":`+pick(g, `"fake-model"`, `"other-model"`, `""`, `7`))
	}
	if g.chance(0.2) {
		fields = append(fields, `"system":`+pick(g, `"be brief"`, `""`, g.scalar()))
	}
	if g.chance(0.3) {
		fields = append(fields, `"context":`+pick(g,
			`{"plan_id":"edge-runs"}`, `{"plan_id":"edge-runs","phase":"p","sandbox_root":"/tmp/x","resource_bindings":{"db":"x"},"automation_profile":"a","project_resources":[1,"x",{}],"metadata":{"k":[1]}}`,
			`{}`, `{"plan_id":""}`, `{"plan_id":"x","resource_bindings":[]}`, `{"plan_id":"x","bogus":1}`, g.value(2)))
	}
	if g.chance(0.05) {
		fields = append(fields, `"stream":true`)
	}
	return []byte("{" + strings.Join(fields, ",") + "}")
}

// body is a whole-body edge case for any POST.
func (g *gen) oddBody() []byte {
	switch g.n(16) {
	case 0:
		return []byte{}
	case 1:
		return []byte(g.scalar())
	case 2:
		return []byte(`[` + g.value(2) + `]`)
	case 3:
		return []byte(nested(10000, g.chance(0.5))) // one past encoding/json's limit
	case 4:
		return []byte(`{"plan_id":"edge","tool_call":{"name":"test/echo","arguments":{"msg":` + nested(9990, g.chance(0.5)) + `}}}`)
	case 5:
		return []byte(`{"plan_id":"edge","tool_call":{"name":"test/echo","arguments":{"msg":` + jsonString(strings.Repeat("x", 900_000)) + `}}}`)
	case 6:
		return []byte(`{"plan_id":"edge","tool_call":{"name":"test/echo","arguments":{"msg":"` + strings.Repeat("x", 1_100_000) + `"}}}`) // over the limit
	case 7:
		return []byte(`{"plan_id":"edge","tool_call":{"name":"test/echo","arguments":{"a":1e400}}}`)
	case 8:
		return []byte(`{"plan_id":"edge","tool_call":{"name":"test/echo"}} {}`)
	case 9:
		return []byte("{\"plan_id\":\"edge\xff\",\"tool_call\":{\"name\":\"test/echo\xfe\",\"arguments\":{\"\xc0\":\"\xed\xa0\x80\"}}}")
	case 10:
		return []byte("\xef\xbb\xbf" + `{"plan_id":"edge","tool_call":{}}`) // a BOM
	case 11:
		return []byte(`{"plan_id":"edge","tool_call":{},}`)
	case 12:
		return []byte(`{'plan_id':'edge'}`)
	case 13:
		return []byte(`{"plan_id":"edge","tool_call":{"name":"test/echo","arguments":"{}"}}` + strings.Repeat(" ", 1000))
	case 14:
		return []byte("{\"plan_id\":\"edge\",\"tool_call\":{\"name\":\"test/echo\",\"arguments\":\"{}\"}}\x00")
	}
	b := make([]byte, 1+g.n(200))
	for i := range b {
		b[i] = byte(g.n(256))
	}
	return b
}

var (
	edgeProviders = []string{"openai", "anthropic", "langchain", "unknown", "gemini", "bedrock", "mcp"}
	edgePaths     = []string{
		"/", "//route", "/route/", "/route//", "/./route", "/route/.", "/%2e%2e/route", "/ROUTE", "/route%00", "/route%2Fbatch",
		"/route/batch/", "/route/batch/x", "/healthz/", "/metrics/x", "/openapi.json", "/schemas", "/schemas/", "/schemas//openai",
		"/schemas/openai/x", "/runs/", "/runs//", "/runs/x/y", "/admin", "/.env", "/debug/pprof/", "/" + strings.Repeat("a", 4000),
		"/%ff%fe", "/%", "/a%zz", "/route?%zz", "/route#frag",
	}
	edgeMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "PROPFIND", "BREW"}
)

// queryValue is a random query parameter value, escaped (or, sometimes,
// with raw escapes of its own).
func (g *gen) queryValue() string {
	if g.chance(0.1) {
		return pick(g, "%00", "%ff", "%", "%zz", "a%20b", "+5")
	}
	return url.QueryEscape(pick(g, "1", "5", "0", "-1", "1e9", "1000000000", "99999999999999999999", "", "abc", " 5", "5 ", "0x10", "1.0",
		"1000", "1001", "NaN", "Infinity", "日本", "\xff", strings.Repeat("9", 400)))
}

func (g *gen) header() [][2]string {
	var h [][2]string
	if g.chance(0.3) {
		h = append(h, [2]string{"Accept", pick(g, "*/*", "text/event-stream", "application/json, text/event-stream", "text/event-stream;q=0",
			"text/event-stream, application/json;q=0.1", "text/html", "TEXT/EVENT-STREAM", ";;;", "application/*", "text/*;q=0.5", strings.Repeat("a/b,", 500))})
	}
	if g.chance(0.15) {
		h = append(h, [2]string{"X-Request-Id", pick(g, "", "req-1", strings.Repeat("r", 129), "ключ", "a b", "\t")})
	}
	if g.chance(0.1) {
		h = append(h, [2]string{"Authorization", pick(g, "Bearer x", "bearer", "Basic YTpi", strings.Repeat("B", 2000))})
	}
	if g.chance(0.05) {
		h = append(h, [2]string{"Content-Encoding", pick(g, "gzip", "br", "identity")})
	}
	if g.chance(0.05) {
		h = append(h, [2]string{"Expect", "100-continue"})
	}
	return h
}

func (g *gen) contentType() string {
	if g.chance(0.8) {
		return pick(g, "application/json", "application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8")
	}
	return pick(g, "", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset",
		";;;", "application/problem+json", "application/json; charset=latin1", "application/jsonx", "*/*", "application/json, text/plain")
}

// next makes one request.
func (g *gen) next(seq int) edgeRequest {
	var req edgeRequest
	req.header = g.header()
	post := func(path string, body []byte) {
		req.method, req.path, req.body = "POST", path, body
		req.header = append(req.header, [2]string{"Content-Type", g.contentType()})
	}
	switch g.n(20) {
	case 0, 1, 2, 3, 4:
		req.what = "route"
		post("/route", g.routeBody())
	case 5, 6:
		req.what = "batch"
		post("/route/batch", g.batchBody())
	case 7, 8:
		req.what = "runs"
		post("/runs", g.runBody())
		if g.chance(0.2) {
			req.header = append(req.header, [2]string{"Prefer", pick(g, "respond-async", "respond-async; wait=1", "wait=5, respond-async", "handling=strict", "")})
		}
	case 9:
		req.what = "odd body"
		post(pick(g, "/route", "/route/batch", "/runs"), g.oddBody())
	case 10:
		req.what = "idempotency"
		post(pick(g, "/route", "/route/batch"), g.routeBody())
		if strings.HasSuffix(req.path, "batch") {
			req.body = g.batchBody()
		}
		key := pick(g, "edge-key-fixed", fmt.Sprintf("edge-key-%d", seq), "", " ", strings.Repeat("k", 255), strings.Repeat("k", 256), "ключ", "a b", "a\tb", "k,k")
		req.header = append(req.header, [2]string{"Idempotency-Key", key})
	case 11, 12:
		req.what = "schemas"
		p := pick(g, edgeProviders...)
		if g.chance(0.3) {
			p = pick(g, "cohere", "OPENAI", "open%61i", "open%2Fai", "%ff", "%00", "..", "%2e%2e", strings.Repeat("x", 3000))
		}
		req.method, req.path = pick(g, "GET", "GET", "HEAD"), "/schemas/"+p
		var q []string
		for i := g.n(3); i > 0; i-- {
			q = append(q, pick(g, "max_description_length", "max_description_length", "x", "")+"="+g.queryValue())
		}
		if len(q) > 0 {
			req.path += "?" + strings.Join(q, "&")
		}
	case 13:
		req.what = "list runs"
		req.method, req.path = "GET", "/runs"
		var q []string
		if g.chance(0.8) {
			q = append(q, "plan_id="+pick(g, "edge-runs", "", "x", "%ff", strings.Repeat("p", 2000)))
		}
		for i := g.n(3); i > 0; i-- {
			q = append(q, pick(g, "limit", "limit", "plan_id", "offset")+"="+g.queryValue())
		}
		if len(q) > 0 {
			req.path += "?" + strings.Join(q, "&")
		}
	case 14:
		req.what = "get run"
		req.method = pick(g, "GET", "GET", "HEAD")
		req.path = "/runs/" + pick(g, "run_unknown", "x", "%2F", "a%2Fb", "%ff", "%00", "..", "%2e%2e", "run_"+strings.Repeat("0", 24), strings.Repeat("r", 3000))
	case 15:
		req.what = "odd path"
		req.method, req.path = pick(g, edgeMethods...), pick(g, edgePaths...)
		if g.chance(0.3) {
			req.body = g.routeBody()
		}
	case 16:
		req.what = "odd method"
		req.method = pick(g, edgeMethods...)
		req.path = pick(g, "/route", "/route/batch", "/runs", "/runs/x", "/schemas/openai", "/healthz", "/readyz", "/metrics", "/openapi.yaml")
		if g.chance(0.5) {
			req.body = g.routeBody()
			req.header = append(req.header, [2]string{"Content-Type", g.contentType()})
		}
	case 17:
		req.what = "operations"
		req.method = pick(g, "GET", "HEAD")
		req.path = pick(g, "/healthz", "/readyz", "/metrics", "/openapi.yaml") + pick(g, "", "?x=1", "?"+strings.Repeat("a=1&", 100))
	case 18:
		req.what = "mcp"
		req.method = pick(g, "POST", "POST", "GET", "DELETE")
		req.path = "/mcp"
		if req.method == "POST" {
			req.body = []byte(pick(g,
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"edge","version":"1"}}}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_echo_8a21e386","arguments":`+g.arguments()+`}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`, g.value(3), string(g.oddBody())))
			req.header = append(req.header, [2]string{"Content-Type", g.contentType()})
		}
		req.header = append(req.header, [2]string{"Accept", pick(g, "application/json, text/event-stream", "application/json", "text/event-stream", "")})
		if g.chance(0.5) {
			req.header = append(req.header, [2]string{"Mcp-Session-Id", pick(g, "nope", "", strings.Repeat("s", 300))})
		}
	default:
		req.what = "stream"
		post(pick(g, "/route", "/runs"), nil)
		if req.path == "/route" {
			req.body = g.routeBody()
		} else {
			req.body = g.runBody()
		}
		req.header = append(req.header, [2]string{"Accept", "text/event-stream"})
	}
	return req
}

// edgeDoc is the spec, for checking the data of SSE events.
var edgeDoc = sync.OnceValues(func() (*openapi3.T, error) {
	return openapi3.NewLoader().LoadFromData(api.Spec)
})

// checkSchema validates v against a component schema of the spec.
func checkSchema(name string, v any) error {
	doc, err := edgeDoc()
	if err != nil {
		return err
	}
	return doc.Components.Schemas[name].Value.VisitJSON(v)
}

// edgeSend sends req and checks the answer; it returns the status (0 when
// the request could not be sent).
func edgeSend(t *testing.T, client *http.Client, base string, req edgeRequest) int {
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequest(req.method, base+req.path, body)
	if err != nil {
		return 0 // a URL Go cannot even send
	}
	for _, h := range req.header {
		hr.Header.Set(h[0], h[1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := client.Do(hr.WithContext(ctx))
	if err != nil {
		if strings.Contains(err.Error(), "invalid header field") || strings.Contains(err.Error(), "invalid method") {
			return 0
		}
		t.Errorf("%v: %v", req, err)
		return 0
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("%v: reading the answer: %v", req, err)
		return resp.StatusCode
	}
	if resp.StatusCode >= 500 {
		t.Errorf("%v → %d %s", req, resp.StatusCode, raw)
		return resp.StatusCode
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("%v → %d without X-Request-Id", req, resp.StatusCode)
	}
	if p := hr.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") || strings.Contains(p, "//") || strings.Contains(strings.ToLower(hr.URL.RawPath), "%2f") {
		// The spec router of checkAgainstSpec takes /route/ for /route and
		// /route%2Fbatch for /route/batch; the server does not (404).
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed && hr.URL.RawPath == "" {
			t.Errorf("%v → %d, want 404", req, resp.StatusCode)
		}
	} else {
		checkAgainstSpec(t, hr, resp, raw)
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case req.method == "HEAD" || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusAccepted && req.path == "/mcp":
	case resp.StatusCode >= 400 && req.path == "/mcp" && resp.StatusCode != http.StatusUnauthorized:
		// The MCP transport's own errors are plain text (spec: McpTransportError).
	case resp.StatusCode >= 400:
		var p struct {
			Status int    `json:"status"`
			Title  string `json:"title"`
			Detail string `json:"detail"`
		}
		if ct != "application/problem+json" || json.Unmarshal(raw, &p) != nil || p.Detail == "" || p.Title == "" || p.Status != resp.StatusCode {
			t.Errorf("%v → %d is not a problem with a detail: %s %s", req, resp.StatusCode, ct, raw)
		}
	case strings.HasPrefix(ct, "text/event-stream") && req.path != "/mcp":
		checkEventStream(t, req, raw)
	}
	return resp.StatusCode
}

// checkEventStream checks a whole SSE answer: well-formed events whose data
// is JSON, ending with the final event, whose data matches the spec.
func checkEventStream(t *testing.T, req edgeRequest, raw []byte) {
	var events []string
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			events = append(events, strings.TrimPrefix(line, "event: "))
		case strings.HasPrefix(line, "data: "):
			last = []byte(strings.TrimPrefix(line, "data: "))
			if !json.Valid(last) {
				t.Errorf("%v: SSE data is not JSON: %.200s", req, last)
			}
		case line == "" || strings.HasPrefix(line, ":"):
		default:
			t.Errorf("%v: stray SSE line %.200q", req, line)
		}
	}
	if len(events) == 0 {
		t.Errorf("%v: empty event stream", req)
		return
	}
	final, schema := events[len(events)-1], ""
	switch {
	case req.path == "/route" && final == "result":
		schema = "RouteResult"
	case req.path == "/runs" && final == "run_finished":
		schema = "Run"
	case final == "error":
		schema = "Problem"
	default:
		t.Errorf("%v: stream ends with %q (events %v)", req, final, events)
		return
	}
	var v any
	if err := json.Unmarshal(last, &v); err != nil {
		t.Errorf("%v: final event data: %v", req, err)
		return
	}
	if err := checkSchema(schema, v); err != nil {
		t.Errorf("%v: final %s event does not match %s: %v\n%.500s", req, final, schema, err, last)
	}
}

// goroutines reads go_goroutines from the binary's /metrics.
func goroutines(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	t.Fatal("no go_goroutines in /metrics")
	return 0
}

// waitGoroutines waits for the binary's goroutine count to fall to at
// most want.
func waitGoroutines(t *testing.T, rt *proc, want int) {
	t.Helper()
	if err := poll.Wait(10*time.Second, func() error {
		if n := goroutines(t, rt.URL()); n > want {
			return fmt.Errorf("the server has %d goroutines, want at most %d", n, want)
		}
		return nil
	}); err != nil {
		t.Errorf("%v (a leak?); their stacks follow its output", err)
		// SIGQUIT: the Go runtime prints every goroutine's stack to the
		// output shown when the test fails.
		_ = rt.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-rt.done:
		case <-time.After(10 * time.Second):
		}
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// TestEdgeFuzz sends generated hostile requests to every endpoint.
func TestEdgeFuzz(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	fake := startFakeLLM(t, "openai")
	rt, _ := startRouter(t, edgeRegistry(t, tools.addr, fake), "EDGE_LLM_KEY=sk-edge", "TOOLROUTER_MAX_BODY_BYTES=1048576")
	seed := uint64(envInt("TOOLROUTER_EDGE_SEED", int(time.Now().UnixNano()%1e9)))
	total := envInt("TOOLROUTER_EDGE_N", 3000)
	t.Logf("seed %d (TOOLROUTER_EDGE_SEED=%d replays it), %d requests", seed, seed, total)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	// Warm up, then take the goroutine baseline.
	for i := 0; i < 20; i++ {
		do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "warm", "tool_call": map[string]any{"name": "test/echo", "arguments": "{}"}})
	}
	baseline := goroutines(t, rt.URL())

	var next atomic.Int64
	var mu sync.Mutex
	statuses := map[int]int{}
	sessions := 0
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := &gen{r: rand.New(rand.NewPCG(seed, uint64(w)))}
			for {
				i := int(next.Add(1))
				if i > total || t.Failed() && i > 50 {
					return
				}
				req := g.next(i)
				st := edgeSend(t, client, rt.URL(), req)
				mu.Lock()
				statuses[st]++
				if req.path == "/mcp" && st == 200 && bytes.Contains(req.body, []byte(`"initialize"`)) {
					sessions++ // an MCP session keeps a goroutine until it idles out (30 min)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("statuses: %v; MCP sessions opened: %d", statuses, sessions)

	t.Run("raw connections", func(t *testing.T) { rawGarbage(t, rt.addr) })

	select {
	case <-rt.done:
		t.Fatalf("toolrouterd exited: %v", rt.err)
	default:
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if resp := do(t, "GET", rt.URL()+path, nil); resp.Status != 200 {
			t.Errorf("%s after the fuzz: %d %s", path, resp.Status, resp.Body)
		}
	}
	if resp := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "after", "tool_call": map[string]any{"name": "math/add", "arguments": `{"a":2,"b":3}`}}); !strings.Contains(string(resp.Body), `"sum":5`) {
		t.Errorf("a good call after the fuzz: %d %s", resp.Status, resp.Body)
	}
	client.CloseIdleConnections()
	http.DefaultClient.CloseIdleConnections()
	// A leak per request or per stream would show as hundreds; the budget
	// covers the idle keep-alive connections the tool and LLM clients
	// keep after concurrent batches (two goroutines each).
	waitGoroutines(t, rt, baseline+sessions+40)
	// The MCP SDK logs these mistakes of a client at error level (a
	// tools/call or notifications/initialized before initialize, a second
	// initialized), which the fuzz makes when it draws them.
	sdkClientErrors := regexp.MustCompile(`"component":"mcpserver".*"message":"(method invalid during initialization|initialized before initialize|duplicate initialized notification)"`)
	for _, bad := range []string{"DATA RACE", "panic", `"level":"error"`, "handler panicked", "superfluous"} {
		var lines []string
		for _, l := range strings.Split(rt.Output(), "\n") {
			if strings.Contains(l, bad) && !sdkClientErrors.MatchString(l) {
				lines = append(lines, l)
			}
		}
		if len(lines) > 0 {
			t.Errorf("the log has %q:\n%s", bad, strings.Join(lines, "\n"))
		}
	}
}

// rawGarbage speaks broken HTTP on raw connections; the server must
// answer (or close) and stay up.
func rawGarbage(t *testing.T, addr string) {
	inputs := []string{
		"GARBAGE\r\n\r\n",
		"GET / HTTP/9.9\r\n\r\n",
		"GET /healthz HTTP/1.1\r\n\r\n", // no Host
		"POST /route HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nContent-Type: application/json\r\n\r\n{\"plan_id\"", // body cut short
		"POST /route HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST /route HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n",
		"POST /route HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", // over MaxHeaderBytes
		"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\x00b\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", // a TLS ClientHello
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /runs/..%2f..%2fetc%2fpasswd HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://evil.example/healthz HTTP/1.1\r\nHost: x\r\n\r\n",
	}
	for _, in := range inputs {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		conn.SetDeadline(time.Now().Add(3 * time.Second))
		conn.Write([]byte(in))
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		line, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if strings.HasPrefix(line, "HTTP/1.1 5") && !strings.HasPrefix(line, "HTTP/1.1 505") { // 505: net/http on HTTP/9.9
			t.Errorf("%.80q → %s", in, strings.TrimSpace(line))
		}
	}
}

// TestEdgeAuth: with TOOLROUTER_API_KEYS set, every operation of the spec
// except the four operations endpoints answers 401 (a problem with
// WWW-Authenticate) to a missing, wrong or malformed key, and lets a good
// one through whatever the scheme's case.
func TestEdgeAuth(t *testing.T) {
	t.Parallel()
	rt, _ := startRouter(t, "tools: []\n", "TOOLROUTER_API_KEYS=k1,k2")
	doc, err := edgeDoc()
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true, "/openapi.yaml": true}
	bad := [][]string{nil, {"Authorization", ""}, {"Authorization", "Bearer"}, {"Authorization", "Bearer k3"}, {"Authorization", "Basic azE6"},
		{"Authorization", "k1"}, {"Authorization", "Bearer k1,k2"}, {"Authorization", "Bearer " + strings.Repeat("k", 5000)}}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			target := strings.NewReplacer("{provider}", "openai", "{id}", "run_x", "{file}", "app.js").Replace(path)
			// Other operations the spec marks unauthenticated (the RFC 9728
			// metadata, 404 while JWT is off) need no key either.
			unauthenticated := op.Security != nil && len(*op.Security) == 0
			var body any
			if method == "POST" {
				body = `{"plan_id":"p","tool_call":{}}`
			}
			for _, h := range bad {
				resp := do(t, method, rt.URL()+target, body, h...)
				if open[path] {
					if resp.Status != 200 {
						t.Errorf("%s %s %v: %d, want 200 without a key", method, path, h, resp.Status)
					}
					continue
				}
				if unauthenticated {
					if resp.Status == 401 || resp.Status >= 500 {
						t.Errorf("%s %s %v: %d, want no authentication", method, path, h, resp.Status)
					}
					continue
				}
				if resp.Status != 401 || resp.Header.Get("WWW-Authenticate") == "" || resp.Header.Get("Content-Type") != "application/problem+json" {
					t.Errorf("%s %s %v: %d %v %s", method, path, h, resp.Status, resp.Header, resp.Body)
				}
			}
			if resp := do(t, method, rt.URL()+target, body, "Authorization", "bearer k2"); resp.Status == 401 || resp.Status >= 500 {
				t.Errorf("%s %s with a good key: %d %s", method, path, resp.Status, resp.Body)
			}
		}
	}
	if strings.Contains(rt.Output(), "k2") {
		t.Errorf("an API key is in the log")
	}
}
