package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/markdown"
)

// registryKeys are the top-level keys of a registry file.
var registryKeys = []string{"tools", "providers", "default_provider", "mcp_servers", "clients", "virtual_servers", "discovery", "guardrails"}

// TestDocsRegistryBlocksCheck: each ```yaml block of README.md and
// docs/*.md that is a registry file (it starts with a top-level registry
// key) passes `toolrouterd check`, with every variable it names set. A
// block that is a fragment of a larger registry is listed with the
// problems it has on its own, and must have exactly those.
func TestDocsRegistryBlocksCheck(t *testing.T) {
	t.Parallel()
	fragments := map[string][]string{
		// Overrides of an MCP server's tools, which the block does not define.
		"docs/mcp.md virtual_servers:": {`virtual server "support": overrides.gh/create_issue: names no tool of the registry (nor of an MCP server, by its prefix)`},
		// A key_sha256 elided to its first digits; support-ui's virtual server is docs/mcp.md's.
		"docs/security.md clients:": {
			`client "support-bot": key_sha256: must be the key's SHA-256 as 64 hex digits (sha256sum of the key)`,
			`client "support-ui": virtual_servers[0]: no virtual server named "support" (defined: none)`,
		},
	}
	// Every *_env key names a variable: key_env, api_key_env, and the
	// backend credentials' token_env, client_id_env, client_secret_env.
	varRE := regexp.MustCompile(`\$\{(\w+)\}|_env: (\w+)|api_key_env: (\w+)`)
	dir := t.TempDir()
	checked := 0
	for _, f := range docFiles(t) {
		b, err := os.ReadFile("../" + f)
		if err != nil {
			t.Fatal(err)
		}
		_, blocks := markdown.Split(string(b))
		for i, blk := range blocks {
			first, _, _ := strings.Cut(blk.Text, ":")
			if blk.Lang != "yaml" || !slices.Contains(registryKeys, first) {
				continue
			}
			checked++
			name := fmt.Sprintf("%s %s:", f, first)
			file := filepath.Join(dir, fmt.Sprintf("%s-%d.yaml", strings.NewReplacer("/", "-", ".", "-").Replace(f), i))
			if err := os.WriteFile(file, []byte(blk.Text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(filepath.Join(binDir, "toolrouterd"), "check", file)
			cmd.Env = os.Environ()
			for _, m := range varRE.FindAllStringSubmatch(blk.Text, -1) {
				cmd.Env = append(cmd.Env, m[1]+m[2]+m[3]+"=value-of-"+m[1]+m[2]+m[3]) // distinct: one key is one client
			}
			out, err := cmd.CombinedOutput()
			want, isFragment := fragments[name]
			if isFragment && err == nil && strings.Contains(string(out), file+": ok") {
				isFragment = false // a whole registry of the same page and first key
			}
			if !isFragment {
				if err != nil || !strings.Contains(string(out), file+": ok") {
					t.Errorf("%s's ```yaml block %d does not pass toolrouterd check: %v\n%s", f, i, err, out)
				}
				continue
			}
			delete(fragments, name)
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if _, problem, ok := strings.Cut(l, ".yaml:"); ok && problem != "" && problem[0] >= '0' && problem[0] <= '9' {
					_, problem, _ = strings.Cut(problem, ": ")
					got = append(got, problem)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s's ```yaml block %d (a fragment): toolrouterd check found\n%s\nwant exactly:\n%s", f, i, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
	for name := range fragments {
		t.Errorf("no ```yaml block %s: update the fragments of this test", name)
	}
	if checked < 8 {
		t.Fatalf("checked %d registry blocks; the scan is broken", checked)
	}
}

// TestDocsCheckSessions runs each shell session of README.md and docs/*.md
// whose commands are all `bin/toolrouterd check FILE` (FILE in the
// repository or written by the session) and `printf … > /tmp/FILE`, and
// compares what they print with what the session shows.
func TestDocsCheckSessions(t *testing.T) {
	checkRE := regexp.MustCompile(`^bin/toolrouterd check (\S+)$`)
	printfRE := regexp.MustCompile(`^printf .* > (/tmp/\S+)$`)
	ran := 0
	for _, f := range docFiles(t) {
		b, err := os.ReadFile("../" + f)
		if err != nil {
			t.Fatal(err)
		}
		_, blocks := markdown.Split(string(b))
	block:
		for i, blk := range blocks {
			if !strings.HasPrefix(blk.Text, "$ ") {
				continue
			}
			tmp := t.TempDir()
			written := map[string]bool{}
			var script, want []string
			for _, l := range strings.Split(strings.TrimSuffix(blk.Text, "\n"), "\n") {
				cmd, isCmd := strings.CutPrefix(l, "$ ")
				if !isCmd {
					want = append(want, strings.ReplaceAll(l, "/tmp/", tmp+"/"))
					continue
				}
				cmd, _, _ = strings.Cut(cmd, "#")
				cmd = strings.TrimSpace(cmd)
				if m := printfRE.FindStringSubmatch(cmd); m != nil {
					written[m[1]] = true
				} else if m := checkRE.FindStringSubmatch(cmd); m == nil {
					continue block
				} else if _, err := os.Stat("../" + m[1]); err != nil && !written[m[1]] {
					continue block // a file of the reader's own
				}
				cmd = strings.ReplaceAll(cmd, "/tmp/", tmp+"/")
				script = append(script, strings.Replace(cmd, "bin/toolrouterd", filepath.Join(binDir, "toolrouterd"), 1)+" 2>&1 || true")
			}
			ran++
			cmd := exec.Command("bash", "-c", strings.Join(script, "\n"))
			cmd.Dir = ".."
			out, err := cmd.Output()
			if got := strings.TrimSuffix(string(out), "\n"); err != nil || got != strings.Join(want, "\n") {
				t.Errorf("%s's session %d prints:\n%s\n(%v), it shows:\n%s", f, i, got, err, strings.Join(want, "\n"))
			}
		}
	}
	if ran == 0 {
		t.Fatal("no toolrouterd check session found in README.md and docs/")
	}
}
