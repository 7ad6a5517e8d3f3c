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
    auth: {mode: token_exchange, token_url: https://as.example/token, client_id_env: CID, client_secret_env: CSEC,
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
	// id_jag: both authorization servers' endpoints and credentials;
	// a loopback token_url may be plain http.
	jag, err := registry.Parse("r.yaml", []byte(`tools:
  - name: t
    endpoint: http://127.0.0.1:9/t
    auth: {mode: id_jag, token_url: http://127.0.0.1:8/token, client_id_env: CID, client_secret_env: CSEC,
           audience: https://as.example, resource: https://mcp.example/mcp, scopes: [chat.read],
           backend_token_url: https://as.example/token, backend_client_id_env: BCID, backend_client_secret_env: BCSEC}
`), env("CID", "toolrouterd", "CSEC", "s3cret", "BCID", "tr-at-as", "BCSEC", "b-s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	jt, _ := jag.Lookup("t")
	if j := jt.Auth; j == nil || j.Mode != toolrouter.AuthIDJAG || j.TokenURL != "http://127.0.0.1:8/token" || j.BackendTokenURL != "https://as.example/token" ||
		j.BackendClientID != "tr-at-as" || j.BackendClientSecret.Reveal() != "b-s3cret" || j.Resource != "https://mcp.example/mcp" {
		t.Fatalf("id_jag auth = %+v", j)
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
		{"unknown mode", head + "    auth: {mode: oidc}\n", `auth.mode: must be static, per_client, token_exchange, id_jag or oauth`},
		{"exchange key on oauth", head + "    auth: {mode: oauth, token_url: http://as/t}\n", `auth.token_url: only for mode token_exchange or id_jag`},
		{"oauth secret without id", head + "    auth: {mode: oauth, client_secret_env: CID}\n", `client_id_env`},
		{"oauth metadata not a URL", head + "    auth: {mode: oauth, resource_metadata: x/y}\n", `auth.resource_metadata: must be an absolute http or https URL with a host`},
		{"oauth key on per_client", head + "    auth: {mode: per_client, authorization_server: http://as}\n", `auth.authorization_server: only for mode oauth`},
		{"exchange without its keys", head + "    auth: {mode: token_exchange}\n", `token_exchange needs token_url, client_id_env, client_secret_env and audience`},
		{"exchange key on per_client", head + "    auth: {mode: per_client, audience: x}\n", `auth.audience: only for mode token_exchange`},
		{"secret unset", head + "    auth: {mode: token_exchange, token_url: http://as/t, client_id_env: CID, client_secret_env: NOPE, audience: a}\n", `auth.client_secret_env: environment variable NOPE is unset or empty`},
		{"token_url not a URL", head + "    auth: {mode: token_exchange, token_url: as/t, client_id_env: CID, client_secret_env: CID, audience: a}\n", `auth.token_url: must be an absolute http or https URL with a host`},
		{"credential for no backend", head + "clients:\n  - {name: c, key_env: CID, credentials: {nope: {token_env: CID}}}\n", `credentials.nope: no tool or MCP server named "nope"`},
		{"credential for a static backend", head + "clients:\n  - {name: c, key_env: CID, credentials: {t: {token_env: CID}}}\n", `"t" has auth mode static, not per_client`},
		{"token_url plain http to a remote host", head + "    auth: {mode: token_exchange, token_url: http://as.example/t, client_id_env: CID, client_secret_env: CID, audience: a}\n", `auth.token_url: must be https`},
		{"empty scopes", head + "    auth: {mode: token_exchange, token_url: https://as/t, client_id_env: CID, client_secret_env: CID, audience: a, scopes: []}\n", `auth.scopes: must have at least 1 item(s)`},
		{"empty scope", head + "    auth: {mode: token_exchange, token_url: https://as/t, client_id_env: CID, client_secret_env: CID, audience: a, scopes: [\"\"]}\n", `auth.scopes[0]: must be a scope token`},
		{"id_jag without its keys", head + "    auth: {mode: id_jag, token_url: https://idp/t, client_id_env: CID, client_secret_env: CID, audience: https://as}\n", `id_jag needs token_url, client_id_env, client_secret_env, audience, resource, backend_token_url, backend_client_id_env and backend_client_secret_env`},
		{"id_jag backend_token_url plain http", head + "    auth: {mode: id_jag, token_url: https://idp/t, client_id_env: CID, client_secret_env: CID, audience: https://as, resource: https://mcp, backend_token_url: http://as/t, backend_client_id_env: CID, backend_client_secret_env: CID}\n", `auth.backend_token_url: must be https`},
		{"id_jag with actor", head + "    auth: {mode: id_jag, token_url: https://idp/t, client_id_env: CID, client_secret_env: CID, audience: https://as, resource: https://mcp, backend_token_url: https://as/t, backend_client_id_env: CID, backend_client_secret_env: CID, actor: true}\n", `auth.actor: only for mode token_exchange`},
		{"id_jag key on token_exchange", head + "    auth: {mode: token_exchange, token_url: https://as/t, client_id_env: CID, client_secret_env: CID, audience: a, backend_token_url: https://as/t}\n", `auth.backend_token_url: only for mode id_jag`},
		{"id_jag secret unset", head + "    auth: {mode: id_jag, token_url: https://idp/t, client_id_env: CID, client_secret_env: CID, audience: https://as, resource: https://mcp, backend_token_url: https://as/t, backend_client_id_env: CID, backend_client_secret_env: NOPE}\n", `auth.backend_client_secret_env: environment variable NOPE is unset or empty`},
		{"stdio server", "mcp_servers:\n  - {name: s, command: [x], auth: {mode: per_client}}\n", `mode per_client needs an HTTP server (url)`},
	} {
		_, err := registry.Parse("r.yaml", []byte(tc.src), env("CID", "x"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}
