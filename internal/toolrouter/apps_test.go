package toolrouter_test

import (
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestGatewayUIURI: two servers' equal ui:// URIs get distinct gateway
// names that keep the scheme and lead back to their server.
func TestGatewayUIURI(t *testing.T) {
	a, b := toolrouter.GatewayUIURI("a", "ui://get-time/mcp-app.html"), toolrouter.GatewayUIURI("b", "ui://get-time/mcp-app.html")
	if a == b || a != "ui://a/get-time/mcp-app.html" {
		t.Fatalf("gateway names %q %q", a, b)
	}
	server, uri, ok := toolrouter.ParseGatewayUIURI(b)
	if !ok || server != "b" || uri != "ui://get-time/mcp-app.html" {
		t.Errorf("parse %q: %q %q %v", b, server, uri, ok)
	}
	for _, bad := range []string{"ui://a", "ui:///x", "skill://a/b", "ui://a/"} {
		if _, _, ok := toolrouter.ParseGatewayUIURI(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestModelVisible: only a visibility without "model" hides a tool from
// models.
func TestModelVisible(t *testing.T) {
	for _, c := range []struct {
		ui   *toolrouter.AppUI
		want bool
	}{
		{nil, true},
		{&toolrouter.AppUI{ResourceURI: "ui://x"}, true},
		{&toolrouter.AppUI{Visibility: []string{"model", "app"}}, true},
		{&toolrouter.AppUI{Visibility: []string{"app"}}, false},
		{&toolrouter.AppUI{Visibility: []string{}}, false},
	} {
		if got := (&toolrouter.Tool{UI: c.ui}).ModelVisible(); got != c.want {
			t.Errorf("%+v: %v", c.ui, got)
		}
	}
}

// TestGatewaySkillURI: the server's name is the skill path's first
// segment, so the last is still the skill's name.
func TestGatewaySkillURI(t *testing.T) {
	u := toolrouter.GatewaySkillURI("sk", "skill://acme/refunds/SKILL.md")
	if u != "skill://sk/acme/refunds/SKILL.md" {
		t.Fatalf("%q", u)
	}
	if s, b, ok := toolrouter.ParseGatewaySkillURI(u); !ok || s != "sk" || b != "skill://acme/refunds/SKILL.md" {
		t.Errorf("parse: %q %q %v", s, b, ok)
	}
	if _, _, ok := toolrouter.ParseGatewaySkillURI("ui://sk/x"); ok {
		t.Error("a ui:// URI parsed as a skill")
	}
	if (&toolrouter.Tool{Kind: toolrouter.KindSkill}).ModelVisible() {
		t.Error("a skill is offered to models")
	}
}
