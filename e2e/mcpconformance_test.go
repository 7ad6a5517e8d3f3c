package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/poll"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance,
// installed pinned by scripts/install-mcp-conformance.sh) run against
// toolrouterd's /mcp fronting cmd/mcpfixture, for both protocol eras.

// conformanceScenarios are the suite's tool scenarios, by revision (the
// suite marks tools-call-with-logging as removed in 2026-07-28, and the
// sampling and elicitation scenarios need server-to-client requests, which
// a gateway does not originate).
var conformanceScenarios = map[string][]string{
	"2025-11-25": {"tools-list", "tools-call-simple-text", "tools-call-image", "tools-call-audio",
		"tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-with-logging",
		"tools-call-error", "tools-call-with-progress", "json-schema-2020-12", "dns-rebinding-protection",
		// Removed in 2026-07-28 with sessions: a terminated session is 404.
		"server-session-lifecycle",
		// Prompts, relayed from the fixture (registered with prefix "").
		"prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image"},
	"2026-07-28": {"tools-list", "tools-call-simple-text", "tools-call-image", "tools-call-audio",
		"tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
		"tools-call-with-progress", "json-schema-2020-12", "caching", "http-header-validation", "dns-rebinding-protection",
		"prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
		// Multi round-trip requests, relayed to the fixture's tools
		// (input-required-result-non-tool-request needs an
		// input_required result relayed on prompts/get, which toolrouterd
		// does not do).
		"input-required-result-basic-elicitation", "input-required-result-basic-sampling",
		"input-required-result-basic-list-roots", "input-required-result-request-state",
		"input-required-result-multiple-input-requests", "input-required-result-multi-round",
		"input-required-result-missing-input-response", "input-required-result-result-type",
		"input-required-result-unsupported-methods", "input-required-result-tampered-state",
		"input-required-result-capability-check", "input-required-result-ignore-extra-params",
		"input-required-result-validate-input"},
}

var (
	fixtureOnce sync.Once
	fixtureErr  error
)

// fixtureBin builds cmd/mcpfixture (once) and returns its path.
func fixtureBin(t *testing.T) string {
	t.Helper()
	fixtureOnce.Do(func() {
		out, err := exec.Command("go", "build", "-race", "-o", filepath.Join(binDir, "mcpfixture"), "../cmd/mcpfixture").CombinedOutput()
		if err != nil {
			fixtureErr = fmt.Errorf("build mcpfixture: %v\n%s", err, out)
		}
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return filepath.Join(binDir, "mcpfixture")
}

// startFixture builds (once) and starts cmd/mcpfixture.
func startFixture(t *testing.T) *proc {
	t.Helper()
	fixtureBin(t)
	p := start(t, "mcpfixture", []string{"MCPFIXTURE_ADDR=127.0.0.1:0"})
	p.addr = p.waitOutput(t, "listening line", submatch(fixtureListening))
	return p
}

var fixtureListening = regexp.MustCompile(`mcpfixture listening on http://(\S+)/mcp\n`)

// startGateway starts the fixture and toolrouterd fronting it, its tools
// under their own names, and waits until toolrouterd lists them.
func startGateway(t *testing.T) *proc {
	t.Helper()
	fix := startFixture(t)
	router, _ := startRouter(t, fmt.Sprintf(`
mcp_servers:
  - name: fixture
    url: %s/mcp
    prefix: ""
    tools: ["*"]
`, fix.URL()))
	poll.Until(t, 20*time.Second, func() error {
		if r := do(t, "GET", router.URL()+"/schemas/unknown", nil); !strings.Contains(string(r.Body), `"test_simple_text"`) {
			return fmt.Errorf("toolrouterd does not list the fixture's tools: %s", r.Body)
		}
		return nil
	})
	return router
}

// conformanceDir installs the suite (idempotent) and returns its
// directory; it fails the test without Node.js (`make deps` installs it).
func conformanceDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatal("npm is not on PATH: the MCP conformance suite needs Node.js 20+ and npm (run `make deps`)")
	}
	dir := os.Getenv("MCP_CONFORMANCE_DIR")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "toolrouterd", "mcp-conformance")
	}
	out, err := exec.Command("bash", "../scripts/install-mcp-conformance.sh", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("install the conformance suite: %v\n%s", err, out)
	}
	return dir
}

