package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/memory"
)

// A requestState /mcp relays goes back only to the tool and the client it
// was issued for, and only as toolrouterd issued and signed it (issue 21
// finding 6); replicas on one store sign with the key generated into it.
func TestRequestStateWrapping(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	h := &Handler{d: Deps{Marks: st}}
	other := &Handler{d: Deps{Marks: st}} // another replica on the store
	tok, err := h.wrapState(ctx, "files/ask", "alice", "backend-state")
	if err != nil {
		t.Fatal(err)
	}
	if state, err := other.unwrapState(ctx, tok, "files/ask", "alice"); err != nil || state != "backend-state" {
		t.Fatalf("unwrap on another replica = %q, %v", state, err)
	}
	empty, _ := h.wrapState(ctx, "t", "", "")
	if state, err := h.unwrapState(ctx, empty, "t", ""); err != nil || state != "" {
		t.Errorf("a backend without state: %q, %v", state, err)
	}
	// The forgery: the client field rewritten, the rest kept.
	payload, sig, _ := strings.Cut(strings.TrimPrefix(tok, statePrefix), ".")
	b, _ := base64.RawURLEncoding.DecodeString(payload)
	var w wrappedState
	_ = json.Unmarshal(b, &w)
	w.Client = "bob"
	b, _ = json.Marshal(w)
	forged := statePrefix + base64.RawURLEncoding.EncodeToString(b)
	elsewhere, _ := (&Handler{d: Deps{StateKey: "another key of 32 bytes or more.."}}).wrapState(ctx, "files/ask", "alice", "backend-state")
	for _, c := range []struct{ tok, tool, client, want string }{
		{tok, "files/ask", "bob", "issued to another client"},
		{tok, "files/other", "alice", "issued for the tool files/ask"},
		{forged + "." + sig, "files/ask", "bob", "altered, or not signed"},
		{forged, "files/ask", "bob", "altered, or not signed"},
		{elsewhere, "files/ask", "alice", "altered, or not signed"},
		{tok + "-TAMPERED", "files/ask", "alice", "altered, or not signed"},
		{"trs1." + payload, "files/ask", "alice", "not a requestState toolrouterd issued"},
		{"backend-state", "files/ask", "alice", "not a requestState toolrouterd issued"},
	} {
		if _, err := h.unwrapState(ctx, c.tok, c.tool, c.client); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("unwrap(%q, %q, %q) = %v, want %q", c.tok, c.tool, c.client, err, c.want)
		}
	}
}
