package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// docs/trusting-tools.md "Trusting tools": guardrail webhooks, redaction and typed outputs,
// through the real binary from /route, /mcp and a /runs loop.

// Secrets the leaky tool answers with; none may reach a caller.
const (
	leakAWS = "AKIAZ4RT7YUIOPL2QW3E"
	leakJWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	leakPwd = "hunter2-prod"
)

// guardServer is the e2e tests' webhook server, in this process on a real
// loopback socket: /policy decides by the call's msg, /slow answers
// nothing until the router gives up (or the test ends), /deny denies
// everything; /leak is a tool whose output holds secrets.
type guardServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []map[string]any // requests to /policy
}

func startGuardServer(t *testing.T) *guardServer {
	g := &guardServer{}
	release := make(chan struct{})
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
		answer := func(v any) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(v)
		}
		switch r.URL.Path {
		case "/leak":
			answer(map[string]any{"log": "deployed with key " + leakAWS + " and session " + leakJWT,
				"config": "db_password=" + leakPwd, "ok": true})
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-release:
			}
		case "/deny":
			answer(map[string]any{"decision": "deny", "reason": "shadow says no"})
		case "/policy":
			g.mu.Lock()
			g.seen = append(g.seen, req)
			g.mu.Unlock()
			args, _ := req["arguments"].(map[string]any)
			switch {
			case req["phase"] == "before" && args["msg"] == "deny-me":
				answer(map[string]any{"decision": "deny", "reason": "deny-me is not allowed"})
			case req["phase"] == "before" && args["msg"] == "rewrite-me":
				answer(map[string]any{"decision": "modify", "arguments": map[string]any{"msg": "rewritten by hook"}})
			case req["phase"] == "after" && args["msg"] == "result-me":
				answer(map[string]any{"decision": "modify", "output": map[string]any{"msg": "result rewritten by hook"}})
			default:
				answer(map[string]any{"decision": "allow"})
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() { close(release); g.Close() })
	return g
}

// guardRegistry: the example tools, a leaky tool, a typed tool and the
// guardrails of the tests (each hook scoped to the tools of its case).
func guardRegistry(toolsAddr, hookURL string) string {
	return fmt.Sprintf(`tools:
  - {name: test/echo, endpoint: "http://%[1]s/echo", input_schema: {type: object, properties: {msg: {type: string}}}}
  - {name: math/add, endpoint: "http://%[1]s/add", input_schema: {type: object, properties: {a: {type: number}, b: {type: number}}, required: [a, b]}}
  - {name: test/validator, endpoint: "http://%[1]s/validate/pass", kind: validation}
  - {name: test/validator-fail, endpoint: "http://%[1]s/validate/fail", kind: validation}
  - {name: leaky/config, endpoint: "%[2]s/leak"}
  - name: typed/echo
    endpoint: "http://%[1]s/echo"
    input_schema: {type: object, properties: {msg: {type: string}}}
    output_schema: {type: object, properties: {msg: {type: string}}, required: [msg]}
guardrails:
  - {name: policy, endpoint: "%[2]s/policy", tools: [test/echo], phase: both}
  - {name: slow-closed, endpoint: "%[2]s/slow", tools: [math/add], timeout: 300ms}
  - {name: slow-open, endpoint: "%[2]s/slow", tools: [test/validator], timeout: 300ms, on_error: allow}
  - {name: shadow, endpoint: "%[2]s/deny", tools: [test/validator-fail], mode: audit}
  - {name: secrets, builtin: redact_secrets, tools: ["*"]}
`, toolsAddr, hookURL)
}

// outcome is a call's result as any entry point shows it.
type outcome struct {
	id, err, category string
	success           bool
	output            string // JSON
}

// guardCase is one call and what its caller must see.
type guardCase struct {
	name, tool string
	args       map[string]any
	check      func(t *testing.T, o outcome)
}

func wantFailure(category, text string) func(*testing.T, outcome) {
	return func(t *testing.T, o outcome) {
		if o.success || o.category != category || !strings.Contains(o.err, text) {
			t.Errorf("got %+v, want a %s failure with %q", o, category, text)
		}
	}
}

