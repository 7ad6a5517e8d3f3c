package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/poll"
)

// The MCP reference server @modelcontextprotocol/server-memory, a stdio
// server installed by scripts/install-mcp-memory.sh (pinned version).

// memoryBin finds the installed server's command.
func memoryBin(t *testing.T) string {
	return npmServerBin(t, "MCP_MEMORY_DIR", "mcp-memory", "mcp-server-memory")
}

// childPIDs lists the processes whose parent is pid (Linux /proc).
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("no /proc: %v", err)
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// waitTools polls GET /schemas/openai until it exports every name in want,
// and returns the canonical → alias map.
func waitTools(t *testing.T, router *proc, want ...string) map[string]string {
	t.Helper()
	var aliases map[string]string
	poll.Until(t, 30*time.Second, func() error {
		aliases = openAIAliases(t, router)
		for _, w := range want {
			if aliases[w] == "" {
				return fmt.Errorf("tool %s not listed; have %v\n%s", w, aliases, router.Output())
			}
		}
		return nil
	})
	return aliases
}

// TestMCPStdioServerMemory runs the npm reference server
// @modelcontextprotocol/server-memory as a stdio backend of the real
// binary: its tools on /schemas, calls on /route, a killed process
// answered with resource and restarted, its stderr in the log, and the
// process stopped with toolrouterd.
func TestMCPStdioServerMemory(t *testing.T) {
	bin := memoryBin(t)
	data := t.TempDir()
	cwd := filepath.Join(t.TempDir(), "cwd")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	router, _ := startRouter(t, fmt.Sprintf(`
mcp_servers:
  - name: memory
    command: [%q]
    env:
      MEMORY_FILE_PATH: ${E2E_MEMORY_DATA}/memory.jsonl
    cwd: %q
    timeout: 20s
`, bin, cwd), "E2E_MEMORY_DATA="+data)
	aliases := waitTools(t, router, "memory/create_entities", "memory/read_graph")

	// The schemas carry the server's own input schema.
	r := do(t, http.MethodGet, router.URL()+"/schemas/anthropic", nil)
	if !strings.Contains(string(r.Body), `"entityType"`) {
		t.Errorf("anthropic schemas lack create_entities' input schema: %s", r.Body)
	}

	res := routeOpenAI(t, router, aliases["memory/create_entities"], map[string]any{
		"entities": []any{map[string]any{"name": "Ada", "entityType": "person", "observations": []any{"wrote the first program"}}},
	})
	if res["success"] != true {
		t.Fatalf("create_entities: %v", res)
	}
	readGraph := func() map[string]any {
		return routeOpenAI(t, router, aliases["memory/read_graph"], map[string]any{})
	}
	if res := readGraph(); res["success"] != true || !strings.Contains(fmt.Sprint(res["output"]), "wrote the first program") {
		t.Fatalf("read_graph: %v", res)
	}
	if _, err := os.Stat(filepath.Join(data, "memory.jsonl")); err != nil {
		t.Errorf("env did not reach the server (MEMORY_FILE_PATH): %v", err)
	}
	if out := router.Output(); !strings.Contains(grepLines(out, "Knowledge Graph MCP Server running on stdio"), `"component":"mcp","server":"memory"`) {
		t.Errorf("the server's stderr is not in the log as component=mcp server=memory:\n%s", grepLines(out, `"server":"memory"`))
	}

	// Kill the process; with its cwd gone it cannot start again, so calls
	// fail with resource until the cwd is back and the supervisor restarts it.
	kids := childPIDs(t, router.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("toolrouterd's children = %v, want the one server", kids)
	}
	if err := os.Rename(cwd, cwd+".away"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(kids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, func() error {
		res := readGraph()
		if res["success"] != false {
			return fmt.Errorf("calls still succeed after the process was killed: %v", res)
		}
		if res["error_category"] != "resource" || !strings.Contains(fmt.Sprint(res["error"]), "MCP server memory unavailable") {
			t.Fatalf("while down: %v, want a resource failure", res)
		}
		return nil
	})
	if err := os.Rename(cwd+".away", cwd); err != nil {
		t.Fatal(err)
	}
	// The restart backoff grew while the cwd was away.
	poll.Until(t, 40*time.Second, func() error {
		res := readGraph()
		if res["success"] != true {
			return fmt.Errorf("the server was not restarted: %v\n%s", res, grepLines(router.Output(), "memory"))
		}
		if !strings.Contains(fmt.Sprint(res["output"]), "wrote the first program") {
			t.Errorf("after the restart read_graph = %v", res)
		}
		return nil
	})
	kids = childPIDs(t, router.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("children after the restart = %v", kids)
	}

	// Stopped with toolrouterd.
	http.DefaultClient.CloseIdleConnections()
	if err := router.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-router.done:
	case <-time.After(20 * time.Second):
		t.Fatal("toolrouterd did not stop")
	}
	if err := syscall.Kill(kids[0], 0); err == nil {
		t.Errorf("the server process %d outlived toolrouterd", kids[0])
	}
}

