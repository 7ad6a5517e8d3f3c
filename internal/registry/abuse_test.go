package registry_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
)

// An endless or huge file is rejected with a clear error instead of being
// read into memory (issue 14, item 8); a reload keeps the registry in force.
func TestLoadCapsTheFileSize(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err := registry.Load("/dev/zero", nil)
		if err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
			t.Fatalf("Load(/dev/zero) = %v, want a size error", err)
		}
	}
	path := filepath.Join(t.TempDir(), "r.yaml")
	if err := os.WriteFile(path, []byte(head), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := registry.NewHolder(path, nil, reg)
	big := head + "# " + strings.Repeat("x", registry.MaxFileBytes) + "\n"
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.Reload(); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Fatalf("Reload of a %d byte file = %v, want a size error", len(big), err)
	}
	if _, ok := h.Current().Lookup("t"); !ok {
		t.Fatal("the registry in force was lost")
	}
}

// Endpoint URLs: ports outside 1..65535 and credentials written in the
// file are problems; ${VAR} expands as in headers (issue 14, item 10).
func TestEndpointURLs(t *testing.T) {
	t.Parallel()
	bad := []struct{ name, src, want string }{
		{"port 99999", "tools:\n  - name: t\n    endpoint: http://127.0.0.1:99999/t\n", `r.yaml:3: tool "t": endpoint: port 99999 is outside 1..65535`},
		{"port 0", "tools:\n  - name: t\n    endpoint: http://127.0.0.1:0/t\n", `r.yaml:3: tool "t": endpoint: port 0 is outside 1..65535`},
		{"password", "tools:\n  - name: t\n    endpoint: http://bob:hunter2@tools.example/t\n", `r.yaml:3: tool "t": endpoint: has credentials written in the URL; take them from the environment (user:${TOKEN}@host) or send them in headers`},
		{"token as user", "tools:\n  - name: t\n    endpoint: https://ghp_abc@tools.example/t\n", `r.yaml:3: tool "t": endpoint: has credentials written in the URL; take them from the environment (user:${TOKEN}@host) or send them in headers`},
		{"unset variable", "tools:\n  - name: t\n    endpoint: http://${TOOLS_HOST}/t\n", `r.yaml:3: tool "t": endpoint: environment variable TOOLS_HOST is unset or empty`},
		{"mcp url password", "mcp_servers:\n  - name: m\n    url: http://bob:hunter2@mcp.example/mcp\n", `credentials written in the URL`},
		{"base_url port", "providers:\n  - name: p\n    kind: openai\n    model: m\n    base_url: http://127.0.0.1:70000/v1\n", `port 70000 is outside 1..65535`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Parse("r.yaml", []byte(tc.src), nil)
			if err == nil {
				t.Fatal("accepted")
			}
			ps := problems(t, err)
			if !strings.Contains(ps.Error(), tc.want) {
				t.Fatalf("problems:\n%v\nwant %q", ps, tc.want)
			}
			if strings.Contains(ps.Error(), "hunter2") {
				t.Fatalf("a problem shows the secret:\n%v", ps)
			}
		})
	}
	src := "tools:\n  - name: t\n    endpoint: http://bob:${TOOL_PASS}@${TOOLS_HOST}:9001/t?k=${TOOL_PASS}\n" +
		"mcp_servers:\n  - name: m\n    url: http://${TOOLS_HOST}:3001/mcp\n"
	reg, err := registry.Parse("r.yaml", []byte(src), env("TOOL_PASS", "s3cret", "TOOLS_HOST", "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := reg.Lookup("t")
	if want := "http://bob:s3cret@127.0.0.1:9001/t?k=s3cret"; tool.Endpoint != want {
		t.Fatalf("endpoint %q, want %q", tool.Endpoint, want)
	}
	if got := reg.MCPServers()[0].URL; got != "http://127.0.0.1:3001/mcp" {
		t.Fatalf("MCP url %q", got)
	}
}
