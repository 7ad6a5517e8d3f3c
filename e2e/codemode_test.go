package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Keys of the clients of codeModeRegistry.
const (
	codeKey    = "code-key-0123456789"
	carefulKey = "careful-key-0123456789"
)

// codeModeRegistry is a virtual server in code mode over two HTTP tools
// (math/add, test/echo) and one of the go-sdk fixture (MCP), plus
// test/context, which code-bot's scope leaves out; careful-bot's echo
// calls wait for an approver.
func codeModeRegistry(t *testing.T, toolsAddr, fixtureURL, llmURL string) string {
	t.Helper()
	return exampleRegistry(t, toolsAddr) + fmt.Sprintf(`
mcp_servers:
  - name: fixture
    url: %s
virtual_servers:
  - name: coder
    tools: ["test/echo", "math/add", "fixture/structured", "test/context"]
    discovery: code
    overrides:
      test/echo: {name: echo}
      math/add: {name: add, description: "Adds two numbers a and b"}
      fixture/structured: {name: count, description: "Counts to one: returns {n: 1}"}
      test/context: {name: context}
clients:
  - {name: code-bot, key_env: E2E_CODE_KEY, virtual_servers: [coder], tools: ["test/echo", "math/add", "fixture/structured"], models: ["*"]}
  - {name: careful-bot, key_env: E2E_CAREFUL_KEY, virtual_servers: [coder], approval: ["test/echo"], models: ["*"]}
  - {name: admin, key_env: E2E_ADMIN_KEY, admin: true, tools: ["*"], models: ["*"]}
providers:
  - {name: fake, kind: openai, base_url: %q, model: fake-model}
`, fixtureURL, llmURL)
}

func startCodeMode(t *testing.T) (*proc, *fakeLLM) {
	t.Helper()
	tools := startTools(t)
	fixture := startFixture(t)
	llm := startFakeLLM(t, "openai")
	rt, _ := startRouter(t, codeModeRegistry(t, tools.addr, "http://"+fixture.addr+"/mcp", llm.baseURL),
		"E2E_CODE_KEY="+codeKey, "E2E_CAREFUL_KEY="+carefulKey, "E2E_ADMIN_KEY="+adminKey,
		"TOOLROUTER_CODE_CPU=3s", "TOOLROUTER_CODE_TIMEOUT=5s", "TOOLROUTER_CODE_MAX_HEAP_BYTES=67108864")
	// The MCP server's tool joins when it is discovered: a program
	// calling it works from then on.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := do(t, "POST", rt.URL()+"/route?server=coder", map[string]any{"plan_id": "wait",
			"tool_call": map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "count to one"}}}, "Authorization", "Bearer "+adminKey)
		if strings.Contains(string(r.Body), `tools.count(`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fixture/structured not found in the code view: %s\n%s", r.Body, rt.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return rt, llm
}

// codeChain chains three tools across an HTTP backend and an MCP one.
const codeChain = `const c = await tools.count({});
const s = await tools.add({a: c.n, b: 41});
const e = await tools.echo({msg: "answer " + s.sum});
console.log("sum", s.sum);
return e.msg;`

