package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/mcpclient"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// fakeServer is an in-process MCP server (the Go SDK's) over streamable
// HTTP on a fixed loopback address, which the test can take down, bring
// back and restart (forgetting its sessions).
type fakeServer struct {
	t       *testing.T
	addr    string
	opts    *mcp.ServerOptions
	hopts   *mcp.StreamableHTTPOptions // of the HTTP handler
	setup   func(*mcp.Server)
	handler atomic.Pointer[http.Handler]

	mu       sync.Mutex
	srv      *mcp.Server
	http     *http.Server
	headers  []http.Header
	posts    []post
	methods  []string
	sessions map[string]bool // Mcp-Session-Id values seen

	cancelled atomic.Int32 // tool handlers that saw their ctx cancelled
}

// newFakeServer starts a server (unless down) with the standard tools
// plus what setup adds.
func newFakeServer(t *testing.T, opts *mcp.ServerOptions, setup func(*mcp.Server), down bool) *fakeServer {
	t.Helper()
	return newFakeHTTPServer(t, opts, nil, setup, down)
}

// newFakeHTTPServer is newFakeServer with options for the streamable HTTP
// handler.
func newFakeHTTPServer(t *testing.T, opts *mcp.ServerOptions, hopts *mcp.StreamableHTTPOptions, setup func(*mcp.Server), down bool) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{t: t, addr: ln.Addr().String(), opts: opts, hopts: hopts, setup: setup, sessions: map[string]bool{}}
	f.restart()
	if down {
		ln.Close()
	} else {
		f.serve(ln)
	}
	t.Cleanup(f.down)
	return f
}

// post is a POST request the server got.
type post struct {
	header http.Header
	body   string
}

func (f *fakeServer) URL() string { return "http://" + f.addr + "/mcp" }

// restart replaces the MCP server and its HTTP handler: every session is
// forgotten, as when the server process restarts.
func (f *fakeServer) restart() {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, f.opts)
	addStandardTools(s, f)
	if f.setup != nil {
		f.setup(s)
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			f.mu.Lock()
			f.methods = append(f.methods, method)
			f.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, f.hopts)
	f.mu.Lock()
	f.srv = s
	f.mu.Unlock()
	f.handler.Store(&h)
}

func (f *fakeServer) serve(ln net.Listener) {
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method == http.MethodPost {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		f.mu.Lock()
		f.headers = append(f.headers, r.Header.Clone())
		if body != nil {
			f.posts = append(f.posts, post{r.Header.Clone(), string(body)})
		}
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			f.sessions[sid] = true
		}
		f.mu.Unlock()
		(*f.handler.Load()).ServeHTTP(w, r)
	})}
	f.mu.Lock()
	f.http = hs
	f.mu.Unlock()
	go func() { _ = hs.Serve(ln) }()
}

// down stops listening and drops every connection.
func (f *fakeServer) down() {
	f.mu.Lock()
	hs := f.http
	f.http = nil
	f.mu.Unlock()
	if hs != nil {
		_ = hs.Close()
	}
}

// up listens again on the same address.
func (f *fakeServer) up() {
	f.t.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", f.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		f.t.Fatalf("listen again on %s: %v", f.addr, err)
	}
	f.serve(ln)
}

func (f *fakeServer) server() *mcp.Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.srv
}

func (f *fakeServer) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range f.methods {
		if m == method {
			n++
		}
	}
	return n
}

func (f *fakeServer) allHeaders() []http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.headers)
}

func (f *fakeServer) sessionCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

var objectSchema = map[string]any{"type": "object"}

func text(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }

func args(req *mcp.CallToolRequest) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m)
	return m
}

