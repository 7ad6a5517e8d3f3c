package guardrail_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// hookServer is a guardrail webhook on loopback answering with answer
// (given the phase), recording the requests it got.
type hookServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []map[string]any
}

func newHookServer(t *testing.T, answer func(req map[string]any) string) *hookServer {
	h := &hookServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil {
			t.Errorf("hook request is not JSON: %s", b)
		}
		h.mu.Lock()
		h.seen = append(h.seen, req)
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer(req))
	}))
	t.Cleanup(h.Close)
	return h
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func echoCall(t *testing.T, tool, args string) any {
	return decodeJSON(t, `{"id":"call_1","type":"function","function":{"name":"`+tool+`","arguments":`+jsonString(args)+`}}`)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestGuardrailBeforeDenyNeverReachesTheTool(t *testing.T) {
	h := newHookServer(t, func(map[string]any) string { return `{"decision":"deny","reason":"no shouting"}` })
	rt, exec, aud := guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(`{"msg":"HI"}`)},
		"guardrails:\n  - {name: policy, endpoint: "+h.URL+", tools: [\"test/e*\"]}\n")
	res, err := rt.Route(context.Background(), "p", echoCall(t, "test/echo", `{"msg":"HI"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || *res.ErrorCategory != toolrouter.CategoryPermission || *res.Error != "denied by guardrail policy: no shouting" {
		t.Fatalf("result %+v, want a permission failure with the hook's reason", res)
	}
	if exec.Req.Tool != nil {
		t.Fatal("the denied call reached the tool")
	}
	got := h.seen[0]
	if got["phase"] != "before" || got["tool"] != "test/echo" || got["guardrail"] != "policy" || got["plan_id"] != "p" ||
		got["tool_call_id"] != res.ToolCallID || got["arguments"].(map[string]any)["msg"] != "HI" {
		t.Errorf("hook request %v", got)
	}
	want := []toolrouter.GuardrailDecision{{Name: "policy", Phase: "before", Decision: "deny", Reason: "no shouting"}}
	if len(aud.Recs) != 1 || !equalJSON(aud.Recs[0].Guardrails, want) {
		t.Errorf("audit guardrails %+v, want %+v", aud.Recs, want)
	}
	// A tool the hook's globs do not cover is not asked about.
	if res, _ := rt.Route(context.Background(), "p", echoCall(t, "test/check", `{}`), nil); !res.Success || len(h.seen) != 1 {
		t.Errorf("test/check: %+v after %d hook calls", res, len(h.seen))
	}
}

func TestGuardrailModifyArgumentsAndResult(t *testing.T) {
	h := newHookServer(t, func(req map[string]any) string {
		if req["phase"] == "before" {
			return `{"decision":"modify","arguments":{"msg":"quiet"}}`
		}
		if req["result"].(map[string]any)["output"].(map[string]any)["msg"] != "tool said" {
			return `{"decision":"deny","reason":"unexpected output"}`
		}
		return `{"decision":"modify","output":{"msg":"hook said"}}`
	})
	rt, exec, aud := guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(`{"msg":"tool said"}`)},
		"guardrails:\n  - {name: rewrite, endpoint: "+h.URL+", phase: both}\n")
	res, err := rt.Route(context.Background(), "p", echoCall(t, "test/echo", `{"msg":"LOUD"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if exec.Req.Args["msg"] != "quiet" || res.Arguments["msg"] != "quiet" {
		t.Errorf("tool got %v, result says %v; want the hook's arguments", exec.Req.Args, res.Arguments)
	}
	if !res.Success || string(res.Output) != `{"msg":"hook said"}` || !strings.Contains(strings.Join(res.Notes, ";"), "replaced by guardrail rewrite") {
		t.Errorf("result %+v (output %s), want the hook's output and a note", res, res.Output)
	}
	if pr, _ := json.Marshal(res.ProviderResult); !strings.Contains(string(pr), "hook said") {
		t.Errorf("provider_result %s does not carry the hook's output", pr)
	}
	if n := len(aud.Recs[0].Guardrails); n != 2 {
		t.Errorf("%d decisions audited, want 2: %+v", n, aud.Recs[0].Guardrails)
	}
	// Arguments that break the tool's input schema are a hook error:
	// refused (on_error: deny, the default).
	h2 := newHookServer(t, func(map[string]any) string { return `{"decision":"modify","arguments":{"msg":7}}` })
	rt2, exec2, _ := guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(`{}`)}, "guardrails:\n  - {name: bad, endpoint: "+h2.URL+"}\n")
	res, _ = rt2.Route(context.Background(), "p", echoCall(t, "test/echo", `{"msg":"x"}`), nil)
	if res.Success || exec2.Req.Tool != nil || !strings.Contains(*res.Error, "msg") || !strings.Contains(*res.Error, "on_error: deny") {
		t.Errorf("result %+v, want a refusal naming msg", res)
	}
}