// TestCodeModeMCP: a real MCP client (the TypeScript SDK) on a virtual
// server in code mode is offered search_tools and execute_code, finds
// signatures, and runs a program chaining three tools (HTTP and MCP
// backends) that gives one answer; each of its calls is audited with
// the execution as parent. Programs that call a tool out of scope, loop
// forever, allocate without bound, return 50 MB, or try to leave the
// sandbox are stopped with a result the model can read, and the process
// stays up with its RSS bounded (measured on /proc).
func TestCodeModeMCP(t *testing.T) {
	t.Parallel()
	rt, _ := startCodeMode(t)
	base := rssOf(rt.cmd.Process.Pid)
	var (
		mu   sync.Mutex
		peak int64
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			v := rssOf(rt.cmd.Process.Pid)
			mu.Lock()
			peak = max(peak, v)
			mu.Unlock()
		}
	}()
	code := func(src string) map[string]any {
		return map[string]any{"name": "execute_code", "arguments": map[string]any{"code": src}}
	}
	res := runTSClient(t, rt.URL()+"/mcp/coder", codeKey,
		map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "add two numbers", "limit": 3}},
		code(codeChain),
		code("const a = 1;\nconst b = ;"),
		code("return await tools.context({});"),
		code("while (true) {}"),
		code("let s = 'v'; while (s.length < (1 << 20)) s += s; const a = []; for (;;) a.push(s + a.length);"),
		code("let s = 'x'; while (s.length < (1 << 22)) s += s; const parts = []; for (let i = 0; i < 13; i++) parts.push(s); return parts.join('');"),
		code("return tools.add.constructor('return process')();"),
		code("setTimeout(() => {}, 60000); return 1;"),
	)
	close(stop)
	<-done
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if slices.Sort(names); strings.Join(names, ",") != "execute_code,search_tools" {
		t.Fatalf("tools offered in code mode: %v", names)
	}
	text := func(i int) string {
		var b strings.Builder
		for _, c := range res.Results[i].Content {
			b.WriteString(c.Text)
		}
		return b.String()
	}
	if s := text(0); res.Results[0].IsError || !strings.Contains(s, `tools.add(args: { a: number; b: number }): Promise<unknown>`) || strings.Contains(s, "tools.context") {
		t.Errorf("search_tools: %s", s)
	}
	if s := text(1); res.Results[1].IsError || !strings.Contains(s, `"result":"answer 42"`) || !strings.Contains(s, `"logs":["sum 42"]`) {
		t.Fatalf("the chain: %s", s)
	}
	for i, want := range map[int]*regexp.Regexp{
		2: regexp.MustCompile(`"kind":"syntax_error".*"line":2,"column":11`),
		3: regexp.MustCompile(`"kind":"refused".*not found`),
		4: regexp.MustCompile(`"kind":"cpu_limit"`),
		5: regexp.MustCompile(`"kind":"memory_limit"`),
		6: regexp.MustCompile(`"kind":"(output_limit|memory_limit)"`),
		7: regexp.MustCompile(`code generation from strings is disabled`),
		8: regexp.MustCompile(`setTimeout is not defined`),
	} {
		if s := text(i); !res.Results[i].IsError || !want.MatchString(s) {
			t.Errorf("program %d: isError %v, %s; want %s", i, res.Results[i].IsError, s, want)
		}
	}
	mu.Lock()
	t.Logf("RSS of toolrouterd: %d MiB before the programs, peak %d MiB over them", base>>20, peak>>20)
	// A race binary (e2e builds them): its shadow memory is several times
	// the heap; the heap is bounded at 64 MiB of growth per program.
	if peak > 1<<30 {
		t.Errorf("peak RSS %d MiB", peak>>20)
	}
	mu.Unlock()
	if r := do(t, "GET", rt.URL()+"/healthz", nil); r.Status != 200 {
		t.Fatalf("after the programs: /healthz %d", r.Status)
	}

	// Each inner call is its own audit record, its parent the execution.
	var page struct {
		Records []struct {
			ToolCallID string `json:"tool_call_id"`
			Tool       string `json:"tool"`
			Outcome    string `json:"outcome"`
			Parent     string `json:"parent_tool_call_id"`
		} `json:"records"`
	}
	if err := json.Unmarshal(do(t, "GET", rt.URL()+"/audit?client=code-bot&limit=100", nil, "Authorization", "Bearer "+adminKey).Body, &page); err != nil {
		t.Fatal(err)
	}
	parents := map[string][]string{}
	var first string
	for _, r := range page.Records {
		if r.Parent != "" {
			parents[r.Parent] = append(parents[r.Parent], r.Tool+":"+r.Outcome)
		}
	}
	for _, r := range page.Records {
		if r.Tool == "execute_code" && len(parents[r.ToolCallID]) == 3 {
			first = r.ToolCallID
		}
	}
	if first == "" {
		t.Fatalf("no execute_code record with its three calls as children: %+v", page.Records)
	}
	if got := strings.Join(parents[first], ","); !strings.Contains(got, "fixture/structured:success") || !strings.Contains(got, "math/add:success") || !strings.Contains(got, "test/echo:success") {
		t.Errorf("children of %s: %s", first, got)
	}
}