func addStandardTools(s *mcp.Server, f *fakeServer) {
	s.AddTool(&mcp.Tool{
		Name:        "echo",
		Description: "Echoes msg",
		InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"msg": map[string]any{"type": "string"}},
			"required":   []any{"msg"},
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text(fmt.Sprint("echo: ", args(req)["msg"]))}, nil
	})
	s.AddTool(&mcp.Tool{Name: "json", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text(` {"a": 1, "b": [true]} `)}, nil
		})
	s.AddTool(&mcp.Tool{
		Name:        "sum",
		InputSchema: objectSchema,
		OutputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"sum": map[string]any{"type": "number"}},
		},
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a := args(req)
		sum := a["a"].(float64) + a["b"].(float64)
		return &mcp.CallToolResult{Content: text(fmt.Sprintf("the sum is %v", sum)), StructuredContent: map[string]any{"sum": sum}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: text("permission denied: /etc/shadow")}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fail-silently", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true}, nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: objectSchema},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
				f.cancelled.Add(1)
				return nil, ctx.Err()
			case <-time.After(10 * time.Second):
				return &mcp.CallToolResult{Content: text("late")}, nil
			}
		})
	s.AddTool(&mcp.Tool{Name: "progress", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				for i := 1; i <= 3; i++ {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: tok, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i),
					})
				}
			}
			return &mcp.CallToolResult{Content: text("done")}, nil
		})
}

// logBuffer is a zerolog sink safe for concurrent writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type fixture struct {
	m    *mcpclient.Manager
	reg  *prometheus.Registry
	logs *logBuffer
}

func newManager(t *testing.T) fixture {
	t.Helper()
	logs := &logBuffer{}
	reg := prometheus.NewRegistry()
	m := mcpclient.New(zerolog.New(logs).Level(zerolog.DebugLevel), reg)
	mcpclient.SetTiming(m, 5*time.Second, 20*time.Millisecond, 200*time.Millisecond)
	t.Cleanup(m.Close)
	return fixture{m: m, reg: reg, logs: logs}
}

func serverConfig(name, url string) toolrouter.MCPServer {
	return toolrouter.MCPServer{Name: name, URL: url, Prefix: name + "/", Tools: []string{"*"}, Timeout: 5 * time.Second}
}

func toolNames(tools []*toolrouter.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

func find(t testing.TB, m *mcpclient.Manager, name string) *toolrouter.Tool {
	t.Helper()
	for _, tool := range m.Tools() {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("tool %q not discovered; have %v", name, toolNames(m.Tools()))
	return nil
}

// eventually polls cond until it holds or the test times out.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func call(m *mcpclient.Manager, tool *toolrouter.Tool, a map[string]any) toolrouter.Outcome {
	return m.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Args: a, PlanID: "p", ToolCallID: "tc_1"})
}

func metric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue next
				}
			}
			if g := mt.GetGauge(); g != nil {
				return g.GetValue(), true
			}
			return mt.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

func TestMCPDiscoveryPaginationPrefixAnnotations(t *testing.T) {
	f := newFakeServer(t, &mcp.ServerOptions{PageSize: 2}, func(s *mcp.Server) {
		for i := range 5 {
			s.AddTool(&mcp.Tool{Name: fmt.Sprintf("extra-%d", i), InputSchema: objectSchema},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
		}
	}, false)
	fx := newManager(t)
	cfg := serverConfig("files", f.URL())
	cfg.Prefix = "fs/"
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})

	got := toolNames(fx.m.Tools())
	want := []string{"fs/echo", "fs/extra-0", "fs/extra-1", "fs/extra-2", "fs/extra-3", "fs/extra-4",
		"fs/fail", "fs/fail-silently", "fs/json", "fs/progress", "fs/slow", "fs/sum"}
	if !slices.Equal(got, want) {
		t.Fatalf("tools = %v\nwant %v", got, want)
	}
	if n := f.count("tools/list"); n < 6 {
		t.Errorf("tools/list called %d times; 12 tools in pages of 2 need 6", n)
	}

	echo := find(t, fx.m, "fs/echo")
	if echo.MCPServer != "files" || echo.MCPTool != "echo" || echo.Endpoint != "" || echo.Kind != toolrouter.KindTool {
		t.Errorf("echo = %+v", echo)
	}
	if echo.Description != "Echoes msg" || !echo.ReadOnly || !echo.Idempotent || echo.Retries != 1 || echo.Timeout != 5*time.Second {
		t.Errorf("echo description/readOnly/idempotent/retries/timeout = %q/%v/%v/%d/%v",
			echo.Description, echo.ReadOnly, echo.Idempotent, echo.Retries, echo.Timeout)
	}
	if p, _ := echo.InputSchema["properties"].(map[string]any); p["msg"] == nil {
		t.Errorf("echo input schema = %v", echo.InputSchema)
	}
	if echo.ValidateArgs == nil {
		t.Fatal("echo has no ValidateArgs")
	}
	if err := echo.ValidateArgs(map[string]any{"msg": "hi"}); err != nil {
		t.Errorf("valid args rejected: %v", err)
	}
	if err := echo.ValidateArgs(map[string]any{}); err == nil || !strings.Contains(err.Error(), "msg") {
		t.Errorf("missing msg: %v", err)
	}
	sum := find(t, fx.m, "fs/sum")
	if sum.OutputSchema == nil || sum.ReadOnly || sum.Idempotent || sum.Retries != 0 {
		t.Errorf("sum = %+v", sum)
	}
	if v, ok := metric(t, fx.reg, "toolrouter_mcp_server_up", map[string]string{"server": "files"}); !ok || v != 1 {
		t.Errorf("toolrouter_mcp_server_up = %v (present %v)", v, ok)
	}
}