func wantOutput(has string, hasNot ...string) func(*testing.T, outcome) {
	return func(t *testing.T, o outcome) {
		if !o.success || !strings.Contains(o.output, has) {
			t.Errorf("got %+v, want success with %q in the output", o, has)
		}
		for _, s := range hasNot {
			if strings.Contains(o.output, s) {
				t.Errorf("output %s holds %q", o.output, s)
			}
		}
	}
}

var guardCases = []guardCase{
	{"before-hook denies", "test/echo", map[string]any{"msg": "deny-me"},
		wantFailure("permission", "denied by guardrail policy: deny-me is not allowed")},
	{"before-hook rewrites arguments", "test/echo", map[string]any{"msg": "rewrite-me"}, wantOutput("rewritten by hook", "rewrite-me")},
	{"after-hook rewrites the result", "test/echo", map[string]any{"msg": "result-me"}, wantOutput("result rewritten by hook", "result-me")},
	{"timeout fails closed", "math/add", map[string]any{"a": 1, "b": 2},
		wantFailure("permission", "guardrail slow-closed failed: no answer within 300ms")},
	{"timeout fails open when configured", "test/validator", map[string]any{}, wantOutput("passed")},
	{"audit mode lets the call through", "test/validator-fail", map[string]any{}, wantOutput("passed")},
	{"secrets never reach the caller", "leaky/config", map[string]any{}, wantOutput("[REDACTED:", leakAWS, leakJWT, leakPwd)},
	{"typed output conforms", "typed/echo", map[string]any{"msg": "typed"}, wantOutput(`"msg":"typed"`)},
	{"typed output does not conform", "typed/echo", map[string]any{},
		wantFailure("schema", "the tool's output does not match its output_schema: missing property 'msg'")},
}

// checkGuardAudit checks the audit records of the cases' calls (ids in
// case order).
func checkGuardAudit(t *testing.T, base string, ids []string) {
	t.Helper()
	resp := do(t, "GET", base+"/audit?limit=1000", nil)
	var page struct {
		Records []toolrouter.AuditRecord `json:"records"`
	}
	if err := json.Unmarshal(resp.Body, &page); err != nil || resp.Status != 200 {
		t.Fatalf("GET /audit: %d %s", resp.Status, resp.Body)
	}
	byID := map[string]toolrouter.AuditRecord{}
	for _, r := range page.Records {
		byID[r.ToolCallID] = r
	}
	decision := func(i int, name string) toolrouter.GuardrailDecision {
		for _, d := range byID[ids[i]].Guardrails {
			if d.Name == name {
				return d
			}
		}
		t.Errorf("%s: no decision of %s in %+v", guardCases[i].name, name, byID[ids[i]])
		return toolrouter.GuardrailDecision{}
	}
	if d := decision(0, "policy"); d.Decision != "deny" || d.Phase != "before" || d.Reason != "deny-me is not allowed" {
		t.Errorf("deny audited as %+v", d)
	}
	if byID[ids[0]].Outcome != "failure" || byID[ids[0]].ErrorCategory != "permission" {
		t.Errorf("deny record %+v", byID[ids[0]])
	}
	if d := decision(1, "policy"); d.Decision != "modify" {
		t.Errorf("rewrite audited as %+v", d)
	}
	if d := decision(3, "slow-closed"); d.Decision != "error" || !strings.Contains(d.Reason, "on_error: deny") {
		t.Errorf("closed timeout audited as %+v", d)
	}
	if d := decision(4, "slow-open"); d.Decision != "error" || !strings.Contains(d.Reason, "on_error: allow") {
		t.Errorf("open timeout audited as %+v", d)
	}
	if d := decision(5, "shadow"); d.Decision != "deny" || d.Mode != "audit" {
		t.Errorf("audit mode audited as %+v", d)
	}
	if d := decision(6, "secrets"); d.Decision != "modify" || d.Redacted < 3 {
		t.Errorf("redaction audited as %+v", d)
	}
}

