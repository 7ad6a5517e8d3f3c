package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/markdown"
	"github.com/toolrouterd/toolrouterd/internal/poll"
)

// readme is README.md's text.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docFiles are the documents a user reads: README.md and docs/*.md, as
// paths from the repository's root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := markdown.Pages("..")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// docs is the text of README.md and docs/*.md, one after the other: the
// examples the tests check may live in any of them.
func docs(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, f := range docFiles(t) {
		text, err := os.ReadFile("../" + f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(text)
		b.WriteString("\n")
	}
	return b.String()
}

// yamlBlock is the ```yaml block of README.md or docs/*.md that starts
// with first.
func yamlBlock(t *testing.T, first string) string {
	t.Helper()
	r := docs(t)
	j := strings.Index(r, "```yaml\n"+first)
	if j < 0 {
		t.Fatalf("README.md and docs/ have no ```yaml block starting with %q", first)
	}
	end := strings.Index(r[j+8:], "```")
	return r[j+8 : j+8+end]
}

// exampleKeys are the keys docs/security.md starts registry-approvals.yaml with.
var exampleKeys = []string{"BILLING_AGENT_KEY=b-secret", "SUPPORT_BOT_KEY=s-key", "ALICE_KEY=a-key"}

// TestExampleVariations: each variation of the example registry the docs
// runs (`make run REGISTRY=examples/registry-….yaml`) is the example's tools
// plus its addition, passes `toolrouterd check`, is named in README.md or
// docs/, and its addition is the block they show.
func TestExampleVariations(t *testing.T) {
	t.Parallel()
	base, err := os.ReadFile("../examples/registry.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tools := string(base[strings.Index(string(base), "tools:\n"):])
	r := docs(t)
	for file, c := range map[string]struct{ block, summary string }{
		"registry-providers.yaml": {"providers:\n", "7 tool(s), 2 provider(s), 0 MCP server(s), 0 client(s)"},
		"registry-mcp.yaml":       {"mcp_servers:\n", "7 tool(s), 0 provider(s), 1 MCP server(s), 0 client(s)"},
		"registry-approvals.yaml": {"", "10 tool(s), 0 provider(s), 0 MCP server(s), 3 client(s)"},
	} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile("../examples/" + file)
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			if !strings.Contains(text, tools) {
				t.Errorf("examples/%s does not hold examples/registry.yaml's tools verbatim", file)
			}
			if !strings.Contains(r, "make run REGISTRY=examples/"+file) && !strings.Contains(r, "`examples/"+file+"`") {
				t.Errorf("README.md and docs/ do not tell how to run examples/%s", file)
			}
			if c.block != "" {
				i := strings.Index(text, "\n"+c.block)
				if i < 0 {
					t.Fatalf("examples/%s has no %q block", file, c.block)
				}
				if got, want := yamlBlock(t, c.block), text[i+1:]; got != want {
					t.Errorf("the docs' block:\n%s\nexamples/%s's:\n%s", got, file, want)
				}
			}
			cmd := exec.Command(filepath.Join(binDir, "toolrouterd"), "check", "examples/"+file)
			cmd.Dir = ".."
			cmd.Env = append(os.Environ(), exampleKeys...)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "examples/"+file+": ok, "+c.summary) {
				t.Errorf("toolrouterd check examples/%s: %v\n%s", file, err, out)
			}
		})
	}
}