func TestMCPAllowlist(t *testing.T) {
	f := newFakeServer(t, nil, nil, false)
	fx := newManager(t)
	cfg := serverConfig("s", f.URL())
	cfg.Tools = []string{"echo", "sum", "missing"}
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
	if got := toolNames(fx.m.Tools()); !slices.Equal(got, []string{"s/echo", "s/sum"}) {
		t.Fatalf("tools = %v", got)
	}
	if !strings.Contains(fx.logs.String(), "allowlisted tool not offered") {
		t.Error("the missing allowlisted tool was not logged")
	}

	// A reload with a new allowlist and prefix applies at once.
	cfg.Tools = []string{"json"}
	cfg.Prefix = "x."
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
	if got := toolNames(fx.m.Tools()); !slices.Equal(got, []string{"x.json"}) {
		t.Fatalf("after reload tools = %v", got)
	}
}

func TestMCPListChangedRediscovers(t *testing.T) {
	f := newFakeServer(t, nil, nil, false)
	fx := newManager(t)
	var changes atomic.Int32
	fx.m.OnChange(func() { changes.Add(1) })
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", f.URL())})
	base := changes.Load()
	if base == 0 {
		t.Error("Sync did not call the OnChange hook")
	}

	f.server().AddTool(&mcp.Tool{Name: "late", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("late")}, nil
		})
	eventually(t, "s/late after list_changed", func() bool { return slices.Contains(toolNames(fx.m.Tools()), "s/late") })
	// The hooks run after the new list is in place.
	eventually(t, "OnChange after list_changed", func() bool { return changes.Load() > base })
	if out := call(fx.m, find(t, fx.m, "s/late"), nil); !out.Success() || string(out.Output) != `"late"` {
		t.Errorf("late = %+v", out)
	}

	f.server().RemoveTools("late", "slow")
	eventually(t, "s/late gone", func() bool {
		names := toolNames(fx.m.Tools())
		return !slices.Contains(names, "s/late") && !slices.Contains(names, "s/slow")
	})
}

func TestMCPCallResults(t *testing.T) {
	f := newFakeServer(t, nil, nil, false)
	fx := newManager(t)
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", f.URL())})

	cases := []struct {
		tool   string
		args   map[string]any
		output string
		cat    toolrouter.ErrorCategory
		err    string
	}{
		{tool: "s/echo", args: map[string]any{"msg": "hi"}, output: `"echo: hi"`},
		{tool: "s/json", output: `{"a":1,"b":[true]}`},
		{tool: "s/sum", args: map[string]any{"a": 1, "b": 2}, output: `{"sum":3}`},
		{tool: "s/fail", cat: toolrouter.CategoryPermission, err: "permission denied: /etc/shadow"},
		{tool: "s/fail-silently", cat: toolrouter.CategoryExecution, err: "without a message"},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			out := call(fx.m, find(t, fx.m, c.tool), c.args)
			if !out.Answered || out.Attempts != 1 {
				t.Errorf("answered/attempts = %v/%d", out.Answered, out.Attempts)
			}
			if c.cat == "" {
				if !out.Success() || string(out.Output) != c.output {
					t.Errorf("outcome = %+v (output %s), want output %s", out, out.Output, c.output)
				}
				return
			}
			if out.Success() || out.Category != c.cat || !strings.Contains(out.Err, c.err) || out.Output != nil {
				t.Errorf("outcome = %+v, want %s failure containing %q", out, c.cat, c.err)
			}
		})
	}

	// A tool the server does not have (any more): the server's JSON-RPC
	// error, classified.
	ghost := *find(t, fx.m, "s/echo")
	ghost.Name, ghost.MCPTool = "s/ghost", "ghost"
	out := call(fx.m, &ghost, nil)
	if out.Success() || out.Category != toolrouter.CategoryNotFound || !out.Answered {
		t.Errorf("ghost = %+v", out)
	}

	// A tool of a server that is not configured.
	other := ghost
	other.MCPServer = "nope"
	if out := call(fx.m, &other, nil); out.Category != toolrouter.CategoryNotFound || !strings.Contains(out.Err, `"nope"`) {
		t.Errorf("unconfigured server = %+v", out)
	}
}