func TestGuardrailsFromRoute(t *testing.T) {
	t.Parallel()
	tools, hooks := startTools(t), startGuardServer(t)
	rt, path := startRouter(t, guardRegistry(tools.addr, hooks.URL))
	var ids []string
	for i, c := range guardCases {
		t.Run(c.name, func(t *testing.T) {
			args, _ := json.Marshal(c.args)
			resp := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "guard-route",
				"tool_call": map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
					"function": map[string]any{"name": c.tool, "arguments": string(args)}}})
			if resp.Status != 200 {
				t.Fatalf("%d %s", resp.Status, resp.Body)
			}
			var r struct {
				ID       string          `json:"tool_call_id"`
				Success  bool            `json:"success"`
				Output   json.RawMessage `json:"output"`
				Error    *string         `json:"error"`
				Category *string         `json:"error_category"`
			}
			_ = json.Unmarshal(resp.Body, &r)
			o := outcome{id: r.ID, success: r.Success, output: string(r.Output)}
			if r.Error != nil {
				o.err, o.category = *r.Error, *r.Category
			}
			c.check(t, o)
			ids = append(ids, r.ID)
			if c.tool == "leaky/config" {
				// Nowhere: not in provider_result, not in the stored result.
				stored := do(t, "GET", rt.URL()+"/results/"+r.ID, nil)
				for _, body := range [][]byte{resp.Body, stored.Body} {
					for _, s := range []string{leakAWS, leakJWT, leakPwd} {
						if strings.Contains(string(body), s) {
							t.Errorf("%s in %s", s, body)
						}
					}
				}
				if !strings.Contains(string(resp.Body), "secret(s) redacted by guardrail secrets") {
					t.Errorf("no redaction note: %s", resp.Body)
				}
			}
		})
	}
	if len(ids) == len(guardCases) {
		checkGuardAudit(t, rt.URL(), ids)
	}
	// /route/batch: the same guardrails on each call of a batch.
	batch := do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": "guard-batch", "tool_calls": []any{
		map[string]any{"id": "b0", "type": "function", "function": map[string]any{"name": "test/echo", "arguments": `{"msg":"deny-me"}`}},
		map[string]any{"id": "b1", "type": "function", "function": map[string]any{"name": "leaky/config", "arguments": `{}`}},
	}})
	if b := string(batch.Body); batch.Status != 200 || !strings.Contains(b, "denied by guardrail policy") || !strings.Contains(b, "[REDACTED:") ||
		strings.Contains(b, leakAWS) || strings.Contains(b, leakPwd) {
		t.Errorf("batch: %d %s", batch.Status, b)
	}
	// Reload (SIGHUP): a bad guardrails section is rejected and the
	// guardrails in force stay; a good one takes over.
	denyMe := map[string]any{"plan_id": "guard-reload", "tool_call": map[string]any{"id": "c", "type": "function",
		"function": map[string]any{"name": "test/echo", "arguments": `{"msg":"deny-me"}`}}}
	good := guardRegistry(tools.addr, hooks.URL)
	rt.reload(t, path, good+"  - {name: broken, endpoint: \"http://127.0.0.1:1/\", on_error: maybe}\n")
	if !strings.Contains(rt.Output(), `on_error: must be deny or allow, got \"maybe\"`) {
		t.Errorf("the rejected reload does not name the field:\n%s", rt.Output())
	}
	if r := do(t, "POST", rt.URL()+"/route", denyMe).JSON(t); r["success"] != false {
		t.Errorf("after a rejected reload: %v, want the policy still in force", r)
	}
	rt.reload(t, path, strings.Replace(good, "tools: [test/echo], phase: both", "tools: [nothing/here], phase: both", 1))
	if r := do(t, "POST", rt.URL()+"/route", denyMe).JSON(t); r["success"] != true {
		t.Errorf("after a reload without the policy on test/echo: %v, want the call through", r)
	}
	// The hook saw the call as sent, with its ids.
	hooks.mu.Lock()
	first := hooks.seen[0]
	hooks.mu.Unlock()
	if first["tool"] != "test/echo" || first["plan_id"] != "guard-route" || first["tool_call_id"] != ids[0] || first["client"] != "" {
		t.Errorf("hook request %v", first)
	}
}