// TestStdioStderrFloodKeepsServing: a stdio server flooding stderr keeps
// answering calls through the binary, and what toolrouterd logs of the
// flood stays bounded: at most 50 lines a second, the rest counted
// (issue 21, item 15; the CPU cost of the drain is measured, not asserted:
// see the note).
func TestStdioStderrFloodKeepsServing(t *testing.T) {
	reg := fmt.Sprintf("mcp_servers:\n  - name: fx\n    command: [%q, -stdio]\n    env: {MCPFIXTURE_STDERR_FLOOD: \"1\"}\n", fixtureBin(t))
	began := time.Now()
	rt, _ := startRouter(t, reg, "TOOLROUTER_LOG_LEVEL=info")
	call := map[string]any{"plan_id": "flood", "tool_call": map[string]any{"name": "fx/pid", "arguments": map[string]any{}}}
	poll.Until(t, 15*time.Second, func() error {
		if r := do(t, "POST", rt.URL()+"/route", call); r.JSON(t)["success"] != true {
			return fmt.Errorf("fx/pid never routable: %s", r.Body)
		}
		return nil
	})
	for i := range 20 {
		if r := do(t, "POST", rt.URL()+"/route", call); r.JSON(t)["success"] != true {
			t.Fatalf("call %d while the server floods stderr: %s", i, r.Body)
		}
	}
	rt.waitOutput(t, "a count of dropped stderr lines", contains("MCP server stderr: lines dropped"))
	out := rt.Output()
	elapsed := time.Since(began)
	flood := strings.Count(out, "mcpfixture flooding stderr")
	if most := stderrLinesPerSecond * (int(elapsed/time.Second) + 1); flood > most {
		t.Errorf("%d flood lines logged in %s, want at most %d (50 a second)", flood, elapsed, most)
	}
	if len(out) > 1<<20 {
		t.Errorf("toolrouterd logged %d bytes in %s", len(out), elapsed)
	}
}

const stderrLinesPerSecond = 50

// TestStdioReplyOverLineLimitThroughTheBinary: a stdio server's reply over
// the 16 MiB line limit fails its call as resource saying so, not as a
// process that exited (it lives); the server is restarted and answers the
// next call (issue 21, item 15).
func TestStdioReplyOverLineLimitThroughTheBinary(t *testing.T) {
	t.Parallel()
	reg := fmt.Sprintf("mcp_servers:\n  - name: fx\n    command: [%q, -stdio]\n    timeout: 2m\n", fixtureBin(t))
	rt, _ := startRouter(t, reg, "TOOLROUTER_LOG_LEVEL=info")
	route := func(tool string, args map[string]any) map[string]any {
		return do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "big", "tool_call": map[string]any{"name": tool, "arguments": args}}).JSON(t)
	}
	var pid any
	poll.Until(t, 15*time.Second, func() error {
		res := route("fx/pid", map[string]any{})
		if res["success"] != true {
			return fmt.Errorf("fx/pid never routable: %v", res)
		}
		pid = res["output"].(map[string]any)["pid"]
		return nil
	})
	res := route("fx/big", map[string]any{"bytes": 17 << 20})
	if msg := fmt.Sprint(res["error"]); res["error_category"] != "resource" || msg != "MCP server fx: reply over 16777216 bytes (the stdio line limit); the server is restarted" {
		t.Fatalf("over-long reply: %v", res)
	}
	poll.Until(t, 30*time.Second, func() error {
		res := route("fx/pid", map[string]any{})
		if res["success"] != true {
			return fmt.Errorf("not answering yet: %v", res["error"])
		}
		if got := res["output"].(map[string]any)["pid"]; got == pid {
			return fmt.Errorf("still process %v", got)
		}
		return nil
	})
	if !strings.Contains(grepLines(rt.Output(), `"level":"warn"`), "reply over 16777216 bytes") {
		t.Errorf("no warning says what happened:\n%s", rt.Output())
	}
}
