package registry_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func TestAuthBlocks(t *testing.T) {
	t.Parallel()
	src := head + `    auth: {mode: per_client}
mcp_servers:
  - name: gh
    url: http://gh.example/mcp
    auth: {mode: token_exchange, token_url: http://as.example/token, client_id_env: CID, client_secret_env: CSEC,
           audience: http://gh.example, resource: http://gh.example/mcp, scopes: [repo.read], actor: true}
clients:
  - {name: support, key_env: SUPPORT_KEY, may_assert_user: true, credentials: {t: {token_env: SUPPORT_T}}}
`
	reg, err := registry.Parse("r.yaml", []byte(src), env("CID", "toolrouterd", "CSEC", "s3cret", "SUPPORT_KEY", "k", "SUPPORT_T", "tok-t"))
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := reg.Lookup("t")
	if tool.Auth == nil || tool.Auth.Mode != toolrouter.AuthPerClient || tool.Auth.HeaderName() != "Authorization" {
		t.Fatalf("tool auth = %+v", tool.Auth)
	}
	a := reg.MCPServers()[0].Auth
	if a == nil || a.ClientID != "toolrouterd" || a.ClientSecret.Reveal() != "s3cret" || a.Audience != "http://gh.example" || !a.Actor || a.ScopeKey() != "repo.read" {
		t.Fatalf("server auth = %+v", a)
	}
	if s := fmt.Sprintf("%v %+v %#v", a, a, a.ClientSecret); strings.Contains(s, "s3cret") {
		t.Fatalf("a secret prints: %s", s)
	}
	c := reg.Clients()[0]
	if !c.MayAssertUser || c.Credentials["t"].Reveal() != "tok-t" {
		t.Fatalf("client = %+v", c)
	}
}

func TestOAuthBlock(t *testing.T) {
	t.Parallel()
	src := head + `    auth: {mode: oauth}
mcp_servers:
  - name: gh
    url: http://gh.example/mcp
    auth: {mode: oauth, client_id_env: CID, client_secret_env: CSEC, scopes: [repo], authorization_server: http://as.example}
`
	reg, err := registry.Parse("r.yaml", []byte(src), env("CID", "toolrouterd", "CSEC", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := reg.Lookup("t")
	if tool.Auth == nil || tool.Auth.Mode != toolrouter.AuthOAuth || tool.Auth.Resource != tool.Endpoint || tool.Auth.ClientID != "" {
		t.Fatalf("tool auth = %+v", tool.Auth)
	}
	a := reg.MCPServers()[0].Auth
	if a.Resource != "http://gh.example/mcp" || a.ClientID != "toolrouterd" || a.ClientSecret.Reveal() != "s3cret" || a.AuthorizationServer != "http://as.example" || a.ScopeKey() != "repo" {
		t.Fatalf("server auth = %+v", a)
	}
}

func TestAuthProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, src, want string }{
		{"unknown mode", head + "    auth: {mode: oidc}\n", `auth.mode: must be static, per_client, token_exchange or oauth (id_jag is not built yet)`},
		{"exchange key on oauth", head + "    auth: {mode: oauth, token_url: http://as/t}\n", `auth.token_url: not for mode oauth`},
		{"oauth secret without id", head + "    auth: {mode: oauth, client_secret_env: CID}\n", `client_id_env`},
		{"oauth metadata not a URL", head + "    auth: {mode: oauth, resource_metadata: x/y}\n", `auth.resource_metadata: must be an absolute http or https URL with a host`},
		{"oauth key on per_client", head + "    auth: {mode: per_client, authorization_server: http://as}\n", `auth.authorization_server: only for mode oauth`},
		{"exchange without its keys", head + "    auth: {mode: token_exchange}\n", `token_exchange needs token_url, client_id_env, client_secret_env and audience`},
		{"exchange key on per_client", head + "    auth: {mode: per_client, audience: x}\n", `auth.audience: only for mode token_exchange`},
		{"secret unset", head + "    auth: {mode: token_exchange, token_url: http://as/t, client_id_env: CID, client_secret_env: NOPE, audience: a}\n", `auth.client_secret_env: environment variable NOPE is unset or empty`},
		{"token_url not a URL", head + "    auth: {mode: token_exchange, token_url: as/t, client_id_env: CID, client_secret_env: CID, audience: a}\n", `auth.token_url: must be an absolute http or https URL with a host`},
		{"credential for no backend", head + "clients:\n  - {name: c, key_env: CID, credentials: {nope: {token_env: CID}}}\n", `credentials.nope: no tool or MCP server named "nope"`},
		{"credential for a static backend", head + "clients:\n  - {name: c, key_env: CID, credentials: {t: {token_env: CID}}}\n", `"t" has auth mode static, not per_client`},
		{"stdio server", "mcp_servers:\n  - {name: s, command: [x], auth: {mode: per_client}}\n", `mode per_client needs an HTTP server (url)`},
	} {
		_, err := registry.Parse("r.yaml", []byte(tc.src), env("CID", "x"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}
