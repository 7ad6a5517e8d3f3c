package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"
)

// idjagSpanText is every span attribute the collector received, one
// line each, for the search for tokens.
func idjagSpanText(c *collector) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, s := range c.spans {
		for k, v := range s.Attrs {
			fmt.Fprintf(&b, "%s %s=%s\n", s.Name, k, v)
		}
	}
	return b.String()
}

// TestBackendCredentialsIDJAG: auth mode id_jag (MCP Enterprise-Managed
// Authorization) through the binary, against two zitadel/oidc OPs run
// as processes (cmd/testas): the IdP issues ID-JAGs by token exchange,
// the backend's authorization server redeems them (jwt-bearer grant)
// with the IdP as its trusted issuer. Two users through one /mcp
// session each reach the backend with their own access token; a refusal
// at either server is a clean auth failure; a backend that echoes its
// bearer gets it redacted; the span names the mode; no token is in the
// log, the spans, /metrics, the audit trail or an answer.
func TestBackendCredentialsIDJAG(t *testing.T) {
	t.Parallel()
	rasAddr := freeAddr(t)
	rasIssuer := "http://" + rasAddr
	idp := startTestAS(t, "-client", "toolrouterd:tr-idp-secret-7Hq", "-user-claims", "app=portal",
		"-jag-audiences", rasIssuer+"=tr-at-chat")
	ras := startTestAS(t, "-addr", rasAddr, "-client", "tr-at-chat:tr-ras-secret-P2k", "-users", "nobody:x",
		"-trust-idp", idp.URL(), "-resources", "http://chat-mcp/,http://echo/")
	if ras.URL() != rasIssuer {
		t.Fatalf("the backend's AS listens on %s, not %s", ras.URL(), rasIssuer)
	}
	v := &verifier{issuer: rasIssuer, jwks: rasIssuer + "/keys"}
	chat := exchangeMCP(t, v, "http://chat-mcp/")
	// echo answers the bearer token it got, in its output and its error.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusUnauthorized)
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"got": r.Header.Get("Authorization")})
	}))
	t.Cleanup(echo.Close)
	col := startCollector(t)

	idpToken := idp.URL() + "/oauth/token"
	jagAuth := func(audience, resource, backendClientEnv string) string {
		return fmt.Sprintf(`{mode: id_jag, token_url: %q, client_id_env: TR_IDP_ID, client_secret_env: TR_IDP_SECRET,
           audience: %q, resource: %q, scopes: [chat.read],
           backend_token_url: %q, backend_client_id_env: %s, backend_client_secret_env: TR_RAS_SECRET}`,
			idpToken, audience, resource, rasIssuer+"/oauth/token", backendClientEnv)
	}
	reg := fmt.Sprintf(`tools:
  - name: echo/read
    endpoint: %q
    auth: %s
  - name: echo/fail
    endpoint: %q
    auth: %s
  - name: elsewhere/read
    endpoint: %q
    auth: %s
  - name: wrongclient/read
    endpoint: %q
    auth: %s
  - name: asdown/read
    endpoint: %q
    timeout: 2s
    auth: %s
mcp_servers:
  - name: chat
    url: %q
    auth: %s
clients:
  - {name: portal, jwt_subject: portal, tools: ["*"]}
  - {name: auditor, key_env: AUDITOR_KEY, admin: true}
`, echo.URL+"/echo", jagAuth(rasIssuer, "http://echo/", "TR_RAS_ID"),
		echo.URL+"/fail", jagAuth(rasIssuer, "http://echo/", "TR_RAS_ID"),
		echo.URL+"/echo", jagAuth("http://untrusted-as", "http://echo/", "TR_RAS_ID"),
		echo.URL+"/echo", jagAuth(rasIssuer, "http://echo/", "TR_IDP_ID"),
		echo.URL+"/echo", strings.Replace(jagAuth(rasIssuer, "http://echo/", "TR_RAS_ID"), rasIssuer+"/oauth/token", "http://"+closedAddr(t)+"/oauth/token", 1),
		chat+"/mcp", jagAuth(rasIssuer, "http://chat-mcp/", "TR_RAS_ID"))
	rt, _ := startRouter(t, reg, append(col.env(), "TOOLROUTER_TRACE_CONTENT=true",
		"TR_IDP_ID=toolrouterd", "TR_IDP_SECRET=tr-idp-secret-7Hq", "TR_RAS_ID=tr-at-chat", "TR_RAS_SECRET=tr-ras-secret-P2k",
		"AUDITOR_KEY=auditor-key",
		"TOOLROUTER_JWT_ISSUER="+idp.URL(), "TOOLROUTER_JWT_JWKS_URL="+idp.URL()+"/keys", "TOOLROUTER_JWT_AUDIENCE=toolrouterd",
		"TOOLROUTER_JWT_SUBJECT_CLAIM=app")...)

	userToken := func(user, secret string) string {
		cc := clientcredentials.Config{ClientID: user, ClientSecret: secret, TokenURL: idpToken}
		tok, err := cc.Token(context.Background())
		if err != nil {
			t.Fatalf("%s's token: %v", user, err)
		}
		return tok.AccessToken
	}
	alice, bob := userToken("alice", "alice-pw"), userToken("bob", "bob-pw")
	as2 := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	var bodies []string

	const trace = "5bf92f3577b34da6a3ce929d0e0e4737"
	var first = map[string]string{}
	upstream := map[string]any{} // each user's upstream session at the MCP backend
	t.Run("two users through one /mcp session", func(t *testing.T) {
		sess := mcpSession(t, rt.URL(), "2025-11-25", as2(alice)...)
		for _, user := range []struct{ name, tok string }{{"alice", alice}, {"bob", bob}, {"alice", alice}} {
			r := mcpPost(t, rt.URL(), sess, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chat/whoami","arguments":{}}}`, as2(user.tok)...)
			bodies = append(bodies, string(r.Body))
			res, code, msg := r.rpc(t)
			sc, _ := res["structuredContent"].(map[string]any)
			if code != 0 || res["isError"] == true || sc == nil {
				t.Fatalf("%s: %v %d %s", user.name, res, code, msg)
			}
			// The backend's AS issued it (the verifier checked iss and
			// signature) for this user, this backend and toolrouterd's
			// client there.
			if sc["sub"] != user.name || !slices.Contains(anyStrings(sc["aud"]), "http://chat-mcp/") || sc["client_id"] != "tr-at-chat" {
				t.Errorf("%s: the backend saw %v", user.name, sc)
			}
			jti, _ := sc["jti"].(string)
			if prev, ok := first[user.name]; ok && prev != jti {
				t.Errorf("%s's token was not kept: %s then %s", user.name, prev, jti)
			}
			first[user.name] = jti
			if prev, ok := upstream[user.name]; ok && prev != sc["session"] {
				t.Errorf("%s's calls came on upstream sessions %v and %v", user.name, prev, sc["session"])
			}
			upstream[user.name] = sc["session"]
		}
		if first["alice"] == first["bob"] {
			t.Errorf("alice and bob got one token %s", first["alice"])
		}
		if upstream["alice"] == upstream["bob"] {
			t.Errorf("alice and bob share the upstream session %v", upstream["alice"])
		}
	})

	t.Run("the audit trail names the user, the client and the token", func(t *testing.T) {
		r := do(t, "GET", rt.URL()+"/audit?tool=chat/whoami&limit=10", nil, "Authorization", "Bearer auditor-key")
		bodies = append(bodies, string(r.Body))
		for _, user := range []string{"alice", "bob"} {
			want := fmt.Sprintf(`"credential":{"mode":"id_jag","sub":%q,"act":"tr-at-chat","token_id":%q}`, user, first[user])
			if !strings.Contains(string(r.Body), want) {
				t.Errorf("audit lacks %s:\n%s", want, r.Body)
			}
		}
	})

	route := func(name string, header ...string) map[string]any {
		t.Helper()
		r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p-" + name, "tool_call": map[string]any{"name": name, "arguments": "{}"}}, header...)
		bodies = append(bodies, string(r.Body))
		if r.Status != 200 {
			t.Fatalf("route %s: %d %s", name, r.Status, r.Body)
		}
		return r.JSON(t)
	}

	t.Run("a backend that echoes its token gets it redacted; the span names the mode", func(t *testing.T) {
		res := route("echo/read", append(as2(alice), "Traceparent", traceparent(trace, callerSpan))...)
		out, _ := res["output"].(map[string]any)
		if got, _ := out["got"].(string); !strings.Contains(got, "[redacted]") || strings.Contains(got, "eyJ") {
			t.Errorf("echoed token: %v", res)
		}
		wantAttrs(t, one(t, col.wait(t, trace, "execute_tool echo/read"), "execute_tool echo/read"),
			map[string]string{"toolrouter.credential.mode": "id_jag"})
		res = route("echo/fail", as2(alice)...)
		if e, _ := res["error"].(string); res["success"] == true || !strings.Contains(e, "[redacted]") || strings.Contains(e, "eyJ") {
			t.Errorf("echoed token in an error: %v", res)
		}
	})

	t.Run("refusals at either server are clean auth failures", func(t *testing.T) {
		res := route("elsewhere/read", as2(alice)...)
		if e, _ := res["error"].(string); res["error_category"] != "auth" || !strings.Contains(e, "backend elsewhere/read") || !strings.Contains(e, `"invalid_target"`) || !strings.Contains(e, "ID-JAG request") {
			t.Errorf("IdP refused: %v", res)
		}
		res = route("wrongclient/read", as2(alice)...)
		if e, _ := res["error"].(string); res["error_category"] != "auth" || !strings.Contains(e, "ID-JAG redemption") || !strings.Contains(e, `"invalid_client"`) {
			t.Errorf("backend's AS refused: %v", res)
		}
		// The backend's authorization server down: a clean auth failure
		// within the call's timeout.
		start := time.Now()
		res = route("asdown/read", as2(alice)...)
		if e, _ := res["error"].(string); res["error_category"] != "auth" || !strings.Contains(e, "ID-JAG redemption") || !strings.Contains(e, "unreachable") || time.Since(start) > 2*time.Second {
			t.Errorf("backend's AS down: %v after %s", res, time.Since(start))
		}
	})

	t.Run("no token anywhere", func(t *testing.T) {
		m := do(t, "GET", rt.URL()+"/metrics", nil, "Authorization", "Bearer auditor-key")
		a := do(t, "GET", rt.URL()+"/audit?limit=1000", nil, "Authorization", "Bearer auditor-key")
		// A last traced call: once its span is exported, so are those of
		// every call before it (spans are exported in the order they end).
		const last = "7bf92f3577b34da6a3ce929d0e0e4739"
		route("echo/read", append(as2(bob), "Traceparent", traceparent(last, callerSpan))...)
		col.wait(t, last, "execute_tool echo/read")
		secrets := append(v.tokens(), alice, bob, "tr-idp-secret-7Hq", "tr-ras-secret-P2k")
		if len(secrets) < 5 {
			t.Fatalf("only %d tokens seen", len(secrets))
		}
		places := map[string]string{"log": rt.Output(), "metrics": string(m.Body), "audit": string(a.Body),
			"answers": strings.Join(bodies, "\n"), "spans": idjagSpanText(col)}
		for where, text := range places {
			for _, s := range secrets {
				if strings.Contains(text, s) || strings.Contains(text, url.QueryEscape(s)) {
					t.Errorf("a token (%s…) is in the %s", s[:8], where)
				}
			}
		}
	})
}