func TestGuardrailInvalidAnswersAreHookErrors(t *testing.T) {
	for _, answer := range []string{
		`{"decision":"maybe"}`,
		`{"decision":"allow","extra":1}`,
		`{"decision":"allow","arguments":{}}`,
		`{"decision":"modify"}`,
		`{"decision":"modify","arguments":[1]}`,
		`{"decision":"modify","output":{}}`,
		`{"decision":"allow"} {"decision":"allow"}`,
		`[]`, `null`, `not json`,
	} {
		h := newHookServer(t, func(map[string]any) string { return answer })
		rt, exec, aud := guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(`{}`)}, "guardrails:\n  - {name: strict, endpoint: "+h.URL+"}\n")
		res, _ := rt.Route(context.Background(), "p", echoCall(t, "test/echo", `{}`), nil)
		if res.Success || exec.Req.Tool != nil || *res.ErrorCategory != toolrouter.CategoryPermission ||
			!strings.Contains(*res.Error, "guardrail strict failed: invalid answer") {
			t.Errorf("answer %s: result %+v, want a refusal for an invalid answer", answer, res)
		}
		if d := aud.Recs[0].Guardrails; len(d) != 1 || d[0].Decision != "error" {
			t.Errorf("answer %s: audited %+v", answer, d)
		}
	}
}

func TestGuardrailAuditModeLetsCallsThrough(t *testing.T) {
	h := newHookServer(t, func(map[string]any) string { return `{"decision":"deny","reason":"would deny"}` })
	rt, exec, aud := guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(`{"msg":"ok"}`)},
		"guardrails:\n  - {name: shadow, endpoint: "+h.URL+", mode: audit, phase: both}\n")
	res, _ := rt.Route(context.Background(), "p", echoCall(t, "test/echo", `{"msg":"x"}`), nil)
	if !res.Success || exec.Req.Tool == nil {
		t.Fatalf("result %+v, want the call through", res)
	}
	want := []toolrouter.GuardrailDecision{
		{Name: "shadow", Phase: "before", Decision: "deny", Mode: "audit", Reason: "would deny"},
		{Name: "shadow", Phase: "after", Decision: "deny", Mode: "audit", Reason: "would deny"},
	}
	if !equalJSON(aud.Recs[0].Guardrails, want) {
		t.Errorf("audited %+v, want %+v", aud.Recs[0].Guardrails, want)
	}
}

func TestGuardrailRedactsSecrets(t *testing.T) {
	const jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	out := `{"log":"token ` + jwt + ` used; aws AKIAZ4RT7YUIOPL2QW3E","config":"db password=hunter2x","password":"plain","n":12345678901234567890,"note":"ORD-42"}`
	rt, _, aud := guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(out)},
		"guardrails:\n  - name: secrets\n    builtin: redact_secrets\n    patterns: [{name: order-id, regex: 'ORD-[0-9]+'}]\n")
	res, _ := rt.Route(context.Background(), "p", echoCall(t, "test/echo", `{}`), nil)
	got := string(res.Output)
	for _, secret := range []string{jwt, "AKIAZ4RT7YUIOPL2QW3E", "hunter2x", "plain", "ORD-42"} {
		if strings.Contains(got, secret) {
			t.Errorf("output %s still holds %s", got, secret)
		}
	}
	for _, kind := range []string{"[REDACTED:jwt]", "[REDACTED:aws-access-token]", "[REDACTED:password-assignment]", "[REDACTED:secret-field]", "[REDACTED:order-id]"} {
		if !strings.Contains(got, kind) {
			t.Errorf("output %s lacks %s", got, kind)
		}
	}
	if !strings.Contains(got, "12345678901234567890") {
		t.Errorf("output %s: numbers must stay as written", got)
	}
	if pr, _ := json.Marshal(res.ProviderResult); strings.Contains(string(pr), "hunter2x") {
		t.Errorf("provider_result %s holds a secret", pr)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "5 secret(s) redacted by guardrail secrets") {
		t.Errorf("notes %q", res.Notes)
	}
	if d := aud.Recs[0].Guardrails; len(d) != 1 || d[0].Redacted != 5 || d[0].Decision != "modify" {
		t.Errorf("audited %+v", d)
	}
}