func TestMCPTimeoutSendsCancelled(t *testing.T) {
	f := newFakeServer(t, nil, nil, false)
	fx := newManager(t)
	cfg := serverConfig("s", f.URL())
	cfg.Timeout = 300 * time.Millisecond
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})

	slow := find(t, fx.m, "s/slow")
	if slow.Timeout != 300*time.Millisecond {
		t.Fatalf("timeout = %v", slow.Timeout)
	}
	start := time.Now()
	out := call(fx.m, slow, nil)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the call took %v", took)
	}
	if out.Category != toolrouter.CategoryTimeout || out.Answered || !strings.Contains(out.Err, "timed out after 300ms") {
		t.Errorf("outcome = %+v", out)
	}
	eventually(t, "notifications/cancelled at the server", func() bool { return f.count("notifications/cancelled") == 1 })
	eventually(t, "the tool handler cancelled", func() bool { return f.cancelled.Load() == 1 })

	// The session survives a timeout.
	if out := call(fx.m, find(t, fx.m, "s/echo"), map[string]any{"msg": "x"}); !out.Success() {
		t.Errorf("after a timeout: %+v", out)
	}

	// The caller going away cancels too.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	cfg.Timeout = 5 * time.Second
	out = fx.m.Call(ctx, toolrouter.ExecRequest{Tool: slow})
	if out.Category != toolrouter.CategoryExecution || !strings.Contains(out.Err, "cancel") {
		t.Errorf("cancelled by the caller: %+v", out)
	}
	eventually(t, "a second notifications/cancelled", func() bool { return f.count("notifications/cancelled") == 2 })
}

func TestMCPProgressForwarded(t *testing.T) {
	f := newFakeServer(t, nil, nil, false)
	fx := newManager(t)
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", f.URL())})
	tool := find(t, fx.m, "s/progress")

	for range 5 { // progress may race the result; never after it
		var mu sync.Mutex
		var got []string
		var returned atomic.Bool
		out := fx.m.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Progress: func(p, total float64, msg string) {
			if returned.Load() {
				t.Error("Progress called after Call returned")
			}
			mu.Lock()
			got = append(got, fmt.Sprintf("%v/%v %s", p, total, msg))
			mu.Unlock()
		}})
		returned.Store(true)
		if !out.Success() || string(out.Output) != `"done"` {
			t.Fatalf("outcome = %+v", out)
		}
		mu.Lock()
		for i, g := range got {
			if want := fmt.Sprintf("%d/3 step %d", i+1, i+1); g != want {
				t.Errorf("progress[%d] = %q, want %q", i, g, want)
			}
		}
		mu.Unlock()
	}
	// The server sends its notifications before its result on the same
	// stream: at least one call must have seen them all.
	var seen atomic.Int32
	out := fx.m.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Progress: func(float64, float64, string) { seen.Add(1) }})
	if !out.Success() || seen.Load() != 3 {
		t.Errorf("progress events = %d, outcome %+v", seen.Load(), out)
	}

	// Without a Progress callback no token is sent.
	if out := call(fx.m, tool, nil); !out.Success() {
		t.Errorf("without progress: %+v", out)
	}
}

