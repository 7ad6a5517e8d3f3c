package credential_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/credential"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// connections is a credential.OAuth with one connected user.
type connections struct{ user, token string }

type needsConnect struct{ url string }

func (n needsConnect) Error() string      { return "backend gh: not connected for this user yet" }
func (n needsConnect) ConnectURL() string { return n.url }

func (c connections) CallToken(_ context.Context, client, user, backend string, _ *toolrouter.BackendAuth) (toolrouter.Secret, string, error) {
	switch {
	case user == c.user:
		return toolrouter.NewSecret(c.token), "sha256:1", nil
	case user == "down":
		return toolrouter.Secret{}, "", errors.New("discovery: no protected resource metadata")
	}
	return toolrouter.Secret{}, "", needsConnect{"http://tr/connect/" + client + "-" + user}
}

// TestOAuthSendsTheUsersOwnToken: a connected user's call carries their
// token; another user's call is not made and carries the connect URL; a
// call without a user is refused.
func TestOAuthSendsTheUsersOwnToken(t *testing.T) {
	b := &backend{}
	ex := (&credential.Decorator{OAuth: connections{"alice", "tok-alice-123456"}}).Wrap(b)
	tool := &toolrouter.Tool{Name: "gh/issues", Auth: &toolrouter.BackendAuth{Mode: toolrouter.AuthOAuth}}
	as := func(user string) context.Context {
		return access.NewUserContext(clientCtx(t, "app", nil), &access.User{Subject: user})
	}
	out := ex.Call(as("alice"), toolrouter.ExecRequest{Tool: tool})
	if !out.Success() || len(b.got) != 1 || b.got[0].Value.Reveal() != "Bearer tok-alice-123456" {
		t.Fatalf("alice: out %+v, sent %+v", out, b.got)
	}
	if c := out.Credential; c == nil || c.Mode != "oauth" || c.Subject != "alice" || c.Actor != "app" || c.TokenID != "sha256:1" {
		t.Fatalf("credential use %+v", out.Credential)
	}
	out = ex.Call(as("bob"), toolrouter.ExecRequest{Tool: tool})
	if out.Category != toolrouter.CategoryAuth || out.ConnectURL != "http://tr/connect/app-bob" || len(b.got) != 1 {
		t.Fatalf("bob: out %+v, calls %d", out, len(b.got))
	}
	out = ex.Call(as("down"), toolrouter.ExecRequest{Tool: tool})
	if out.Category != toolrouter.CategoryAuth || out.ConnectURL != "" || !strings.HasPrefix(out.Err, "backend gh/issues: discovery") {
		t.Fatalf("discovery failure: %+v", out)
	}
	out = ex.Call(clientCtx(t, "app", nil), toolrouter.ExecRequest{Tool: tool})
	if out.Category != toolrouter.CategoryAuth || !strings.Contains(out.Err, "needs the user") || len(b.got) != 1 {
		t.Fatalf("no user: %+v", out)
	}
}

// TestLaterCallWithoutItsTokenSaysWhy: an approved call or resumed run
// whose caller's JWT expired (or was not kept) fails auth naming the
// user and why, not as if the caller had no JWT.
func TestLaterCallWithoutItsTokenSaysWhy(t *testing.T) {
	b := &backend{}
	ex := (&credential.Decorator{Exchanger: &credential.Exchanger{}}).Wrap(b)
	tool := &toolrouter.Tool{Name: "files/read", Auth: &toolrouter.BackendAuth{Mode: toolrouter.AuthTokenExchange, TokenURL: "http://as/token"}}
	ctx := access.NewUserContext(context.Background(), &access.User{Subject: "alice", Later: true})
	out := ex.Call(ctx, toolrouter.ExecRequest{Tool: tool})
	if out.Category != toolrouter.CategoryAuth || !strings.Contains(out.Err, "user alice's token expired") || len(b.got) != 0 {
		t.Fatalf("out %+v", out)
	}
}

// servers is a credential.Servers of MCP servers' auth blocks.
type servers map[string]*toolrouter.BackendAuth

func (s servers) ServerAuth(name string) *toolrouter.BackendAuth { return s[name] }

// TestForServer: a request to an MCP server that is not a tool call (a
// read) gets the credential a call of its tools would carry, for the
// user in ctx; none for a static server; a user who must connect gets an
// error with the connect URL.
func TestForServer(t *testing.T) {
	d := &credential.Decorator{OAuth: connections{"alice", "tok-alice-123456"},
		Registry: func() credential.Servers { return servers{"gh": {Mode: toolrouter.AuthOAuth}} }}
	as := func(user string) context.Context {
		return access.NewUserContext(clientCtx(t, "app", nil), &access.User{Subject: user})
	}
	cred, err := d.ForServer(as("alice"), "gh")
	if err != nil || cred == nil || cred.Value.Reveal() != "Bearer tok-alice-123456" || cred.Use.Subject != "alice" {
		t.Fatalf("alice: %+v %v", cred, err)
	}
	_, err = d.ForServer(as("bob"), "gh")
	var connect interface{ ConnectURL() string }
	if !errors.As(err, &connect) || connect.ConnectURL() != "http://tr/connect/app-bob" {
		t.Fatalf("bob: %v", err)
	}
	if cred, err := d.ForServer(as("alice"), "static"); cred != nil || err != nil {
		t.Fatalf("a static server: %+v %v", cred, err)
	}
}
