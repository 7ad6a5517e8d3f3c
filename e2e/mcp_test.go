package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/poll"
)

// The MCP reference server @modelcontextprotocol/server-everything,
// installed by scripts/install-mcp-everything.sh (pinned version).

// everythingBin finds the installed server's command.
func everythingBin(t *testing.T) string {
	return npmServerBin(t, "MCP_EVERYTHING_DIR", "mcp-everything", "mcp-server-everything")
}

// npmServerBin finds the command bin of an MCP server that a script of
// scripts/ installed under ~/.cache/toolrouterd/dir (or in $env), or fails
// the test when Node.js or the package is missing (`make test` installs
// them first with `make deps`).
func npmServerBin(t *testing.T, env, dir, bin string) string {
	t.Helper()
	root := os.Getenv(env)
	if root == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		root = filepath.Join(cache, "toolrouterd", dir)
	}
	path := filepath.Join(root, "node_modules", ".bin", bin)
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if _, err := os.Stat(path); err != nil {
		missing = path + " is missing"
	}
	if missing != "" {
		t.Fatal(missing + ": run `make deps` (or set " + env + ")")
	}
	return path
}

// everything is a running server-everything process.
type everything struct {
	cmd  *exec.Cmd
	port string
	done chan struct{}
	mu   sync.Mutex
	out  strings.Builder
}

func (e *everything) Write(b []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.out.Write(b)
}

func (e *everything) Output() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.out.String()
}

func (e *everything) URL() string { return "http://127.0.0.1:" + e.port + "/mcp" }

// startEverything starts the server on port (a free one when "") with
// the streamable HTTP transport and waits until it accepts connections.
func startEverything(t *testing.T, bin, port string) *everything {
	t.Helper()
	if port == "" {
		_, port, _ = net.SplitHostPort(freeAddr(t))
	}
	e := &everything{port: port, done: make(chan struct{})}
	e.cmd = exec.Command(bin, "streamableHttp")
	e.cmd.Env = append(os.Environ(), "PORT="+port)
	e.cmd.Stdout, e.cmd.Stderr = e, e
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = e.cmd.Wait(); close(e.done) }()
	t.Cleanup(func() {
		e.stop()
		if t.Failed() {
			t.Logf("server-everything output:\n%s", e.Output())
		}
	})
	poll.Until(t, 30*time.Second, func() error {
		select {
		case <-e.done:
			t.Fatalf("server-everything exited during start-up:\n%s", e.Output())
		default:
		}
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err != nil {
			return fmt.Errorf("server-everything does not listen on %s: %v\n%s", port, err, e.Output())
		}
		c.Close()
		return nil
	})
	return e
}

