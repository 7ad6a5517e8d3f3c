package mcpserver_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/exampletools"
	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/pin"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/router"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestFastCallTaken: the SDK's client, on its default protocol
// (2026-07-28), has its tools/call answered by the fast path, and its
// other requests (server/discover, tools/list) by the SDK; with the fast
// path off, none is.
func TestFastCallTaken(t *testing.T) {
	for _, sdk := range []bool{false, true} {
		e := newEnv(t)
		mcpserver.SetSDKCalls(e.h, sdk)
		cs := connectVersion(t, e.url, nil, nil)
		listTools(t, cs)
		for i := range 3 {
			res := call(t, cs, mcpName("test/echo"), map[string]any{"msg": "hi"}, nil)
			if res.IsError || text(t, res) != `{"msg":"hi"}` || res.Meta[mcpserver.MetaSequence] != float64(i) {
				t.Fatalf("sdk %v: call %d: isError %v, _meta %v", sdk, i, res.IsError, res.Meta)
			}
		}
		want := int64(3)
		if sdk {
			want = 0
		}
		if n := mcpserver.FastCalls(e.h); n != want {
			t.Errorf("sdk %v: %d requests on the fast path, want %d", sdk, n, want)
		}
		// A session's calls (2025-11-25) stay with the SDK, which keeps
		// the session's idle timer and cancellation.
		res := call(t, connect(t, e.url, nil), mcpName("test/echo"), map[string]any{"msg": "s"}, nil)
		if res.IsError || mcpserver.FastCalls(e.h) != want {
			t.Errorf("sdk %v: a session's call: isError %v, %d on the fast path", sdk, res.IsError, mcpserver.FastCalls(e.h))
		}
	}
}

// twinTools is the registry with test/held quarantined (its definition
// awaits review: found by name, its calls refused by pin.Guard).
type twinTools struct{ *registry.Registry }

func (r twinTools) Lookup(name string) (*toolrouter.Tool, bool) {
	t, ok := r.Registry.Lookup(name)
	if ok && t.Name == "test/held" {
		cp := *t
		cp.Quarantine = "definition not reviewed"
		return &cp, true
	}
	return t, ok
}

// cannedRouter answers the calls of a few made-up tools with the results
// a full service gives (spend limit, a backend to connect, a backend's
// input_required), and routes the rest.
type cannedRouter struct{ real mcpserver.Router }

func (c cannedRouter) Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
	msg := func(s string) *string { return &s }
	cat := func(c toolrouter.ErrorCategory) *toolrouter.ErrorCategory { return &c }
	base := toolrouter.Result{ToolCallID: "tc_canned", PlanID: req.PlanID, ToolName: req.Call.ToolName}
	switch req.Call.ToolName {
	case "budget":
		base.ErrorCategory, base.Error = cat(toolrouter.CategoryBudget), msg("spend limit of client c1 reached: 1.00 USD per day")
		return &base, nil
	case "connect":
		base.Status, base.Error, base.ConnectURL = toolrouter.ResultAuthRequired, msg("connect the backend first"), "https://gw.example/connect/abc"
		return &base, nil
	case "input":
		base.Success = true
		base.MCPResult = []byte(`{"resultType":"input_required","inputRequests":{"step1":{"method":"elicitation/create","params":{"mode":"form","message":"name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"backend-state"}`)
		return &base, nil
	case "boom":
		return nil, fmt.Errorf("store down")
	}
	return c.real.Do(ctx, req)
}

// refuseLimited is a rate limiter that refuses the calls of "limited".
type refuseLimited struct{}

func (refuseLimited) Take(_ context.Context, _ *access.Client, calls toolrouter.Calls) (access.Verdict, error) {
	v := access.Verdict{Allowed: true, Rate: toolrouter.Rate{N: 10, Window: time.Minute}, Remaining: 9, Reset: 30 * time.Second}
	if calls.Names != nil && slices.Contains(calls.Names(), "limited") {
		v.Allowed, v.Remaining = false, 0
	}
	return v, nil
}

// twinHandler is /mcp as the service wires it for one client with a rate
// limit: the pipeline, the pin guard, the canned results above.
func twinHandler(t *testing.T, tools string, sdk bool) (http.Handler, *mcpserver.Handler) {
	t.Helper()
	reg := twinTools{parse(t, tools, registryYAML+`
  - name: test/held
    description: Quarantined.
    endpoint: `+tools+`/echo
    input_schema: {type: object}
`)}
	st := memory.New()
	exec := remote.New(remote.Options{})
	t.Cleanup(exec.CloseIdle)
	rt := router.New(router.Options{Exec: pin.Guard{Executor: exec}, Seq: st, Finish: &router.Finisher{Results: st},
		Stages: []toolrouter.Stage{pipeline.Resolve(func() pipeline.Tools { return reg }), pipeline.Validate, pipeline.CheckOutput}})
	h := mcpserver.New(mcpserver.Deps{Router: cannedRouter{rt}, Tools: func() mcpserver.Tools { return reg }, Limiter: refuseLimited{},
		StateKey: "twin-state-key", Version: "v-test", Logger: zerolog.New(zerolog.NewTestWriter(t))})
	mcpserver.SetSDKCalls(h, sdk)
	t.Cleanup(h.Close)
	client := access.NewClients(nil, []registry.Client{{Name: "c1", Tools: []string{"*"}, RateLimit: registry.Rate{N: 1000, Window: time.Hour}}}).ByName("c1")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(access.NewContext(r.Context(), client)))
	}), h
}