func TestMCPServerDownAtStartThenUp(t *testing.T) {
	f := newFakeServer(t, nil, nil, true)
	fx := newManager(t)
	var changes atomic.Int32
	fx.m.OnChange(func() { changes.Add(1) })
	other := newFakeServer(t, nil, nil, false)

	start := time.Now()
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("down", f.URL()), serverConfig("ok", other.URL())})
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Sync blocked %v on a server that is down", took)
	}
	names := toolNames(fx.m.Tools())
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "down/") }) || !slices.Contains(names, "ok/echo") {
		t.Fatalf("tools = %v", names)
	}
	if out := call(fx.m, find(t, fx.m, "ok/echo"), map[string]any{"msg": "x"}); !out.Success() {
		t.Errorf("the other server's tool: %+v", out)
	}
	if v, _ := metric(t, fx.reg, "toolrouter_mcp_server_up", map[string]string{"server": "down"}); v != 0 {
		t.Errorf("down server up = %v", v)
	}
	// A call to a tool of the server that is down (known from elsewhere).
	ghost := &toolrouter.Tool{Name: "down/echo", MCPServer: "down", MCPTool: "echo", Timeout: time.Second}
	if out := call(fx.m, ghost, nil); out.Category != toolrouter.CategoryResource || !strings.Contains(out.Err, "MCP server down unavailable") {
		t.Errorf("call while down = %+v", out)
	}

	eventually(t, "reconnection attempts while down", func() bool {
		v, _ := metric(t, fx.reg, "toolrouter_mcp_reconnects_total", map[string]string{"server": "down", "result": "error"})
		return v >= 1
	})
	f.up()
	eventually(t, "the server's tools after it came up", func() bool { return slices.Contains(toolNames(fx.m.Tools()), "down/echo") })
	if out := call(fx.m, find(t, fx.m, "down/echo"), map[string]any{"msg": "up"}); !out.Success() || string(out.Output) != `"echo: up"` {
		t.Errorf("after recovery: %+v", out)
	}
	if v, _ := metric(t, fx.reg, "toolrouter_mcp_server_up", map[string]string{"server": "down"}); v != 1 {
		t.Errorf("up = %v after recovery", v)
	}
	if v, _ := metric(t, fx.reg, "toolrouter_mcp_reconnects_total", map[string]string{"server": "down", "result": "ok"}); v != 1 {
		t.Errorf("reconnects ok = %v", v)
	}
	if v, _ := metric(t, fx.reg, "toolrouter_mcp_reconnects_total", map[string]string{"server": "down", "result": "error"}); v < 1 {
		t.Errorf("reconnects error = %v", v)
	}
}

func TestMCPServerGoesDownThenBack(t *testing.T) {
	f := newFakeServer(t, nil, nil, false)
	fx := newManager(t)
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", f.URL())})
	echo := find(t, fx.m, "s/echo")
	if out := call(fx.m, echo, map[string]any{"msg": "1"}); !out.Success() {
		t.Fatalf("first call: %+v", out)
	}

	f.down()
	out := call(fx.m, echo, map[string]any{"msg": "2"})
	if out.Category != toolrouter.CategoryResource || !strings.HasPrefix(out.Err, "MCP server s unavailable: ") || out.Answered {
		t.Errorf("call while down = %+v", out)
	}
	if strings.Contains(out.Err, "http://") {
		t.Errorf("the message repeats the request: %q", out.Err)
	}
	// The known tools stay listed.
	if !slices.Contains(toolNames(fx.m.Tools()), "s/echo") {
		t.Error("the tools of a server that went down were dropped")
	}
	eventually(t, "up = 0", func() bool {
		v, _ := metric(t, fx.reg, "toolrouter_mcp_server_up", map[string]string{"server": "s"})
		return v == 0
	})

	f.up()
	eventually(t, "calls succeed again", func() bool { return call(fx.m, echo, map[string]any{"msg": "3"}).Success() })
}

