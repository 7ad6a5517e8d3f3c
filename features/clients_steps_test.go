package features_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/agent"
	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/service"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// clientsEnv is the state of a clients scenario: a service wired like
// cmd/toolrouterd/serve.go with clients in its registry, a tool server
// counting calls per tool, and a fake model.
type clientsEnv struct {
	tools   []string
	clients []string // YAML of each client
	keys    map[string]string

	svc     *service.Service
	toolSrv *httptest.Server
	mu      sync.Mutex
	calls   map[string]int // tool name → calls
	fake    *llmtest.Server
	api     *httptest.Server
	runner  *agent.Runner
	session *mcp.ClientSession

	listed  []string
	last    map[string]any
	status  int
	body    []byte
	mcpRes  *mcp.CallToolResult
	mcpList []string
}

type clientsKey struct{}

func clientsState(ctx context.Context) *clientsEnv { return ctx.Value(clientsKey{}).(*clientsEnv) }

func (e *clientsEnv) start() error {
	if e.api != nil {
		return nil
	}
	e.calls = map[string]int{}
	e.toolSrv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.calls[strings.TrimPrefix(r.URL.Path, "/")]++
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	e.fake = llmtest.NewServer(llmtest.OpenAI)
	fakeSrv := httptest.NewServer(e.fake)
	e.fake.URL = fakeSrv.URL + "/v1"
	var b strings.Builder
	b.WriteString("tools:\n")
	for _, t := range e.tools {
		fmt.Fprintf(&b, "  - {name: %s, endpoint: %s/%s}\n", t, e.toolSrv.URL, t)
	}
	fmt.Fprintf(&b, "providers:\n  - {name: fake, kind: openai, base_url: %s, model: m}\nclients:\n", e.fake.URL)
	for _, c := range e.clients {
		b.WriteString(c)
	}
	getenv := func(k string) string { return e.keys[k] }
	reg, err := registry.Parse("clients.yaml", []byte(b.String()), getenv)
	if err != nil {
		return fmt.Errorf("registry:\n%s\n%w", b.String(), err)
	}
	svc, err := startService(reg, getenv, "features-clients")
	if err != nil {
		return err
	}
	e.svc, e.runner = svc, svc.Runner
	e.api = httptest.NewServer(svc.Handler)
	return nil
}

func (e *clientsEnv) close() {
	if e.session != nil {
		e.session.Close()
	}
	if e.runner != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = e.runner.Wait(ctx)
		cancel()
	}
	for _, s := range []*httptest.Server{e.api, e.toolSrv} {
		if s != nil {
			s.Close()
		}
	}
	if e.svc != nil {
		e.svc.Close()
	}
}

func (e *clientsEnv) key(client string) string { return client + "-key" }

// call sends a JSON request as a key's holder and decodes the answer.
func (e *clientsEnv) call(key, method, path string, body any) error {
	if err := e.start(); err != nil {
		return err
	}
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = strings.NewReader(string(raw))
	}
	req, _ := http.NewRequest(method, e.api.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	e.status = resp.StatusCode
	e.body, _ = io.ReadAll(resp.Body)
	e.last = nil
	_ = json.Unmarshal(e.body, &e.last)
	return nil
}