func TestGuardrailsFromMCP(t *testing.T) {
	t.Parallel()
	tools, hooks := startTools(t), startGuardServer(t)
	rt, _ := startRouter(t, guardRegistry(tools.addr, hooks.URL))
	cs, err := mcpConnect(t, rt.URL(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := mcpTools(t, cs)
	typed := listed[toolrouter.ExportName(toolrouter.FormatMCP, "typed/echo")]
	if typed == nil || typed.OutputSchema == nil {
		t.Fatalf("typed/echo listed without outputSchema: %+v", typed)
	}
	if echo := listed[toolrouter.ExportName(toolrouter.FormatMCP, "test/echo")]; echo == nil || echo.OutputSchema != nil {
		t.Errorf("test/echo: %+v, want no outputSchema", echo)
	}
	var ids []string
	for _, c := range guardCases {
		t.Run(c.name, func(t *testing.T) {
			res := mcpCall(t, cs, toolrouter.ExportName(toolrouter.FormatMCP, c.tool), c.args)
			o := outcome{success: !res.IsError}
			o.id, _ = res.Meta[mcpserver.MetaToolCallID].(string)
			if res.IsError {
				o.err = mcpText(res)
				o.category, _ = res.Meta[mcpserver.MetaErrorCategory].(string)
			} else {
				o.output = mcpText(res)
				if res.StructuredContent != nil {
					sc, _ := json.Marshal(res.StructuredContent)
					o.output += string(sc)
				}
			}
			c.check(t, o)
			ids = append(ids, o.id)
			if c.tool == "typed/echo" && !res.IsError && res.StructuredContent == nil {
				t.Errorf("a conforming typed output without structuredContent: %+v", res)
			}
		})
	}
	if len(ids) == len(guardCases) {
		checkGuardAudit(t, rt.URL(), ids)
	}
}

func TestGuardrailsFromRuns(t *testing.T) {
	t.Parallel()
	tools, hooks := startTools(t), startGuardServer(t)
	fake := startFakeLLM(t, "openai")
	rt, _ := startRouter(t, guardRegistry(tools.addr, hooks.URL)+fmt.Sprintf(`
providers:
  - {name: fake, kind: openai, base_url: "%s", model: fake-model}
`, fake.baseURL))
	var calls []any
	for _, c := range guardCases {
		calls = append(calls, toolCall(c.tool, c.args))
	}
	fake.script(t, map[string]any{"tool_calls": calls}, map[string]any{"text": "done"})
	resp := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "call every tool"})
	run := decodeRun(t, resp)
	if run.Status != "completed" || len(run.ToolCalls) != len(guardCases) {
		t.Fatalf("%d %s", resp.Status, resp.Body)
	}
	var ids []string
	for i, c := range guardCases {
		tc := run.ToolCalls[i]
		t.Run(c.name, func(t *testing.T) {
			out, _ := json.Marshal(tc.Output)
			o := outcome{id: tc.ToolCallID, success: tc.Success, output: string(out)}
			if tc.Error != nil {
				o.err, o.category = *tc.Error, *tc.ErrorCategory
			}
			c.check(t, o)
		})
		ids = append(ids, tc.ToolCallID)
	}
	checkGuardAudit(t, rt.URL(), ids)
	// What the model got back: the guardrails' results, never a secret.
	reqs := fake.requests(t)
	second, _ := json.Marshal(reqs[len(reqs)-1])
	for _, want := range []string{"denied by guardrail policy", "result rewritten by hook", "[REDACTED:"} {
		if !strings.Contains(string(second), want) {
			t.Errorf("the model's second request lacks %q: %s", want, second)
		}
	}
	for _, s := range []string{leakAWS, leakJWT, leakPwd} {
		if strings.Contains(string(second)+string(resp.Body), s) {
			t.Errorf("%s reached the model or the caller", s)
		}
	}
}

