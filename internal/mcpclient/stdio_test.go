package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// The test binary is also the stdio MCP server of these tests: run with
// STDIO_SERVER=1 it serves MCP on stdin/stdout (see TestMain).
const stdioServerEnv = "STDIO_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		serveStdio()
		return
	}
	// Every test stops what it started: no goroutine of a Manager, a
	// session, a stream drain or a stdio server's pipes outlives the tests.
	// The SDK's streamable HTTP handler (the tests' MCP servers) has no
	// Close: its reader of a session the client left without DELETE (a
	// dropped connection, by design in some tests) outlives the test.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/modelcontextprotocol/go-sdk/mcp.(*streamableServerConn).Read"))
}

// serveStdio is the stdio server: tools pid, env (a variable's value),
// wait (blocks until released, to show concurrent calls share the
// process) and cwd; it greets on stderr with a long and a short line.
//
// While the file named by GATE exists it exits at once instead.
func serveStdio() {
	if _, err := os.Stat(os.Getenv("GATE")); err == nil {
		fmt.Fprintln(os.Stderr, "gate closed")
		os.Exit(3)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	textResult := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	type none struct{}
	mcp.AddTool(srv, &mcp.Tool{Name: "pid"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return textResult(strconv.Itoa(os.Getpid())), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "env"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Name string `json:"name"`
	}) (*mcp.CallToolResult, any, error) {
		return textResult(os.Getenv(in.Name)), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "cwd"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		wd, _ := os.Getwd()
		return textResult(wd), nil, nil
	})
	var arrived sync.WaitGroup
	arrived.Add(3)
	release := make(chan struct{})
	var once sync.Once
	mcp.AddTool(srv, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, none struct{}) (*mcp.CallToolResult, any, error) {
		// The third concurrent call releases all three: they can only
		// finish if the client sent them without waiting for each other.
		arrived.Done()
		go func() { arrived.Wait(); once.Do(func() { close(release) }) }()
		select {
		case <-release:
			return textResult("released"), nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Bytes int `json:"bytes"`
	}) (*mcp.CallToolResult, any, error) {
		return textResult(strings.Repeat("b", in.Bytes)), nil, nil
	})
	if os.Getenv("FLOOD") == "1" {
		// Floods stderr with short lines as fast as the pipe takes them.
		go func() {
			line := []byte(strings.Repeat("flood ", 10) + "\n")
			for {
				if _, err := os.Stderr.Write(line); err != nil {
					return
				}
			}
		}()
	}
	fmt.Fprintln(os.Stderr, "stdio-test ready "+strings.Repeat("x", 5000))
	fmt.Fprintln(os.Stderr, "second line")
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
}

func stdioConfig(t *testing.T, name string) toolrouter.MCPServer {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	return toolrouter.MCPServer{Name: name, Command: []string{exe, "-test.run=^$"}, Prefix: name + "/", Tools: []string{"*"},
		Timeout: 5 * time.Second, Env: map[string]string{stdioServerEnv: "1", "GREETING": "hello", "GATE": filepath.Join(dir, "gate")}, Dir: dir}
}

