package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/config"
	"github.com/toolrouterd/toolrouterd/internal/config/configtest"
)

// TestRunServesUntilCancelled starts the whole service in-process with its
// own TOOLROUTER_ environment (set for the test only) on 127.0.0.1:0, reads the
// bound address from the "listening" log line, waits for /healthz, routes a
// call to a real tool endpoint, then cancels ctx: run returns nil.
func TestRunServesUntilCancelled(t *testing.T) {
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, r.Body) // the output is the arguments
	}))
	defer tool.Close()
	reg := filepath.Join(t.TempDir(), "registry.yaml")
	if err := os.WriteFile(reg, []byte(fmt.Sprintf("tools:\n  - name: test/echo\n    endpoint: %s/echo\n", tool.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	configtest.Setenv(t,
		"TOOLROUTER_ADDR", "127.0.0.1:0",
		"TOOLROUTER_STORE", "memory://",
		"TOOLROUTER_REGISTRY", reg,
		"TOOLROUTER_API_KEYS", "k1",
		"TOOLROUTER_DEBUG_ADDR", "127.0.0.1:0")
	version, commit = "v1.2.0", "0123456789abcdef" // as -ldflags -X sets them
	t.Cleanup(func() { version, commit = "", "" })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs, logw := io.Pipe()
	addr, debugAddr := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			var line struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil {
				switch {
				case line.Message == "listening":
					addr <- line.Addr
				case strings.HasPrefix(line.Message, "profiler listening"):
					debugAddr <- line.Addr
				}
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"toolrouterd"}, os.Getenv, io.Discard, logw)
		logw.Close()
	}()

	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no listening line within 30s")
	}
	resp, err := http.Get(base + "/healthz") // listening: the first request is served
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	// TOOLROUTER_DEBUG_ADDR: the profiler on its own listener, not on
	// the service's.
	select {
	case a := <-debugAddr:
		resp, err = http.Get("http://" + a + "/debug/pprof/cmdline")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /debug/pprof/cmdline on TOOLROUTER_DEBUG_ADDR: %v %v", resp, err)
		}
		resp.Body.Close()
	case <-time.After(30 * time.Second):
		t.Fatal("no profiler listening line within 30s")
	}
	if resp, err = http.Get(base + "/debug/pprof/cmdline"); err != nil || resp.StatusCode == http.StatusOK {
		t.Fatalf("GET /debug/pprof/cmdline on TOOLROUTER_ADDR: %v %v, want no profiler there", resp, err)
	}
	resp.Body.Close()

	req, _ := http.NewRequest(http.MethodPost, base+"/route", strings.NewReader(`{"plan_id":"p1","tool_call":{"name":"test/echo","arguments":{"msg":"hi"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k1")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Success  bool              `json:"success"`
		Sequence int               `json:"sequence"`
		Output   map[string]string `json:"output"`
	}
	err = json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !res.Success || res.Output["msg"] != "hi" {
		t.Fatalf("POST /route: %d %+v %v", resp.StatusCode, res, err)
	}

	// /mcp reports the build's version as serverInfo.version.
	req, _ = http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer k1")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"serverInfo":{"name":"toolrouterd","version":"v1.2.0 (0123456789ab)"}`) {
		t.Errorf("POST /mcp initialize: %d %s, want serverInfo.version v1.2.0 (0123456789ab)", resp.StatusCode, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v after cancel, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return within 30s of cancel")
	}
}

// TestConsoleLogsColourOnlyOnATerminal: TOOLROUTER_LOG_FORMAT=console
// writes no ANSI escapes to a file (or pipe), colours on a terminal.
func TestConsoleLogsColourOnlyOnATerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log := newLogger(config.Config{LogFormat: "console", LogLevel: "info"}, f)
	log.Info().Str("k", "v").Msg("hello")
	b, err := os.ReadFile(f.Name())
	if err != nil || !strings.Contains(string(b), "hello") || strings.Contains(string(b), "\x1b[") {
		t.Fatalf("console log to a file: %q %v, want the line without ANSI escapes", b, err)
	}
	if isTerminal(f) {
		t.Error("a regular file counts as a terminal")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil { // only where there is one
		defer tty.Close()
		if !isTerminal(tty) {
			t.Error("/dev/tty does not count as a terminal")
		}
	}
}

// TestVersion: `toolrouterd version` prints the link-time version and
// commit (release builds, the Dockerfile), and the build info's otherwise;
// /mcp reports the same as serverInfo.version (TestRunServesUntilCancelled).
func TestVersion(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), []string{"toolrouterd", "version"}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "toolrouterd ") || !strings.Contains(out.String(), "\ncommit ") {
		t.Errorf("toolrouterd version:\n%s", out.String())
	}

	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.modified", Value: "true"}}}
	for _, c := range []struct {
		bi              *debug.BuildInfo
		version, commit string
		want            string
	}{
		{bi, "", "", "devel (0123456789ab+modified)"},
		{bi, "v1.2.0", "fedcba9876543210", "v1.2.0 (fedcba987654)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, "", "", "v0.3.1"},
		{nil, "", "", "devel"},
	} {
		if got := readVersion(c.bi, c.bi != nil, c.version, c.commit).String(); got != c.want {
			t.Errorf("readVersion(%v, %q, %q) = %q, want %q", c.bi != nil, c.version, c.commit, got, c.want)
		}
	}
}
