package mcpserver

import (
	"strings"
	"testing"
)

// A requestState /mcp relays goes back only to the tool and the client it
// was issued for, and only as toolrouterd issued it.
func TestRequestStateWrapping(t *testing.T) {
	tok := wrapState("files/ask", "alice", "backend-state")
	if state, err := unwrapState(tok, "files/ask", "alice"); err != nil || state != "backend-state" {
		t.Fatalf("unwrap = %q, %v", state, err)
	}
	if state, err := unwrapState(wrapState("t", "", ""), "t", ""); err != nil || state != "" {
		t.Errorf("a backend without state: %q, %v", state, err)
	}
	for _, c := range []struct{ tok, tool, client, want string }{
		{tok, "files/ask", "bob", "issued to another client"},
		{tok, "files/other", "alice", "issued for the tool files/ask"},
		{tok + "-TAMPERED", "files/ask", "alice", "malformed or modified"},
		{"backend-state", "files/ask", "alice", "not a requestState toolrouterd issued"},
	} {
		if _, err := unwrapState(c.tok, c.tool, c.client); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("unwrap(%q, %q, %q) = %v, want %q", c.tok, c.tool, c.client, err, c.want)
		}
	}
}
