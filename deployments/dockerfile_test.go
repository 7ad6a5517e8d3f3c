package deployments_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfile checks the image recipe: multi-stage, static (no cgo),
// distroless or scratch final stage, non-root, and a health check that
// needs no shell.
func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(df, -1)
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got %d stage(s)", len(froms))
	}
	final := froms[len(froms)-1][1]
	if !strings.Contains(final, "distroless") && final != "scratch" {
		t.Errorf("final stage %q is neither distroless nor scratch", final)
	}
	final = df[strings.LastIndex(df, "\nFROM "):]
	for _, want := range []string{"CGO_ENABLED=0"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindStringSubmatch(final)
	if user == nil || strings.HasPrefix(user[1], "root") || user[1] == "0" || strings.HasPrefix(user[1], "0:") {
		t.Errorf("final stage runs as %v, want a non-root user", user)
	}
	if !regexp.MustCompile(`(?m)^HEALTHCHECK .*CMD \["[^"]*toolrouterd", "healthcheck"\]`).MatchString(final) {
		t.Errorf("want HEALTHCHECK … CMD [\"…/toolrouterd\", \"healthcheck\"] (exec form: no shell in the image)")
	}

	// The optional Node.js stage for stdio MCP servers from npm.
	i := strings.Index(df, " AS with-node")
	if i < 0 {
		t.Fatal("Dockerfile lacks the with-node stage (Node.js for stdio MCP servers)")
	}
	node := df[i:]
	node = node[:strings.Index(node, "\nFROM ")]
	for _, want := range []string{"ARG MCP_NPM_PACKAGES", "USER node", `CMD ["/usr/local/bin/toolrouterd", "healthcheck"]`, "--target with-node"} {
		if !strings.Contains(df[:i+len(node)], want) {
			t.Errorf("with-node stage lacks %q", want)
		}
	}
}