func TestOutputSchemaOfHTTPTools(t *testing.T) {
	rt, _, _ := guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(`{"n":"seven"}`)}, "")
	res, _ := rt.Route(context.Background(), "p", echoCall(t, "typed", `{}`), nil)
	if res.Success || *res.ErrorCategory != toolrouter.CategorySchema || !strings.Contains(*res.Error, "output_schema") || !strings.Contains(*res.Error, "/n") {
		t.Fatalf("result %+v, want a schema failure naming /n", res)
	}
	rt, _, _ = guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(`{"n":7}`)}, "")
	if res, _ = rt.Route(context.Background(), "p", echoCall(t, "typed", `{}`), nil); !res.Success {
		t.Fatalf("conforming output failed: %+v", res)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestGuardrailTimeoutFailsClosedOrOpen(t *testing.T) {
	// The hook answers only when the router gives up on it.
	h := newHookServer(t, nil)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the server closes
	h.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	for _, onError := range []string{"deny", "allow", "deny, mode: audit"} {
		rt, exec, aud := guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(`{"msg":"ok"}`)},
			"guardrails:\n  - {name: slow, endpoint: "+h.URL+", timeout: 100ms, on_error: "+onError+"}\n")
		res, _ := rt.Route(context.Background(), "p", echoCall(t, "test/echo", `{}`), nil)
		d := aud.Recs[0].Guardrails
		if len(d) != 1 || d[0].Decision != "error" || !strings.Contains(d[0].Reason, "no answer within 100ms") {
			t.Errorf("on_error %s: audited %+v", onError, d)
		}
		if onError == "deny" && (res.Success || exec.Req.Tool != nil || *res.ErrorCategory != toolrouter.CategoryPermission) {
			t.Errorf("on_error deny: %+v, want refused before the tool", res)
		}
		if onError != "deny" && (!res.Success || exec.Req.Tool == nil) {
			t.Errorf("on_error %s: %+v, want the call through", onError, res)
		}
		if onError == "deny, mode: audit" && (len(d) != 1 || d[0].Mode != "audit" || !strings.Contains(d[0].Reason, "(mode: audit)")) {
			t.Errorf("audit mode: audited %+v", d)
		}
	}
}

// An MCP backend's result passes through /mcp as it came: redaction
// reaches its content blocks too, and an after-hook's new output replaces
// it.
func TestGuardrailMCPResult(t *testing.T) {
	const key = "AKIAZ4RT7YUIOPL2QW3E"
	mcpResult := json.RawMessage(`{"content":[{"type":"text","text":"key ` + key + `"}],"structuredContent":{"k":"` + key + `"}}`)
	rt, _, _ := guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(`{"k":"` + key + `"}`), MCPResult: mcpResult},
		"guardrails:\n  - {name: secrets, builtin: redact_secrets}\n")
	res, _ := rt.Route(context.Background(), "p", echoCall(t, "test/echo", `{}`), nil)
	if strings.Contains(string(res.MCPResult), key) || !strings.Contains(string(res.MCPResult), `"text":"key [REDACTED:aws-access-token]"`) {
		t.Errorf("MCP result %s", res.MCPResult)
	}
	h := newHookServer(t, func(map[string]any) string { return `{"decision":"modify","output":"replaced"}` })
	rt, _, _ = guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(`{}`), MCPResult: mcpResult},
		"guardrails:\n  - {name: rewrite, endpoint: "+h.URL+", phase: after}\n")
	if res, _ = rt.Route(context.Background(), "p", echoCall(t, "test/echo", `{}`), nil); res.MCPResult != nil || string(res.Output) != `"replaced"` {
		t.Errorf("after modify: output %s, MCP result %s; want the hook's output and no backend result", res.Output, res.MCPResult)
	}
}

// reportingExec is a backend that reports, while the call runs, progress
// and log messages holding a secret, through the route's progress and the
// /mcp caller's relay.
type reportingExec struct {
	msg string
	out toolrouter.Outcome
}

func (e reportingExec) Call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	if req.Progress != nil {
		req.Progress(1, 2, e.msg)
	}
	if relay := req.Relay; relay != nil {
		relay.Progress(1, 2, e.msg)
		b, _ := json.Marshal(map[string]string{"line": e.msg})
		relay.Log("info", "tool", b)
	}
	return e.out
}

