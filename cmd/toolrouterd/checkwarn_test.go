package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckWarnsUnusedPatterns (issue 38, the newcomer's walk): `check`
// warns about a client's or a virtual server's tool pattern that matches
// no tool, on the line of its tools, with the tool a plain name is close
// to; a glob gets no guess, and a pattern that matches says nothing.
func TestCheckWarnsUnusedPatterns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.yaml")
	src := `tools:
  - {name: get_weather, endpoint: "http://127.0.0.1:9/w"}
clients:
  - name: alice
    key_env: NC_ALICE
    tools: [get_wether, "zzz/*", get_weather]
virtual_servers:
  - name: s
    tools: [get_wether]
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string {
		if k == "NC_ALICE" {
			return "k"
		}
		return ""
	}
	if err := run(context.Background(), []string{"toolrouterd", "check", path}, getenv, &stdout, &stderr); err != nil {
		t.Fatalf("check: %v\n%s", err, stderr.String())
	}
	want := "warning: " + path + `:6: client "alice": tools: pattern "get_wether" matches no tool; did you mean "get_weather"?` + "\n" +
		"warning: " + path + `:6: client "alice": tools: pattern "zzz/*" matches no tool` + "\n" +
		"warning: " + path + `:9: virtual server "s": tools: pattern "get_wether" matches no tool; did you mean "get_weather"?` + "\n"
	if got := stderr.String(); got != want {
		t.Errorf("check warned:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(stdout.String(), "ok, 1 tool(s)") {
		t.Errorf("check: %s", stdout.String())
	}
}