// TestTypedOutputTypeScriptClient: the official TypeScript SDK client
// lists an HTTP tool's output_schema as outputSchema and accepts every
// result: conforming ones (it checks their structuredContent against the
// schema), and the isError result of one that does not conform.
func TestTypedOutputTypeScriptClient(t *testing.T) {
	t.Parallel()
	dir := conformanceDir(t) // its node_modules hold @modelcontextprotocol/sdk
	tools, hooks := startTools(t), startGuardServer(t)
	rt, _ := startRouter(t, guardRegistry(tools.addr, hooks.URL))
	typed := toolrouter.ExportName(toolrouter.FormatMCP, "typed/echo")
	calls, _ := json.Marshal([]map[string]any{
		{"name": typed, "arguments": map[string]any{"msg": "typed"}},
		{"name": typed, "arguments": map[string]any{}},
		{"name": toolrouter.ExportName(toolrouter.FormatMCP, "leaky/config"), "arguments": map[string]any{}},
		{"name": toolrouter.ExportName(toolrouter.FormatMCP, "test/echo"), "arguments": map[string]any{"msg": "deny-me"}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "testdata/tsclient.mjs",
		filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk"), rt.URL()+"/mcp", string(calls))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tsclient: %v\n%s", err, out)
	}
	var got struct {
		Tools []struct {
			Name         string         `json:"name"`
			OutputSchema map[string]any `json:"outputSchema"`
		} `json:"tools"`
		Calls []struct {
			OK     bool   `json:"ok"`
			Error  string `json:"error"`
			Result struct {
				IsError           bool           `json:"isError"`
				StructuredContent map[string]any `json:"structuredContent"`
				Content           []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got.Calls) != 4 {
		t.Fatalf("tsclient output %s: %v", out, err)
	}
	advertised := false
	for _, tl := range got.Tools {
		if tl.Name == typed {
			advertised = tl.OutputSchema["type"] == "object"
		}
	}
	if !advertised {
		t.Errorf("typed/echo without its outputSchema: %s", out)
	}
	for i, c := range got.Calls {
		if !c.OK {
			t.Errorf("call %d rejected by the TypeScript client: %s", i, c.Error)
		}
	}
	if c := got.Calls[0].Result; c.IsError || c.StructuredContent["msg"] != "typed" {
		t.Errorf("conforming call: %+v", c)
	}
	if c := got.Calls[1].Result; !c.IsError || len(c.Content) == 0 || !strings.Contains(c.Content[0].Text, "output_schema") {
		t.Errorf("non-conforming call: %+v", c)
	}
	if strings.Contains(string(out), leakAWS) || strings.Contains(string(out), leakPwd) {
		t.Errorf("a secret reached the TypeScript client: %s", out)
	}
	if c := got.Calls[3].Result; !c.IsError || len(c.Content) == 0 || !strings.Contains(c.Content[0].Text, "denied by guardrail policy") {
		t.Errorf("denied call: %+v", c)
	}
}

// TestCheckGuardrails: toolrouterd check lists every problem of the
// guardrails section with file, line, guardrail and field, and passes a
// good one.
func TestCheckGuardrails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte(`tools:
  - {name: t, endpoint: "http://127.0.0.1:1/t", output_schema: {type: object, required: 7}}
guardrails:
  - {name: hook, endpoint: "http://127.0.0.1:1/h", phase: around, on_error: shrug, timeout: 1h}
  - {name: hook, builtin: redact_secrets, patterns: [{name: x, regex: "a("}]}
  - {name: nothing}
`), 0o600)
	out, err := exec.Command(filepath.Join(binDir, "toolrouterd"), "check", bad).CombinedOutput()
	if err == nil {
		t.Fatalf("check passed a bad file:\n%s", out)
	}
	for _, want := range []string{
		`bad.yaml:2: tool "t": output_schema/required: invalid JSON Schema`,
		`bad.yaml:4: guardrail "hook": phase: must be before, after or both, got "around"`,
		`bad.yaml:4: guardrail "hook": on_error: must be deny or allow, got "shrug"`,
		`bad.yaml:4: guardrail "hook": timeout: must be at most 10m`,
		`bad.yaml:5: guardrail "hook": name: duplicate name (first at line 4)`,
		`bad.yaml:5: guardrail "hook": patterns[0].regex: not a valid RE2 regular expression`,
		`bad.yaml:6: guardrail "nothing": endpoint: required (a webhook URL), or builtin: redact_secrets`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	good := filepath.Join(dir, "good.yaml")
	_ = os.WriteFile(good, []byte(guardRegistry("127.0.0.1:1", "http://127.0.0.1:2")), 0o600)
	if out, err := exec.Command(filepath.Join(binDir, "toolrouterd"), "check", good).CombinedOutput(); err != nil {
		t.Errorf("check rejected a good file: %v\n%s", err, out)
	}
}