func TestMCPSessionExpiryReinitializes(t *testing.T) {
	f := newFakeServer(t, nil, nil, false)
	fx := newManager(t)
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", f.URL())})
	// A non-idempotent tool: the call is repeated only because the server
	// never ran it.
	sum := find(t, fx.m, "s/sum")
	if out := call(fx.m, sum, map[string]any{"a": 1, "b": 1}); !out.Success() {
		t.Fatalf("first call: %+v", out)
	}
	if n := f.count("initialize"); n != 1 {
		t.Fatalf("initialize count = %d", n)
	}

	f.restart() // the server forgets every session: 404 for the old one
	out := call(fx.m, sum, map[string]any{"a": 2, "b": 3})
	if !out.Success() || string(out.Output) != `{"sum":5}` {
		t.Fatalf("call after the session expired = %+v", out)
	}
	if f.count("initialize") < 2 || f.sessionCount() < 2 {
		t.Errorf("initialize count = %d, sessions = %d: not re-initialized", f.count("initialize"), f.sessionCount())
	}
	if out := call(fx.m, sum, map[string]any{"a": 3, "b": 3}); !out.Success() {
		t.Errorf("next call: %+v", out)
	}
}

func TestMCPHeadersSentNeverLogged(t *testing.T) {
	f := newFakeServer(t, nil, nil, false)
	fx := newManager(t)
	cfg := serverConfig("s", f.URL())
	cfg.Headers = map[string]string{"Authorization": "Bearer s3cret-token", "X-Tenant": "t1"}
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
	if out := call(fx.m, find(t, fx.m, "s/echo"), map[string]any{"msg": "x"}); !out.Success() {
		t.Fatalf("call: %+v", out)
	}
	hs := f.allHeaders()
	if len(hs) < 3 {
		t.Fatalf("only %d requests", len(hs))
	}
	for i, h := range hs {
		if h.Get("Authorization") != "Bearer s3cret-token" || h.Get("X-Tenant") != "t1" {
			t.Errorf("request %d lacks the headers: %v", i, h)
		}
	}
	f.down() // failures get logged too
	_ = call(fx.m, find(t, fx.m, "s/echo"), map[string]any{"msg": "x"})
	fx.m.Close()
	if logs := fx.logs.String(); strings.Contains(logs, "s3cret") {
		t.Errorf("a secret header was logged:\n%s", logs)
	}
}

func TestMCPSyncRemovesAndReplaces(t *testing.T) {
	a := newFakeServer(t, nil, nil, false)
	b := newFakeServer(t, nil, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "only-b", InputSchema: objectSchema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}, false)
	fx := newManager(t)
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", a.URL())})
	echo := find(t, fx.m, "s/echo")

	// Same name, new URL: a new connection.
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", b.URL())})
	find(t, fx.m, "s/only-b")

	fx.m.Sync(context.Background(), nil)
	if tools := fx.m.Tools(); len(tools) != 0 {
		t.Errorf("tools after removing the server = %v", toolNames(tools))
	}
	if out := call(fx.m, echo, nil); out.Category != toolrouter.CategoryNotFound {
		t.Errorf("call to a removed server = %+v", out)
	}
	if _, ok := metric(t, fx.reg, "toolrouter_mcp_server_up", map[string]string{"server": "s"}); ok {
		t.Error("the removed server's gauge is still exported")
	}
}

// TestMCPSyncAppliesSettingsInPlace: a Sync that changes only settings
// of the server that are not its connection (output budgets, circuit;
// the timeout is another case) gives its tools those settings on the same
// session (a reload's "applied in place", docs/registry.md); they were
// once left out until the server reconnected.
func TestMCPSyncAppliesSettingsInPlace(t *testing.T) {
	f := newFakeServer(t, nil, nil, false)
	fx := newManager(t)
	cfg := serverConfig("s", f.URL())
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
	find(t, fx.m, "s/echo")
	sessions := f.count("initialize")

	cfg.Budget = toolrouter.OutputBudget{Bytes: 300, Keep: []string{"$.a"}}
	cfg.ToolBudgets = map[string]toolrouter.OutputBudget{"echo": {Tokens: 50}}
	cfg.Circuit = toolrouter.Circuit{Failures: 9, Cooldown: time.Minute}
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
	echo, slow := find(t, fx.m, "s/echo"), find(t, fx.m, "s/slow")
	if echo.Circuit != cfg.Circuit {
		t.Errorf("s/echo's circuit = %+v", echo.Circuit)
	}
	if b := echo.Budget; b.Bytes != 300 || b.Tokens != 50 || !slices.Equal(b.Keep, []string{"$.a"}) {
		t.Errorf("s/echo's budget = %+v, want the server's tightened by its tool_budgets", b)
	}
	if b := slow.Budget; b.Bytes != 300 || b.Tokens != 0 {
		t.Errorf("s/slow's budget = %+v, want the server's", b)
	}
	if n := f.count("initialize"); n != sessions {
		t.Errorf("%d initialize requests after the Sync, %d before: the server was reconnected", n, sessions)
	}
}

