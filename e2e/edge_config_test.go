package e2e_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEdgeStartupErrorsNameTheVariable: values that pass for the type but
// not for the process (a port taken, a registry or SQLite path that does
// not exist, a key list without keys) stop the binary with a line naming
// the variable; config errors are that one line alone.
func TestEdgeStartupErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cases := []struct {
		name, value string
		onlyLine    bool // a config error: the whole output is one line
	}{
		{"TOOLROUTER_API_KEYS", " , ", true},
		{"TOOLROUTER_ADDR", ":99999", true},
		{"TOOLROUTER_ADDR", " :8080", true},
		{"TOOLROUTER_MAX_BODY_BYTES", "99999999999", true},
		{"TOOLROUTER_SHUTDOWN_TIMEOUT", "-5s", true},
		{"TOOLROUTER_REGISTRY", "/nonexistent/registry.yaml", true},
		{"TOOLROUTER_ADDR", taken.Addr().String(), false},
		{"TOOLROUTER_STORE", "sqlite:///nonexistent/dir/toolrouter.db", false},
	}
	for _, c := range cases {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(binDir, "toolrouterd"))
			cmd.Env = append(os.Environ(), "TOOLROUTER_STORE=memory://", "TOOLROUTER_ADDR=127.0.0.1:0", "GORACE=atexit_sleep_ms=0", c.name+"="+c.value)
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("accepted: still serving after 10s:\n%s", out)
			}
			if err == nil {
				t.Fatalf("exited 0:\n%s", out)
			}
			var naming []string
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			for _, l := range lines {
				if strings.Contains(l, c.name+":") {
					naming = append(naming, l)
				}
			}
			if len(naming) != 1 || c.onlyLine && len(lines) != 1 {
				t.Errorf("want one line naming %s, got:\n%s", c.name, out)
			}
		})
	}
}

// TestEdgeBareNamesAreIgnored: unprefixed ADDR, REGISTRY, STORE … (which
// shells, CI and Kubernetes service links set) do not configure the
// service.
func TestEdgeBareNamesAreIgnored(t *testing.T) {
	t.Parallel()
	rt, _ := startRouter(t, "tools: []\n",
		"ADDR=:1", "REGISTRY=/nonexistent.yaml", "STORE=redis://x", "API_KEYS=secret", "LOG_LEVEL=loud", "MAX_BODY_BYTES=x",
		"BATCH_CONCURRENCY=0", "SHUTDOWN_TIMEOUT=soon", "TOOLROUTER_PORT=tcp://10.0.0.1:8080", "TOOLROUTER_SERVICE_HOST=10.0.0.1")
	if resp := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "bare", "tool_call": map[string]any{"name": "x"}}); resp.Status != 200 {
		t.Errorf("API_KEYS was read: %d %s", resp.Status, resp.Body)
	}
}