func outText(t *testing.T, out toolrouter.Outcome) string {
	t.Helper()
	if out.Err != "" {
		t.Fatalf("call failed: %s (%s)", out.Err, out.Category)
	}
	var v any
	if err := json.Unmarshal(out.Output, &v); err != nil {
		t.Fatalf("output %s: %v", out.Output, err)
	}
	return fmt.Sprint(v)
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestStdioServerLifecycle(t *testing.T) {
	f := newManager(t)
	cfg := stdioConfig(t, "local")
	f.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
	if got := toolNames(f.m.Tools()); strings.Join(got, ",") != "local/big,local/cwd,local/env,local/pid,local/wait" {
		t.Fatalf("tools = %v", got)
	}

	// env and cwd reach the process; toolrouterd's own environment does not.
	t.Setenv("TOOLROUTER_SECRET", "s3cret") // set after start: shows nothing is read at call time either
	if got := outText(t, call(f.m, find(t, f.m, "local/env"), map[string]any{"name": "GREETING"})); got != "hello" {
		t.Errorf("GREETING = %q", got)
	}
	if got := outText(t, call(f.m, find(t, f.m, "local/cwd"), nil)); got != cfg.Dir {
		t.Errorf("cwd = %q, want %q", got, cfg.Dir)
	}

	// Concurrent calls share the one process.
	var wg sync.WaitGroup
	results := make([]string, 3)
	for i := range results {
		wg.Go(func() { results[i] = outText(t, call(f.m, find(t, f.m, "local/wait"), nil)) })
	}
	wg.Wait()
	if strings.Join(results, ",") != "released,released,released" {
		t.Errorf("concurrent results = %v", results)
	}

	// stderr is logged line by line, bounded, under component=mcp server=NAME.
	eventually(t, "stderr logged", func() bool { return strings.Contains(f.logs.String(), `"message":"second line"`) })
	for _, line := range strings.Split(f.logs.String(), "\n") {
		if strings.Contains(line, "stdio-test ready") {
			if !strings.Contains(line, `"component":"mcp","server":"local"`) || !strings.Contains(line, `"truncated":true`) || len(line) > 4<<10+200 {
				t.Errorf("stderr line logged as %.300s… (%d bytes)", line, len(line))
			}
		}
	}

	// Killed (and kept from starting again by the gate): calls fail with
	// resource; once it may start, the supervisor restarts it.
	pid, _ := strconv.Atoi(outText(t, call(f.m, find(t, f.m, "local/pid"), nil)))
	gate := cfg.Env["GATE"]
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "restart attempts that fail", func() bool { return strings.Count(f.logs.String(), "gate closed") >= 2 })
	if out := call(f.m, find(t, f.m, "local/pid"), nil); out.Category != toolrouter.CategoryResource || !strings.Contains(out.Err, "MCP server local unavailable") {
		t.Fatalf("while down: %+v, want a resource failure", out)
	}
	if alive(pid) {
		t.Errorf("killed process %d not reaped", pid)
	}
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	var newPID int
	eventually(t, "a new process", func() bool {
		out := call(f.m, find(t, f.m, "local/pid"), nil)
		if out.Err != "" {
			return false
		}
		newPID, _ = strconv.Atoi(outText(t, out))
		return newPID != pid
	})

	// Changed on reload: the old process is stopped, a new one started.
	cfg.Env = map[string]string{stdioServerEnv: "1", "GREETING": "bonjour"}
	f.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
	if got := outText(t, call(f.m, find(t, f.m, "local/env"), map[string]any{"name": "GREETING"})); got != "bonjour" {
		t.Errorf("GREETING after reload = %q", got)
	}
	eventually(t, "the old process stopped", func() bool { return !alive(newPID) })
	lastPID, _ := strconv.Atoi(outText(t, call(f.m, find(t, f.m, "local/pid"), nil)))

	// Stopped on Close.
	began := time.Now()
	f.m.Close()
	t.Logf("Close took %s", time.Since(began))
	if alive(lastPID) {
		t.Errorf("process %d still running after Close", lastPID)
	}
}

func TestStdioServerThatCannotStart(t *testing.T) {
	f := newManager(t)
	cfg := toolrouter.MCPServer{Name: "gone", Command: []string{"/nonexistent/mcp-server"}, Prefix: "gone/", Tools: []string{"*"}, Timeout: time.Second}
	f.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
	if len(f.m.Tools()) != 0 {
		t.Fatalf("tools = %v", toolNames(f.m.Tools()))
	}
	out := call(f.m, &toolrouter.Tool{Name: "gone/x", MCPServer: "gone", MCPTool: "x"}, nil)
	if out.Category != toolrouter.CategoryResource || !strings.Contains(out.Err, "MCP server gone unavailable") {
		t.Errorf("outcome = %+v", out)
	}
	eventually(t, "the cause logged", func() bool { return strings.Contains(f.logs.String(), "no such file or directory") })
}

// TestStdioReplyOverLineLimit: a reply over the stdio line limit (16 MiB)
// is a resource failure that says so, not "process exited"; the session
// cannot go on after an unread partial line, so the server is restarted
// and its next call answered (issue 21, item 15).
func TestStdioReplyOverLineLimit(t *testing.T) {
	f := newManager(t)
	cfg := stdioConfig(t, "local")
	cfg.Timeout = time.Minute // 17 MiB of JSON take a while under -race
	f.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
	pid, _ := strconv.Atoi(outText(t, call(f.m, find(t, f.m, "local/pid"), nil)))
	out := call(f.m, find(t, f.m, "local/big"), map[string]any{"bytes": 17 << 20})
	if out.Category != toolrouter.CategoryResource || !strings.Contains(out.Err, "reply over 16777216 bytes") || strings.Contains(out.Err, "exited") {
		t.Fatalf("over-long reply: %+v", out)
	}
	eventually(t, "the cause logged", func() bool { return strings.Contains(f.logs.String(), "reply over 16777216 bytes") })
	var newPID int
	eventually(t, "a new process answering", func() bool {
		out := call(f.m, find(t, f.m, "local/pid"), nil)
		if out.Err != "" {
			return false
		}
		newPID, _ = strconv.Atoi(outText(t, out))
		return newPID != pid
	})
	eventually(t, "the old process stopped", func() bool { return !alive(pid) })
}