var passedLine = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed`)

// TestMCPConformance runs every tool scenario of the suite for 2025-11-25
// and 2026-07-28 against toolrouterd fronting the fixture; any failed check
// fails the test. The scenarios are clients of their own sessions (or, on
// 2026-07-28, of none), so they run in parallel against one gateway, like
// the clients of a deployment, and the test with the other parallel ones.
func TestMCPConformance(t *testing.T) {
	t.Parallel()
	dir := conformanceDir(t)
	router := startGateway(t)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		for _, scenario := range conformanceScenarios[version] {
			t.Run(version+"/"+scenario, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, "bash", "../scripts/run-mcp-conformance.sh", dir, "server",
					"--url", router.URL()+"/mcp", "--scenario", scenario, "--spec-version", version)
				out, err := cmd.CombinedOutput()
				m := passedLine.FindSubmatch(out)
				if err != nil || m == nil || string(m[3]) != "0" || string(m[1]) != string(m[2]) {
					t.Fatalf("%s %s failed (%v):\n%s", version, scenario, err, out)
				}
				t.Logf("%s/%s checks passed", m[1], m[2])
			})
		}
	}
}

// TestMCPPassThrough: a backend's CallToolResult reaches /mcp callers of
// both eras as the backend sent it, and an output that does not match the
// tool's outputSchema is an isError result on /mcp and a schema failure
// on /route.
func TestMCPPassThrough(t *testing.T) {
	t.Parallel()
	fix := startFixture(t)
	router, _ := startRouter(t, fmt.Sprintf(`
mcp_servers:
  - name: fixture
    url: %s/mcp
    prefix: ""
    tools: ["*"]
`, fix.URL()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(url string, so *mcp.ClientSessionOptions) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, so)
		if err != nil {
			t.Fatalf("connect %s: %v", url, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	direct := dial(fix.URL()+"/mcp", &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	want, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "all_content", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	wantContent, _ := json.Marshal(want.Content)
	wantSC, _ := json.Marshal(want.StructuredContent)

	var sawSchema bool
	for _, so := range []*mcp.ClientSessionOptions{{ProtocolVersion: "2025-11-25"}, nil} {
		cs := dial(router.URL()+"/mcp", so)
		era := cs.InitializeResult().ProtocolVersion
		got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "all_content", Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v", era, err)
		}
		gotContent, _ := json.Marshal(got.Content)
		gotSC, _ := json.Marshal(got.StructuredContent)
		if string(gotContent) != string(wantContent) || string(gotSC) != string(wantSC) || got.IsError {
			t.Errorf("%s: content changed on the way:\n got %s %s\nwant %s %s", era, gotContent, gotSC, wantContent, wantSC)
		}
		if got.Meta["mcpfixture/key"] != "value" || got.Meta["toolrouter/tool_call_id"] == nil {
			t.Errorf("%s: _meta = %v, want the backend's keys and toolrouter's", era, got.Meta)
		}

		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools.Tools {
			if tool.Name == "structured" && tool.OutputSchema == nil {
				t.Errorf("%s: structured lists no outputSchema", era)
			}
		}
		good, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "structured", Arguments: map[string]any{}})
		if err != nil || good.IsError {
			t.Errorf("%s: conforming output: %v %+v", era, err, good)
		}
		bad, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "structured", Arguments: map[string]any{"bad": true}})
		if err != nil {
			t.Fatalf("%s: %v", era, err)
		}
		msg, _ := json.Marshal(bad.Content)
		if !bad.IsError || bad.StructuredContent != nil || !strings.Contains(string(msg), "outputSchema") || bad.Meta["toolrouter/error_category"] != "schema" {
			t.Errorf("%s: non-conforming output: isError %v, content %s, _meta %v", era, bad.IsError, msg, bad.Meta)
		}
		sawSchema = true
	}
	if !sawSchema {
		t.Fatal("no era checked")
	}

	r := do(t, "POST", router.URL()+"/route", map[string]any{
		"plan_id":   "p",
		"tool_call": map[string]any{"name": "structured", "arguments": map[string]any{"bad": true}},
	}).JSON(t)
	if r["success"] != false || r["error_category"] != "schema" || !strings.Contains(fmt.Sprint(r["error"]), "/n") {
		t.Errorf("/route of a non-conforming output: success %v, category %v, error %v", r["success"], r["error_category"], r["error"])
	}
}