// TestApprovalsExampleRunsAsShown follows docs/security.md's "Clients" and
// docs/approvals.md's "Approvals" sections against examples/registry-approvals.yaml and the
// example tool server: the refund waits, is approved and succeeds.
func TestApprovalsExampleRunsAsShown(t *testing.T) {
	b, err := os.ReadFile("../examples/registry-approvals.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tools := startTools(t)
	rt, _ := startRouter(t, strings.ReplaceAll(string(b), "127.0.0.1:9001", tools.addr), exampleKeys...)
	base := rt.URL()
	billing := []string{"Authorization", "Bearer b-secret"}
	bot := []string{"Authorization", "Bearer s-key"}
	alice := []string{"Authorization", "Bearer a-key"}

	// Clients: billing-agent sees billing/refund and math/add; kb/search is
	// as absent to it as a tool that does not exist.
	var names []string
	for _, tl := range do(t, "GET", base+"/schemas/openai", nil, billing...).JSON(t)["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	shown := regexp.MustCompile(`(?s)Bearer b-secret' \| jq -r '\.tools\[\]\.name'\n(.*?)\n\$`).FindStringSubmatch(docs(t))
	if shown == nil {
		t.Fatal("README.md and docs/ show no billing-agent tool list")
	}
	if want := strings.Split(shown[1], "\n"); !slices.Equal(names, want) {
		t.Errorf("billing-agent's tools: %v, want %v (docs/security.md)", names, want)
	}
	res := do(t, "POST", base+"/route", `{"plan_id": "p1", "tool_call": {"name": "kb/search", "arguments": "{}"}}`, billing...).JSON(t)
	if res["error"] != "Tool 'kb/search' not found" || res["error_category"] != "not_found" {
		t.Errorf("billing-agent calls kb/search: %v", res)
	}

	// Approvals: support-bot's refund waits; alice approves; it runs.
	resp := do(t, "POST", base+"/route", `{"plan_id": "p1", "tool_call": {"id": "call_1", "type": "function",
		"function": {"name": "billing/refund", "arguments": "{\"to\": \"acct-7\", \"amount\": 12.5}"}}}`, bot...)
	res = resp.JSON(t)
	if resp.Status != 202 || res["status"] != "awaiting_approval" {
		t.Fatalf("support-bot's refund: %d %s", resp.Status, resp.Body)
	}
	id := res["approval_id"].(string)
	pending := do(t, "GET", base+"/approvals?status=pending", nil, alice...).JSON(t)["approvals"].([]any)
	if len(pending) != 1 || pending[0].(map[string]any)["approval_id"] != id || pending[0].(map[string]any)["client"] != "support-bot" {
		t.Fatalf("pending approvals: %v", pending)
	}
	dec := do(t, "POST", base+"/approvals/"+id, map[string]any{"decision": "approve", "reason": "checked the order"}, alice...).JSON(t)
	result := dec["result"].(map[string]any)
	if out, _ := result["output"].(map[string]any); result["success"] != true || out["refunded"] != 12.5 || out["to"] != "acct-7" {
		t.Fatalf("approved refund: %v", dec)
	}
	// support-bot's kb/delete waits too (its approval patterns); kb/search does not.
	if r := do(t, "POST", base+"/route", `{"plan_id": "p1", "tool_call": {"name": "kb/delete", "arguments": {"id": "kb-2"}}}`, bot...); r.Status != 202 {
		t.Errorf("support-bot's kb/delete: %d %s, want 202", r.Status, r.Body)
	}
	if r := do(t, "POST", base+"/route", `{"plan_id": "p1", "tool_call": {"name": "kb/search", "arguments": {"query": "refund"}}}`, bot...).JSON(t); r["success"] != true {
		t.Errorf("support-bot's kb/search: %v", r)
	}
}

// TestMCPExampleRunsAsShown starts the pinned MCP reference server and
// toolrouterd with examples/registry-mcp.yaml: the "MCP server connected"
// line has the offered and tools counts docs/mcp.md shows.
func TestMCPExampleRunsAsShown(t *testing.T) {
	m := regexp.MustCompile(`mcp_server=everything offered=(\d+) service=toolrouterd tools=(\d+)`).FindStringSubmatch(docs(t))
	if m == nil {
		t.Fatal("README.md and docs/ have no \"MCP server connected\" line for everything")
	}
	b, err := os.ReadFile("../examples/registry-mcp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ev := startEverything(t, everythingBin(t), "")
	tools := startTools(t)
	reg := strings.ReplaceAll(strings.ReplaceAll(string(b), "127.0.0.1:9001", tools.addr), "127.0.0.1:3001", "127.0.0.1:"+ev.port)
	rt, _ := startRouter(t, reg)
	rt.waitOutput(t, "MCP server connected", contains(`"MCP server connected"`))
	var got string
	for _, l := range strings.Split(rt.Output(), "\n") {
		if strings.Contains(l, `"MCP server connected"`) {
			offered := regexp.MustCompile(`"offered":(\d+)`).FindStringSubmatch(l)
			n := regexp.MustCompile(`"tools":(\d+)`).FindStringSubmatch(l)
			if offered != nil && n != nil {
				got = fmt.Sprintf("offered=%s tools=%s", offered[1], n[1])
			}
		}
	}
	if want := fmt.Sprintf("offered=%s tools=%s", m[1], m[2]); got != want {
		t.Errorf("toolrouterd logged %q, docs/mcp.md says %q", got, want)
	}
}

// TestMakeRunPidfilePerAddress: two `make run`s on different addresses
// (scripts/run-example.sh, as make runs it) keep a pidfile each, and one
// stopping leaves the other's in place. The second runs docs/security.md's
// `make run REGISTRY=examples/registry-approvals.yaml` with its keys.
func TestMakeRunPidfilePerAddress(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"toolrouterd", "exampletools"} {
		if err := os.Symlink(filepath.Join(binDir, name), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	start := func(addr, registry string) *makeRun {
		r := &makeRun{addr: addr, pidfile: filepath.Join(bin, "toolrouterd-"+strings.ReplaceAll(addr, ":", "-")+".pid"), done: make(chan struct{})}
		r.cmd = exec.Command("bash", "scripts/run-example.sh")
		r.cmd.Dir = ".."
		r.cmd.Env = append(os.Environ(), "ADDR="+addr, "TOOLS_ADDR="+freeAddr(t), "STORE=memory://", "BIN="+bin, "REGISTRY="+registry)
		r.cmd.Env = append(r.cmd.Env, exampleKeys...)
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = r.cmd.Wait(); close(r.done) }()
		t.Cleanup(func() { r.stop(t) })
		poll.Until(t, 60*time.Second, func() error {
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if _, err := os.Stat(r.pidfile); err != nil {
				return err
			}
			return nil
		})
		return r
	}
	a, b := start(freeAddr(t), "examples/registry.yaml"), start(freeAddr(t), "examples/registry-approvals.yaml")
	res := do(t, "POST", "http://"+b.addr+"/route", `{"plan_id": "p1", "tool_call": {"name": "kb/search", "arguments": {"query": "refund"}}}`,
		"Authorization", "Bearer s-key").JSON(t)
	if res["success"] != true {
		t.Errorf("make run REGISTRY=examples/registry-approvals.yaml: kb/search as support-bot: %v", res)
	}
	pa, errA := os.ReadFile(a.pidfile)
	pb, errB := os.ReadFile(b.pidfile)
	if errA != nil || errB != nil || string(pa) == string(pb) {
		t.Fatalf("pidfiles %s %q %v, %s %q %v: want one each", a.pidfile, pa, errA, b.pidfile, pb, errB)
	}
	b.stop(t)
	if _, err := os.Stat(b.pidfile); !os.IsNotExist(err) {
		t.Errorf("%s left behind after its make run stopped: %v", b.pidfile, err)
	}
	if got, err := os.ReadFile(a.pidfile); err != nil || string(got) != string(pa) {
		t.Errorf("the first make run's pidfile after the second stopped: %q %v, want %q", got, err, pa)
	}
}

// makeRun is a running scripts/run-example.sh.
type makeRun struct {
	addr, pidfile string
	cmd           *exec.Cmd
	done          chan struct{}
}

// stop sends the script SIGTERM (as make forwards it) and waits for it to
// end; the script stops toolrouterd and the tool server.
func (r *makeRun) stop(t *testing.T) {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Errorf("make run on %s did not stop within 20s of SIGTERM", r.addr)
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}