func (e *clientsEnv) callCount(tool string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[tool]
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func sameList(got []string, want string) error {
	if strings.Join(got, ", ") != strings.Join(splitList(want), ", ") {
		return fmt.Errorf("got %q, want %q", strings.Join(got, ", "), want)
	}
	return nil
}

type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

func initClientSteps(sc *godog.ScenarioContext) {
	sc.Before(func(ctx context.Context, _ *godog.Scenario) (context.Context, error) {
		return context.WithValue(ctx, clientsKey{}, &clientsEnv{keys: map[string]string{}}), nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, _ error) (context.Context, error) {
		clientsState(ctx).close()
		return ctx, nil
	})
	sc.Step(`^a registry with tools "([^"]*)"$`, func(ctx context.Context, tools string) error {
		clientsState(ctx).tools = splitList(tools)
		return nil
	})
	sc.Step(`^a client "([^"]*)" with key "([^"]*)" and tools "([^"]*)"$`, func(ctx context.Context, name, key, tools string) error {
		e := clientsState(ctx)
		env := strings.ToUpper(name) + "_KEY"
		e.keys[env] = key
		q := splitList(tools)
		for i := range q {
			q[i] = fmt.Sprintf("%q", q[i])
		}
		e.clients = append(e.clients, fmt.Sprintf("  - {name: %s, key_env: %s, tools: [%s], models: [\"*\"]}\n", name, env, strings.Join(q, ", "))) // models: its runs may use the fake (a client without models may use none)
		return nil
	})
	list := func(ctx context.Context, key string) error {
		e := clientsState(ctx)
		if err := e.call(key, "GET", "/schemas/openai", nil); err != nil {
			return err
		}
		e.listed = nil
		if tools, ok := e.last["tools"].([]any); ok {
			for _, t := range tools {
				e.listed = append(e.listed, t.(map[string]any)["name"].(string))
			}
		}
		return nil
	}
	sc.Step(`^client "([^"]*)" lists the openai schemas$`, func(ctx context.Context, client string) error {
		return list(ctx, clientsState(ctx).key(client))
	})
	sc.Step(`^a caller with key "([^"]*)" lists the openai schemas$`, list)
	sc.Step(`^the listed tools are "([^"]*)"$`, func(ctx context.Context, want string) error {
		return sameList(clientsState(ctx).listed, want)
	})
	sc.Step(`^client "([^"]*)" routes a call to "([^"]*)"$`, func(ctx context.Context, client, tool string) error {
		e := clientsState(ctx)
		return e.call(e.key(client), "POST", "/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": tool, "arguments": "{}"}})
	})
	sc.Step(`^the route fails with category "([^"]*)" and error "([^"]*)"$`, func(ctx context.Context, cat, msg string) error {
		e := clientsState(ctx)
		if e.status != 200 || e.last["success"] != false || e.last["error_category"] != cat || e.last["error"] != msg {
			return fmt.Errorf("HTTP %d: %s", e.status, e.body)
		}
		return nil
	})
	sc.Step(`^the route succeeds$`, func(ctx context.Context) error {
		e := clientsState(ctx)
		if e.status != 200 || e.last["success"] != true {
			return fmt.Errorf("HTTP %d: %s", e.status, e.body)
		}
		return nil
	})
	sc.Step(`^the tool "([^"]*)" was called (\d+) times$`, func(ctx context.Context, tool string, n int) error {
		if got := clientsState(ctx).callCount(tool); got != n {
			return fmt.Errorf("%s called %d times, want %d", tool, got, n)
		}
		return nil
	})
	sc.Step(`^client "([^"]*)" routes a batch of calls to "([^"]*)"$`, func(ctx context.Context, client, tools string) error {
		e := clientsState(ctx)
		var calls []any
		for _, t := range splitList(tools) {
			calls = append(calls, map[string]any{"name": t, "arguments": "{}"})
		}
		return e.call(e.key(client), "POST", "/route/batch", map[string]any{"plan_id": "p", "tool_calls": calls})
	})
	sc.Step(`^the batch results are "([^"]*)"$`, func(ctx context.Context, want string) error {
		e := clientsState(ctx)
		var got []string
		res, _ := e.last["results"].([]any)
		for _, r := range res {
			m := r.(map[string]any)
			if m["success"] == true {
				got = append(got, "success")
			} else {
				got = append(got, fmt.Sprint(m["error_category"]))
			}
		}
		return sameList(got, want)
	})
	openAIName := func(tool string) string { return toolrouter.ExportName(toolrouter.FormatOpenAI, tool) }
	sc.Step(`^the model asks for "([^"]*)" and then "([^"]*)" under their OpenAI names$`, func(ctx context.Context, a, b string) error {
		a, b = openAIName(a), openAIName(b)
		e := clientsState(ctx)
		if err := e.start(); err != nil {
			return err
		}
		e.fake.Script(llmtest.Turn{ToolCalls: []llmtest.Call{{Name: a}}}, llmtest.Turn{ToolCalls: []llmtest.Call{{Name: b}}}, llmtest.Turn{Text: "done"})
		return nil
	})
	sc.Step(`^client "([^"]*)" starts a run$`, func(ctx context.Context, client string) error {
		e := clientsState(ctx)
		return e.call(e.key(client), "POST", "/runs", map[string]any{"prompt": "go"})
	})
	sc.Step(`^the model was offered only "([^"]*)"$`, func(ctx context.Context, want string) error {
		e := clientsState(ctx)
		for _, rec := range e.fake.Requests() {
			var names []string
			tools, _ := rec.Body["tools"].([]any)
			for _, t := range tools {
				names = append(names, t.(map[string]any)["function"].(map[string]any)["name"].(string))
			}
			if err := sameList(names, openAIName(want)); err != nil {
				return fmt.Errorf("tools offered: %w", err)
			}
		}
		return nil
	})
	sc.Step(`^the run's tool calls are "([^"]*)"$`, func(ctx context.Context, want string) error {
		e := clientsState(ctx)
		if e.status != 200 || e.last["status"] != "completed" {
			return fmt.Errorf("run: HTTP %d %s", e.status, e.body)
		}
		var got []string
		calls, _ := e.last["tool_calls"].([]any)
		for _, c := range calls {
			m := c.(map[string]any)
			if m["success"] == true {
				got = append(got, "success")
			} else {
				got = append(got, fmt.Sprint(m["error_category"]))
			}
		}
		return sameList(got, want)
	})
	sc.Step(`^client "([^"]*)" opens an MCP session$`, func(ctx context.Context, client string) error {
		e := clientsState(ctx)
		if err := e.start(); err != nil {
			return err
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "features", Version: "v0"}, nil)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cs, err := c.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: e.api.URL + "/mcp",
			HTTPClient: &http.Client{Transport: bearerTransport{e.key(client)}}, MaxRetries: -1},
			// A session (2025-11-25): 2026-07-28 clients are stateless.
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			return err
		}
		e.session = cs
		e.mcpList = nil
		for t, err := range cs.Tools(cctx, nil) {
			if err != nil {
				return err
			}
			name, _ := t.Meta[mcpserver.MetaToolName].(string)
			e.mcpList = append(e.mcpList, name)
		}
		return nil
	})
	sc.Step(`^the MCP tools are "([^"]*)"$`, func(ctx context.Context, want string) error {
		return sameList(clientsState(ctx).mcpList, want)
	})
	sc.Step(`^client "([^"]*)" calls MCP tool "([^"]*)"$`, func(ctx context.Context, _, tool string) error {
		e := clientsState(ctx)
		res, err := e.session.CallTool(ctx, &mcp.CallToolParams{Name: toolrouter.ExportName(toolrouter.FormatMCP, tool), Arguments: map[string]any{}})
		e.mcpRes = res
		return err
	})
	sc.Step(`^the MCP result is an error with category "([^"]*)"$`, func(ctx context.Context, cat string) error {
		res := clientsState(ctx).mcpRes
		if !res.IsError || res.Meta[mcpserver.MetaErrorCategory] != cat {
			return fmt.Errorf("MCP result: isError %v, meta %v", res.IsError, res.Meta)
		}
		return nil
	})
	sc.Step(`^the answer is (\d+) with a problem naming "([^"]*)"$`, func(ctx context.Context, status int, field string) error {
		e := clientsState(ctx)
		if e.status != status || e.last["field"] != field {
			return fmt.Errorf("HTTP %d: %s", e.status, e.body)
		}
		return nil
	})
}
