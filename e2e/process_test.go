package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestConfigErrorsNameTheVariable: a bad value exits non-zero with one line
// naming the variable (and an unknown variable's warning line).
func TestConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"TOOLROUTER_MAX_BODY_BYTES":    "lots",
		"TOOLROUTER_BATCH_CONCURRENCY": "0",
		"TOOLROUTER_SHUTDOWN_TIMEOUT":  "soon",
		"TOOLROUTER_LOG_LEVEL":         "loud",
		"TOOLROUTER_LOG_FORMAT":        "xml",
		"TOOLROUTER_STORE":             "redis://x",
		"TOOLROUTER_ADDR":              "",
	}
	for name, value := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(binDir, "toolrouterd"))
			cmd.Env = append(os.Environ(), name+"="+value, "TOOLROUTER_STORE_X=1")
			if name != "TOOLROUTER_STORE" {
				cmd.Env = append(cmd.Env, "TOOLROUTER_STORE=memory://")
			}
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("exited 0 with %s=%q", name, value)
			}
			// The unknown TOOLROUTER_STORE_X is reported as a warning line
			// of its own (also when start fails), beside the one error line.
			var lines []string
			warned := false
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if strings.HasPrefix(l, "toolrouterd: warning: TOOLROUTER_STORE_X: unknown") {
					warned = true
					continue
				}
				lines = append(lines, l)
			}
			if len(lines) != 1 || !strings.Contains(lines[0], name) {
				t.Errorf("want one line naming %s, got:\n%s", name, out)
			}
			if !warned {
				t.Errorf("the unknown TOOLROUTER_STORE_X is not warned about:\n%s", out)
			}
		})
	}
}

// TestCheckCommand lists every problem of a bad registry.
func TestCheckCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`tools:
  - name: a
    endpoint: not a url
  - name: a
    endpoint: http://x/y
    timeout: forever
    colour: blue
`), 0o600)
	out, err := exec.Command(filepath.Join(binDir, "toolrouterd"), "check", bad).CombinedOutput()
	if err == nil {
		t.Fatalf("check passed a bad file:\n%s", out)
	}
	for _, want := range []string{"bad.yaml:3", "endpoint", "duplicate", "timeout", "colour"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	out, err = exec.Command(filepath.Join(binDir, "toolrouterd"), "check", "../examples/registry.yaml").CombinedOutput()
	if err != nil {
		t.Errorf("example registry: %v\n%s", err, out)
	}
}

// TestReloadOnSIGHUP: a good file swaps the registry, a bad one is rejected
// and the old registry stays.
func TestReloadOnSIGHUP(t *testing.T) {
	tools := startTools(t)
	rt, path := startRouter(t, fmt.Sprintf("tools:\n  - {name: one, endpoint: %s/echo}\n", tools.URL()))
	route := func(name string) map[string]any {
		return do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "hup", "tool_call": map[string]any{"name": name, "arguments": "{}"}}).JSON(t)
	}
	hup := func(content string) { rt.reload(t, path, content) }
	hup(fmt.Sprintf("tools:\n  - {name: two, endpoint: %s/echo}\n", tools.URL()))
	if r := route("two"); r["success"] != true {
		t.Errorf("new tool after reload: %v", r)
	}
	if r := route("one"); r["error_category"] != "not_found" {
		t.Errorf("old tool still there: %v", r)
	}
	hup("tools:\n  - {name: three, endpoint: ::bad}\n")
	if !strings.Contains(rt.Output(), "rejected") {
		t.Errorf("bad reload not logged as rejected")
	}
	if r := route("two"); r["success"] != true {
		t.Errorf("registry lost after a bad reload: %v", r)
	}
}

// TestGracefulShutdown: SIGTERM lets an in-flight call finish, then the
// process exits 0.
func TestGracefulShutdown(t *testing.T) {
	arrived := make(chan struct{})
	release := make(chan struct{})
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		close(arrived)
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"done":true}`))
	}))
	defer tool.Close()
	rt, _ := startRouter(t, fmt.Sprintf("tools:\n  - {name: hold, endpoint: %s}\n", tool.URL))
	type result struct {
		status int
		body   []byte
	}
	done := make(chan result, 1)
	go func() {
		raw, _ := json.Marshal(map[string]any{"plan_id": "drain", "tool_call": map[string]any{"name": "hold", "arguments": "{}"}})
		resp, err := http.Post(rt.URL()+"/route", "application/json", bytes.NewReader(raw))
		if err != nil {
			done <- result{0, []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- result{resp.StatusCode, b}
	}()
	<-arrived // the call is in flight at the tool
	rt.cmd.Process.Signal(syscall.SIGTERM)
	// The call is released once the server is draining.
	rt.waitOutput(t, "shutting down", contains("shutting down"))
	close(release)
	r := <-done
	if r.status != 200 || !strings.Contains(string(r.body), `"success":true`) {
		t.Errorf("in-flight call during shutdown: %d %s", r.status, r.body)
	}
	select {
	case <-rt.done:
	case <-time.After(15 * time.Second):
		t.Fatal("did not exit after SIGTERM")
	}
	if code := rt.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