// rssOf is the resident set size of pid in bytes (0 when unreadable).
func rssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		var kb int64
		if n, _ := fmt.Sscanf(l, "VmRSS: %d kB", &kb); n == 1 {
			return kb << 10
		}
	}
	return 0
}

// TestCodeModeRun: a /runs loop against the fake LLM finds the tools and
// runs the same chain in one execute_code call.
func TestCodeModeRun(t *testing.T) {
	t.Parallel()
	rt, llm := startCodeMode(t)
	llm.script(t,
		map[string]any{"tool_calls": []any{toolCall("search_tools", map[string]any{"query": "add numbers echo count"})}},
		map[string]any{"tool_calls": []any{toolCall("execute_code", map[string]any{"code": codeChain})}},
		map[string]any{"text": "answer 42"},
	)
	r := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "what is one plus 41?", "server": "coder"}, "Authorization", "Bearer "+codeKey)
	if r.Status != 200 {
		t.Fatalf("POST /runs: %d %s", r.Status, r.Body)
	}
	run := r.JSON(t)
	calls, _ := run["tool_calls"].([]any)
	if run["status"] != "completed" || len(calls) != 2 {
		t.Fatalf("run %v", run)
	}
	exec := calls[1].(map[string]any)
	if exec["tool_name"] != "execute_code" || exec["success"] != true || !strings.Contains(fmt.Sprint(exec["output"]), "answer 42") {
		t.Errorf("execute_code record %v", exec)
	}
	reqs := llm.requests(t)
	if got := offered(reqs[0]); strings.Join(got, ",") != "search_tools,execute_code" {
		t.Errorf("offered %v", got)
	}
	// /schemas with ?server= offers the same two.
	if got := schemaNames(t, rt, codeKey, "coder"); strings.Join(got, ",") != "execute_code,search_tools" {
		t.Errorf("/schemas/openai?server=coder: %v", got)
	}
}

// TestCodeModeHeldCall: a program whose call waits for an approver stops
// with a result naming the call and its approval; approved, the same
// program run again gets the approved call's result and finishes.
func TestCodeModeHeldCall(t *testing.T) {
	t.Parallel()
	rt, _ := startCodeMode(t)
	cs := connectMCP(t, rt.URL()+"/mcp/coder", carefulKey, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := func() (*mcp.CallToolResult, string) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": codeChain}})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return res, b.String()
	}
	res, s := run()
	m := regexp.MustCompile(`"kind":"awaiting_approval".*"tool":"echo".*"approval_id":"([^"]+)"`).FindStringSubmatch(s)
	if !res.IsError || m == nil {
		t.Fatalf("held: isError %v %s", res.IsError, s)
	}
	// Run again before the decision: still waiting, no second approval.
	if res, s2 := run(); !res.IsError || !strings.Contains(s2, m[1]) {
		t.Fatalf("rerun before the decision: %s", s2)
	}
	if r := do(t, "POST", rt.URL()+"/approvals/"+m[1], map[string]any{"decision": "approve"}, "Authorization", "Bearer "+adminKey); r.Status != http.StatusOK {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	if res, s := run(); res.IsError || !strings.Contains(s, `"result":"answer 42"`) {
		t.Fatalf("rerun after the approval: %s", s)
	}
	var list struct {
		Approvals []struct{ ID string } `json:"approvals"`
	}
	if err := json.Unmarshal(do(t, "GET", rt.URL()+"/approvals?client=careful-bot", nil, "Authorization", "Bearer "+adminKey).Body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Approvals) != 1 {
		t.Errorf("%d approvals, want the one", len(list.Approvals))
	}
}