// What a backend reports while the call runs reaches the caller before
// the output (SSE updates of /route, notifications of /mcp): redaction
// covers it too.
func TestGuardrailRedactsWhatTheBackendReports(t *testing.T) {
	const key = "AKIAZ4RT7YUIOPL2QW3E"
	rt, _, _ := guardedRouter(t, toolrouter.Outcome{}, "guardrails:\n  - {name: secrets, builtin: redact_secrets}\n")
	rt.Exec = reportingExec{msg: "using key " + key, out: toolrouter.Outcome{Output: json.RawMessage(`{}`)}}
	var mu sync.Mutex
	var seen []string
	note := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
	ctx := withRelay(context.Background(), &toolrouter.Relay{
		Progress: func(_, _ float64, m string) { note("relay progress: " + m) },
		Log:      func(_, _ string, data json.RawMessage) { note("relay log: " + string(data)) },
	})
	res, err := rt.Stream(ctx, "p", echoCall(t, "test/echo", `{}`), nil, func(u toolrouter.Update) { note("update: " + u.Message) })
	if err != nil || !res.Success {
		t.Fatalf("result %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 {
		t.Fatalf("the backend's reports did not arrive: %q", seen)
	}
	for _, s := range seen {
		if strings.Contains(s, key) {
			t.Errorf("a report reached the caller unredacted: %s", s)
		}
	}
}

// The before-hooks see the arguments the run's actor context adds
// (RouteWith's extra), and what they answer is what the tool gets.
func TestGuardrailBeforeSeesAndDecidesExtraArguments(t *testing.T) {
	h := newHookServer(t, func(req map[string]any) string {
		return `{"decision":"modify","arguments":{"msg":"hi","sandbox_root":"/srv/safe"}}`
	})
	rt, exec, _ := guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(`{}`)},
		"guardrails:\n  - {name: roots, endpoint: "+h.URL+"}\n")
	res, err := rt.RouteWith(context.Background(), "p", echoCall(t, "test/echo", `{"msg":"hi"}`), nil, map[string]any{"sandbox_root": "/"})
	if err != nil || !res.Success {
		t.Fatalf("%+v %v", res, err)
	}
	if args, _ := h.seen[0]["arguments"].(map[string]any); args["sandbox_root"] != "/" {
		t.Errorf("the hook saw %v, without the actor context's sandbox_root", h.seen[0]["arguments"])
	}
	if exec.Req.Args["sandbox_root"] != "/srv/safe" {
		t.Errorf("the tool got %v, not the hook's sandbox_root", exec.Req.Args)
	}
}

// Redaction runs last of what changes an output, whatever the order of
// the registry's guardrails (issue 32 item 13): with redact_secrets listed
// before an after-hook, a secret in the hook's replacement output reaches
// neither the caller nor the stored result (GET /results); the hook,
// listed after the redaction, sees the tool's output redacted.
func TestRedactionRunsAfterTheHooksWhateverTheOrder(t *testing.T) {
	const toolSecret, hookSecret = "AKIAZ4RT7YUIOPL2QW3E", "AKIAQ7WE3RTY5UIO2PLK"
	var seen string
	h := newHookServer(t, func(req map[string]any) string {
		b, _ := json.Marshal(req["result"])
		seen = string(b)
		return `{"decision":"modify","output":{"msg":"hook said ` + hookSecret + `"}}`
	})
	rt, _, aud := guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(`{"msg":"tool said ` + toolSecret + `"}`), Answered: true},
		"guardrails:\n  - {name: secrets, builtin: redact_secrets}\n  - {name: rewrite, endpoint: "+h.URL+", phase: after}\n")
	st := memory.New()
	rt.Results, aud.Save = st, true
	res, err := rt.Route(context.Background(), "p", echoCall(t, "test/echo", `{}`), nil)
	if err != nil || !res.Success {
		t.Fatalf("route: %v %+v", err, res)
	}
	stored, err := st.GetResult(context.Background(), toolrouter.ScopedKey("", res.ToolCallID))
	if err != nil {
		t.Fatal(err)
	}
	pr, _ := json.Marshal(res.ProviderResult)
	for what, got := range map[string]string{"output": string(res.Output), "provider_result": string(pr), "stored": string(stored.Output)} {
		if strings.Contains(got, hookSecret) || !strings.Contains(got, "hook said [REDACTED:aws-access-token]") {
			t.Errorf("%s %s: the hook's secret not redacted", what, got)
		}
	}
	if strings.Contains(seen, toolSecret) || !strings.Contains(seen, "[REDACTED:aws-access-token]") {
		t.Errorf("the hook listed after the redaction saw %s", seen)
	}
	notes := strings.Join(res.Notes, "; ")
	if !strings.Contains(notes, "replaced by guardrail rewrite") || !strings.Contains(notes, "1 secret(s) redacted by guardrail secrets") {
		t.Errorf("notes %q", notes)
	}
	if d := aud.Recs[0].Guardrails; len(d) != 2 || d[0].Name != "rewrite" || d[1].Name != "secrets" || d[1].Redacted != 1 {
		t.Errorf("audited %+v", d)
	}
}