// TestFastCallAnswersAsTheSDK sends the same requests to two /mcp
// handlers alike but for the fast path, on and off, and compares the
// answers byte for byte (status, headers, body): success, isError, an
// unknown tool, bad arguments (refused by the schema, not an object, not
// JSON-RPC params), a quarantined tool, a rate-limited call, a spend
// limit, a backend to connect (-32042 and its text), a backend's
// input_required (relayed with a signed requestState), a router failure,
// a bad plan id, a string id; and requests the fast path leaves to the
// SDK (a header mismatch, a missing capability, a progress token, a log
// level, an older protocol's header), which must answer the same too.
func TestFastCallAnswersAsTheSDK(t *testing.T) {
	tools := httptest.NewServer(exampletools.Handler())
	t.Cleanup(tools.Close)
	fast, fh := twinHandler(t, tools.URL, false)
	sdk, _ := twinHandler(t, tools.URL, true)
	echo, add, fail, held := mcpName("test/echo"), mcpName("math/add"), mcpName("test/fail"), mcpName("test/held")
	elicitURL := `"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}`
	cases := []struct {
		name, tool, params string
		edit               func(body string, h map[string]string) (string, map[string]string)
		fast               bool   // taken by the fast path
		want               string // in the answer
	}{
		{"success", echo, `{"name":"` + echo + `","arguments":{"msg":"hi"}}`, nil, true, `"structuredContent":{"msg":"hi"}`},
		{"success again", echo, `{"name":"` + echo + `","arguments":{"msg":"<b>&</b>"}}`, nil, true, ""},
		{"no arguments", echo, `{"name":"` + echo + `"}`, nil, true, ""},
		{"isError", fail, `{"name":"` + fail + `","arguments":{}}`, nil, true, `"isError":true`},
		{"unknown tool", "nope", `{"name":"nope","arguments":{}}`, nil, true, `"toolrouter/error_category":"not_found"`},
		{"schema refuses", add, `{"name":"` + add + `","arguments":{"a":"x","b":2}}`, nil, true, `"toolrouter/error_category":"schema"`},
		{"arguments not an object", add, `{"name":"` + add + `","arguments":[1,2]}`, nil, true, `"toolrouter/error_category":"parse"`},
		{"canonical name", "math/add", `{"name":"math/add","arguments":{"a":1,"b":2}}`, nil, true, ""},
		{"quarantined", held, `{"name":"` + held + `","arguments":{}}`, nil, true, `is quarantined`},
		{"rate limited", "limited", `{"name":"limited","arguments":{}}`, nil, true, `"code":-32023`},
		{"spend limit", "budget", `{"name":"budget","arguments":{}}`, nil, true, `"code":-32023`},
		{"connect, text", "connect", `{"name":"connect","arguments":{}}`, nil, true, ""},
		{"connect, -32042", "connect", `{"name":"connect","arguments":{}}`, func(b string, h map[string]string) (string, map[string]string) {
			return strings.Replace(b, `"io.modelcontextprotocol/clientCapabilities":{}`, elicitURL, 1), h
		}, true, `"code":-32042`},
		{"input_required", "input", `{"name":"input","arguments":{}}`, nil, true, `"resultType":"input_required"`},
		{"router failure", "boom", `{"name":"boom","arguments":{}}`, nil, true, `"code":-32603`},
		{"bad plan id", echo, `{"name":"` + echo + `","arguments":{},"_meta":{"toolrouter/plan_id":""}}`, nil, true, `"code":-32602`},
		{"plan id", echo, `{"name":"` + echo + `","arguments":{"msg":"p"},"_meta":{"toolrouter/plan_id":"plan-7"}}`, nil, true, ""},
		{"string id", echo, `{"name":"` + echo + `","arguments":{"msg":"s"}}`, func(b string, h map[string]string) (string, map[string]string) {
			return strings.Replace(b, `"id":1`, `"id":"req-\u00e9<1>"`, 1), h
		}, true, ""},
		{"Mcp-Name mismatch", echo, `{"name":"` + echo + `","arguments":{}}`, func(b string, h map[string]string) (string, map[string]string) {
			h["Mcp-Name"] = "other"
			return b, h
		}, false, `"code":-32020`},
		{"no clientCapabilities", echo, `{"name":"` + echo + `","arguments":{}}`, func(b string, h map[string]string) (string, map[string]string) {
			return strings.Replace(b, `,"io.modelcontextprotocol/clientCapabilities":{}`, "", 1), h
		}, false, ""},
		{"clientInfo with icons", echo, `{"name":"` + echo + `","arguments":{}}`, func(b string, h map[string]string) (string, map[string]string) {
			return strings.Replace(b, `"version":"1"}`, `"version":"1","icons":[{"src":"https://x.example/i.png"}]}`, 1), h
		}, true, `"resultType":"complete"`},
		{"clientInfo not an object", echo, `{"name":"` + echo + `","arguments":{}}`, func(b string, h map[string]string) (string, map[string]string) {
			return strings.Replace(b, `{"name":"t","version":"1"}`, `5`, 1), h
		}, false, `"code":-32602`},
		{"capabilities of a wrong type", echo, `{"name":"` + echo + `","arguments":{}}`, func(b string, h map[string]string) (string, map[string]string) {
			return strings.Replace(b, `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":{"elicitation":5}`, 1), h
		}, false, `"code":-32602`},
		{"escapes in _meta", echo, `{"name":"` + echo + `","arguments":{},"_meta":{"k":"\u00e9"}}`, nil, false, ""},
		{"progress token", echo, `{"name":"` + echo + `","arguments":{},"_meta":{"progressToken":"p1"}}`, nil, false, ""},
		{"log level", echo, `{"name":"` + echo + `","arguments":{},"_meta":{"io.modelcontextprotocol/logLevel":"debug"}}`, nil, false, ""},
		{"keys in another case", echo, `{"name":"` + echo + `","Arguments":{"msg":"x"}}`, nil, true, ""},
		{"params not an object", echo, `[1]`, nil, false, ""},
		{"trailing bytes", echo, `{"name":"` + echo + `","arguments":{}}`, func(b string, h map[string]string) (string, map[string]string) {
			return b + ` x`, h
		}, false, ""},
		{"params twice", echo, `{"name":"` + echo + `","arguments":{"msg":"one"}}`, func(b string, h map[string]string) (string, map[string]string) {
			return strings.TrimSuffix(b, "}") + `,"params":{"name":"` + echo + `"}}`, h
		}, false, ""},
		{"name twice", echo, `{"name":"` + add + `","name":"` + echo + `","arguments":{"msg":"n"}}`, nil, true, ""},
		{"_meta twice", echo, `{"name":"` + echo + `","arguments":{"msg":"m"},"_meta":{"toolrouter/plan_id":"p"}}`, func(b string, h map[string]string) (string, map[string]string) {
			return strings.Replace(b, `"_meta":`, `"_meta":{"k":1},"_meta":`, 1), h
		}, true, ""},
		{"method twice", echo, `{"name":"` + echo + `","arguments":{}}`, func(b string, h map[string]string) (string, map[string]string) {
			return strings.Replace(b, `"method":"tools/call"`, `"method":"tools/list","method":"tools/call"`, 1), h
		}, true, ""},
		{"version header mismatch", echo, `{"name":"` + echo + `","arguments":{}}`, func(b string, h map[string]string) (string, map[string]string) {
			return strings.Replace(b, `/protocolVersion":"2026-07-28"`, `/protocolVersion":"2026-07-29"`, 1), h
		}, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, h := modernCall(tc.tool, tc.params)
			if tc.edit != nil {
				body, h = tc.edit(body, h)
			}
			before := mcpserver.FastCalls(fh)
			a, b := record(fast, body, h), record(sdk, body, h)
			if taken := mcpserver.FastCalls(fh) > before; taken != tc.fast {
				t.Errorf("fast path taken: %v, want %v", taken, tc.fast)
			}
			if !strings.Contains(a.Body.String(), tc.want) {
				t.Errorf("answer %d %s: want %s in it", a.Code, a.Body, tc.want)
			}
			if a.Code != b.Code || !sameHeader(a.Header(), b.Header()) || !bytes.Equal(a.Body.Bytes(), b.Body.Bytes()) {
				t.Errorf("answers differ:\nfast %d %v\n%s\nsdk  %d %v\n%s", a.Code, a.Header(), a.Body, b.Code, b.Header(), b.Body)
			}
		})
	}
}

// modernCall is a 2026-07-28 tools/call of tool with params (its _meta
// merged with the protocol's), and its headers.
func modernCall(tool, params string) (string, map[string]string) {
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}`
	switch {
	case !strings.HasPrefix(params, "{"):
	case strings.Contains(params, `"_meta":{`):
		params = strings.Replace(params, `"_meta":{`, `"_meta":{`+meta+`,`, 1)
	default:
		params = strings.TrimSuffix(params, "}") + `,"_meta":{` + meta + `}}`
	}
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`,
		map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
}

func record(h http.Handler, body string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// sameHeader compares two answers' headers.
func sameHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
