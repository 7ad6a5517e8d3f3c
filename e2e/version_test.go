package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeBuildVersion (issue 38 item 5): `make build` links the
// checkout's `git describe --tags --always --dirty` and short commit into
// toolrouterd: the binary built with make's own command (make -n build)
// prints both in `toolrouterd version` and reports them as /mcp's
// serverInfo.version.
func TestMakeBuildVersion(t *testing.T) {
	t.Parallel()
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", ".."}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	describe, commit := git("describe", "--tags", "--always", "--dirty"), git("rev-parse", "--short", "HEAD")

	dir := t.TempDir()
	out, err := exec.Command("make", "-n", "--no-print-directory", "-C", "..", "build", "BIN="+dir).Output()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	var build string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(line, " ./cmd/toolrouterd") {
			build = line
		}
	}
	if !strings.Contains(build, "-X main.version="+describe) || !strings.Contains(build, "-X main.commit="+commit) {
		t.Fatalf("make build's toolrouterd command %q does not link version %s and commit %s", build, describe, commit)
	}
	cmd := exec.Command("bash", "-c", build)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}
	bin := filepath.Join(dir, "toolrouterd")
	out, err = exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "toolrouterd "+describe+"\ncommit "+commit+"\n") {
		t.Fatalf("toolrouterd version: %v\n%s\nwant version %s, commit %s", err, out, describe, commit)
	}

	// Served from binDir, as start runs binaries.
	name := "toolrouterd-make-" + filepath.Base(dir)
	if err := os.Rename(bin, filepath.Join(binDir, name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(filepath.Join(binDir, name)) })
	p := start(t, name, []string{"TOOLROUTER_ADDR=127.0.0.1:0", "TOOLROUTER_STORE=memory://"})
	p.addr = p.waitOutput(t, `"listening" log line`, listeningAddr)
	r := mcpPost(t, p.URL(), "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	var res struct {
		Result struct {
			ServerInfo struct{ Name, Version string } `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.Body, &res); err != nil {
		t.Fatalf("initialize: %d %s", r.Status, r.Body)
	}
	if want := describe + " (" + commit + ")"; res.Result.ServerInfo.Version != want {
		t.Errorf("serverInfo %+v, want version %q", res.Result.ServerInfo, want)
	}
}