// stop ends the process (SIGTERM, then SIGKILL) and waits for it.
func (e *everything) stop() {
	select {
	case <-e.done:
		return
	default:
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(5 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.done
	}
}

// openAIAliases maps canonical tool names to the names GET
// /schemas/openai exports them under.
func openAIAliases(t *testing.T, router *proc) map[string]string {
	t.Helper()
	var body struct {
		Tools []struct {
			Name       string `json:"name"`
			Definition struct {
				Function struct {
					Name       string         `json:"name"`
					Parameters map[string]any `json:"parameters"`
				} `json:"function"`
			} `json:"definition"`
		} `json:"tools"`
	}
	r := do(t, http.MethodGet, router.URL()+"/schemas/openai", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /schemas/openai = %d %s", r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tool := range body.Tools {
		out[tool.Name] = tool.Definition.Function.Name
	}
	return out
}

// routeOpenAI routes an OpenAI-shaped call of the tool exported as alias.
func routeOpenAI(t *testing.T, router *proc, alias string, args any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(args)
	r := do(t, http.MethodPost, router.URL()+"/route", map[string]any{
		"plan_id":   "mcp-e2e",
		"tool_call": map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": alias, "arguments": string(raw)}},
	})
	if r.Status != http.StatusOK {
		t.Fatalf("POST /route = %d %s", r.Status, r.Body)
	}
	return r.JSON(t)
}

func TestMCPBackendEverything(t *testing.T) {
	bin := everythingBin(t)
	srv := startEverything(t, bin, "")
	const secret = "e2e-mcp-s3cret"
	registryYAML := func(tools string) string {
		return fmt.Sprintf(`
mcp_servers:
  - name: everything
    url: %s
    tools: [%s]
    headers: {X-Api-Key: "${E2E_MCP_KEY}"}
    timeout: 20s
`, srv.URL(), tools)
	}
	router, path := startRouter(t, registryYAML("echo, get-sum, get-structured-content, trigger-long-running-operation"),
		"E2E_MCP_KEY="+secret)

	// Discovery: the allowlisted tools, under their provider-safe aliases.
	var aliases map[string]string
	poll.Until(t, 20*time.Second, func() error {
		if aliases = openAIAliases(t, router); len(aliases) != 4 {
			return fmt.Errorf("exported tools %v, want 4", aliases)
		}
		return nil
	})
	for _, name := range []string{"everything/echo", "everything/get-sum", "everything/get-structured-content", "everything/trigger-long-running-operation"} {
		if a := aliases[name]; a == "" || strings.Contains(a, "/") {
			t.Fatalf("%s exported as %q; schemas: %v", name, a, aliases)
		}
	}
	if len(aliases) != 4 {
		t.Errorf("exported tools = %v, want the 4 allowlisted", aliases)
	}

	t.Run("echo", func(t *testing.T) {
		res := routeOpenAI(t, router, aliases["everything/echo"], map[string]any{"message": "hello MCP"})
		if res["success"] != true || res["output"] != "Echo: hello MCP" || res["tool_name"] != "everything/echo" {
			t.Errorf("echo = %v", res)
		}
		pr, _ := res["provider_result"].(map[string]any)
		if pr["role"] != "tool" || pr["tool_call_id"] != "call_1" {
			t.Errorf("provider_result = %v", pr)
		}
	})
	t.Run("get-sum", func(t *testing.T) {
		res := routeOpenAI(t, router, aliases["everything/get-sum"], map[string]any{"a": 2, "b": 3.5})
		if res["success"] != true || res["output"] != "The sum of 2 and 3.5 is 5.5." {
			t.Errorf("get-sum = %v", res)
		}
	})
	t.Run("structured", func(t *testing.T) {
		res := routeOpenAI(t, router, aliases["everything/get-structured-content"], map[string]any{"location": "Chicago"})
		out, _ := res["output"].(map[string]any)
		if res["success"] != true || out["temperature"] != 36.0 || out["conditions"] != "Light rain / drizzle" || out["humidity"] != 82.0 {
			t.Errorf("get-structured-content = %v", res)
		}
	})
	t.Run("arguments validated against the inputSchema", func(t *testing.T) {
		res := routeOpenAI(t, router, aliases["everything/get-sum"], map[string]any{"a": "two", "b": 3})
		if res["success"] != false || res["error_category"] != "schema" || !strings.Contains(fmt.Sprint(res["error"]), "/a") {
			t.Errorf("bad arguments = %v", res)
		}
	})
	t.Run("progress streamed", func(t *testing.T) {
		status, events := stream(t, router.URL()+"/route", map[string]any{
			"plan_id": "mcp-e2e",
			"tool_call": map[string]any{"id": "call_2", "type": "function", "function": map[string]any{
				"name": aliases["everything/trigger-long-running-operation"], "arguments": `{"duration": 0.6, "steps": 3}`}},
		})
		if status != http.StatusOK || len(events) == 0 {
			t.Fatalf("stream = %d, %d events", status, len(events))
		}
		var progress []float64
		for _, ev := range events {
			if ev.Event == "update" && ev.Data["status"] == "running" {
				if p, ok := ev.Data["progress"].(float64); ok {
					progress = append(progress, p)
					if ev.Data["total"] != 3.0 {
						t.Errorf("progress update without total 3: %v", ev.Data)
					}
				}
			}
		}
		if fmt.Sprint(progress) != "[1 2 3]" {
			t.Errorf("progress = %v, want [1 2 3]; events %v", progress, events)
		}
		last := events[len(events)-1]
		if last.Event != "result" || last.Data["success"] != true || !strings.Contains(fmt.Sprint(last.Data["output"]), "Long running operation completed") {
			t.Errorf("last event = %v", last)
		}
	})

	metrics := do(t, http.MethodGet, router.URL()+"/metrics", nil)
	if !strings.Contains(string(metrics.Body), `toolrouter_mcp_server_up{server="everything"} 1`) {
		t.Errorf("metrics lack the server's up gauge:\n%s", grepLines(string(metrics.Body), "toolrouter_mcp"))
	}

	// A reload (SIGHUP) applies a new allowlist.
	if err := os.WriteFile(path, []byte(registryYAML("echo")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := router.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, func() error {
		if aliases = openAIAliases(t, router); len(aliases) != 1 || aliases["everything/echo"] == "" {
			return fmt.Errorf("after the reload the exported tools are %v, want everything/echo alone", aliases)
		}
		return nil
	})

	// The server restarts (new process, same port): its sessions are
	// gone, and the next call runs on a new session.
	echo := aliases["everything/echo"]
	srv.stop()
	srv = startEverything(t, bin, srv.port)
	res := routeOpenAI(t, router, echo, map[string]any{"message": "after restart"})
	if res["success"] != true || res["output"] != "Echo: after restart" {
		t.Errorf("echo after a server restart = %v", res)
	}

	// The server goes down: its tool fails with resource, stays listed,
	// and works again once the server is back.
	srv.stop()
	res = routeOpenAI(t, router, echo, map[string]any{"message": "down"})
	if res["success"] != false || res["error_category"] != "resource" || !strings.Contains(fmt.Sprint(res["error"]), "MCP server everything unavailable") {
		t.Errorf("echo while the server is down = %v", res)
	}
	if _, ok := openAIAliases(t, router)["everything/echo"]; !ok {
		t.Error("the tools of a server that is down were dropped")
	}
	if r := do(t, http.MethodGet, router.URL()+"/readyz", nil); r.Status != http.StatusOK {
		t.Errorf("/readyz = %d while an MCP server is down", r.Status)
	}
	startEverything(t, bin, srv.port)
	poll.Until(t, 40*time.Second, func() error { // the reconnect backoff is capped at 30s
		if res = routeOpenAI(t, router, echo, map[string]any{"message": "back"}); res["success"] != true {
			return fmt.Errorf("echo after the server came back = %v", res)
		}
		return nil
	})
	if res["output"] != "Echo: back" {
		t.Errorf("echo after the server came back = %v", res)
	}

	if out := router.Output(); strings.Contains(out, secret) {
		t.Error("the MCP server's secret header value was logged")
	}
}

func grepLines(s, substr string) string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			out = append(out, sc.Text())
		}
	}
	return strings.Join(out, "\n")
}