// TestRegistryIntegration wires the Manager to a registry Holder the way
// cmd/toolrouterd does: discovered tools are found by canonical name and
// alias, and a tool colliding with a file tool is left out.
func TestMCPRegistryIntegration(t *testing.T) {
	f := newFakeServer(t, nil, nil, false)
	file, err := registry.Parse("r.yaml", []byte("tools:\n  - name: s/json\n    endpoint: http://127.0.0.1:1/json\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := registry.NewHolder("", nil, file)
	fx := newManager(t)
	var skipped atomic.Value
	fx.m.OnChange(func() {
		if err := h.SetExtra(fx.m.Tools()); err != nil {
			skipped.Store(err.Error())
		}
	})
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", f.URL())})

	reg := h.Current()
	echo, ok := reg.Lookup("s/echo")
	if !ok || echo.MCPServer != "s" {
		t.Fatalf("s/echo not in the registry: %v", ok)
	}
	if alias, ok := reg.Lookup(toolrouter.ExportName(toolrouter.FormatOpenAI, "s/echo")); !ok || alias != echo {
		t.Error("s/echo not found under its OpenAI alias")
	}
	if j, _ := reg.Lookup("s/json"); j == nil || j.Endpoint == "" {
		t.Errorf("the file tool s/json lost to the MCP tool: %+v", j)
	}
	if msg, _ := skipped.Load().(string); !strings.Contains(msg, `"s/json"`) {
		t.Errorf("collision not reported: %q", msg)
	}
}

func TestMCPCloseIsIdempotentAndSyncAfterCloseIsNoop(t *testing.T) {
	f := newFakeServer(t, nil, nil, false)
	fx := newManager(t)
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", f.URL())})
	fx.m.Close()
	fx.m.Close()
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", f.URL())})
	if len(fx.m.Tools()) != 0 {
		t.Error("Sync after Close connected")
	}
}

// A call right after the server restarted succeeds, even when the
// supervisor's reconnection attempt failed while the server was down and
// its next one is far off (e2e TestMCPBackendEverything, "echo after a
// server restart", under load): the call tries to connect now instead of
// answering the failed attempt's error.
func TestMCPCallAfterRestartDuringBackoff(t *testing.T) {
	f := newFakeServer(t, nil, nil, false)
	fx := newManager(t)
	mcpclient.SetTiming(fx.m, 5*time.Second, time.Hour, time.Hour)
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", f.URL())})
	echo := find(t, fx.m, "s/echo")
	if out := call(fx.m, echo, map[string]any{"msg": "1"}); !out.Success() {
		t.Fatalf("first call: %+v", out)
	}

	f.down()
	// The call breaks the session; the reconnection attempt it waits for
	// fails, and the next one is an hour off.
	if out := call(fx.m, echo, map[string]any{"msg": "down"}); out.Category != toolrouter.CategoryResource {
		t.Fatalf("call while down = %+v", out)
	}
	if v, _ := metric(t, fx.reg, "toolrouter_mcp_reconnects_total", map[string]string{"server": "s", "result": "error"}); v != 1 {
		t.Fatalf("failed reconnection attempts = %v, want 1", v)
	}
	f.restart() // a new process: the old session is unknown
	f.up()
	if out := call(fx.m, echo, map[string]any{"msg": "2"}); !out.Success() || string(out.Output) != `"echo: 2"` {
		t.Fatalf("call right after the restart = %+v", out)
	}
	if v, _ := metric(t, fx.reg, "toolrouter_mcp_server_up", map[string]string{"server": "s"}); v != 1 {
		t.Errorf("up = %v after the call reconnected", v)
	}
}
