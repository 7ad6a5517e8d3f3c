package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2/clientcredentials"
)

// oauthMCP is an MCP server protected by the authorization server issuer
// (RFC 9728 metadata at /.well-known/oauth-protected-resource/mcp) whose
// tool whoami checks the JWT of its tools/call request (for the audience
// aud) and answers who it is for.
func oauthMCP(t *testing.T, v *verifier, aud, issuer string) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "whoami", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			claims, err := v.verify(req.GetExtra().Header.Get("Authorization"), aud)
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "token rejected: " + err.Error()}}}, nil
			}
			b, _ := json.Marshal(claims)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: claims}, nil
		})
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{issuer}})
	})
	return srv.URL + "/mcp"
}

// TestOAuthConnect (issue 33, auth mode oauth): through the binary against
// zitadel/oidc's OP (cmd/testas) as the backend's authorization server,
// with a headless Chromium signing the user in on its login and consent
// page. A user with no token gets a connect URL (/route: auth_required;
// /mcp: -32042 URL elicitation); once connected, their calls carry their
// own token, refreshed when it expires (the rotated refresh token is
// stored: a second refresh works); another user never gets it; a deleted
// connection is revoked and asks again; no token is in any log line,
// answer, audit record, metric or the database file.
func TestOAuthConnect(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	public := "http://" + addr
	const clientSecret = "web-secret-Qx7w"
	as := startTestAS(t, "-oauth-client", "tr-web:"+clientSecret, "-redirect-uri", public+"/oauth/callback",
		"-access-lifetime", "3s", "-users", "alice:alice-pw,bob:bob-pw")
	issuer := as.URL()
	v := &verifier{issuer: issuer, jwks: issuer + "/keys"}
	gh := oauthMCP(t, v, "tr-web", issuer)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	vaultKey := base64.StdEncoding.EncodeToString(key)
	db := filepath.Join(t.TempDir(), "tr.db")
	reg := `mcp_servers:
  - {name: gh, url: "` + gh + `", auth: {mode: oauth, client_id_env: GH_CLIENT_ID, client_secret_env: GH_CLIENT_SECRET, scopes: [openid, offline_access]}}
clients:
  - {name: app, key_env: APP_KEY, tools: ["*"], may_assert_user: true}
  - {name: auditor, key_env: AUDITOR_KEY, admin: true}
`
	rt, _ := startRouter(t, reg, "TOOLROUTER_ADDR="+addr, "TOOLROUTER_PUBLIC_URL="+public, "TOOLROUTER_STORE=sqlite://"+db,
		"TOOLROUTER_TOKEN_KEYS=k1:"+vaultKey, "GH_CLIENT_ID=tr-web", "GH_CLIENT_SECRET="+clientSecret,
		"APP_KEY=app-key", "AUDITOR_KEY=auditor-key")
	var bodies []string
	as2 := func(user string) []string {
		return []string{"Authorization", "Bearer app-key", "X-Toolrouter-User", user}
	}
	route := func(user string) map[string]any {
		t.Helper()
		r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p-" + user, "tool_call": map[string]any{"name": "gh/whoami", "arguments": "{}"}}, as2(user)...)
		bodies = append(bodies, string(r.Body))
		if r.Status != 200 {
			t.Fatalf("route as %s: %d %s", user, r.Status, r.Body)
		}
		return r.JSON(t)
	}
	connectURL := func(res map[string]any) string {
		t.Helper()
		u, _ := res["connect_url"].(string)
		if res["status"] != "auth_required" || res["error_category"] != "auth" || !strings.HasPrefix(u, public+"/connect/") {
			t.Fatalf("want auth_required with a connect URL, got %v", res)
		}
		return u
	}
	whoami := func(res map[string]any) map[string]any {
		t.Helper()
		out, _ := res["output"].(map[string]any)
		if res["success"] != true || out == nil {
			t.Fatalf("call failed: %v", res)
		}
		return out
	}

	// Alice has no token: a connect URL, which Chromium opens; she signs in
	// and allows on the authorization server's page.
	aliceURL := connectURL(route("alice"))
	ctx := browser(t)
	in(t, ctx, "sign in and allow at the authorization server",
		chromedp.Navigate(aliceURL),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "alice"),
		chromedp.SendKeys(chromedp.ID("password"), "alice-pw"),
		chromedp.Click(chromedp.ID("consent")),
		chromedp.Click(chromedp.ID("allow")),
		chromedp.WaitVisible(chromedp.ID("result")))
	if got := text(t, ctx, "#result"); got != "Connected" {
		t.Fatalf("the callback page says %q", got)
	}

	first := whoami(route("alice"))
	if first["sub"] != "alice" {
		t.Fatalf("the backend saw %v, want alice", first)
	}

	// Bob is asked to connect (his own link), never given Alice's token.
	bobRes := route("bob")
	if bobURL := connectURL(bobRes); bobURL == aliceURL {
		t.Fatal("bob got alice's connect URL")
	}
	// Through /mcp, a client that declared URL elicitation gets -32042.
	init := mcpPost(t, rt.URL(), "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"url":{}}},"clientInfo":{"name":"e2e","version":"1"}}}`, as2("bob")...)
	sess := init.Header.Get("Mcp-Session-Id")
	if sess == "" {
		t.Fatalf("initialize: %d %s", init.Status, init.Body)
	}
	mcpPost(t, rt.URL(), sess, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, append([]string{"Mcp-Protocol-Version", "2025-11-25"}, as2("bob")...)...)
	r := mcpPost(t, rt.URL(), sess, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gh/whoami","arguments":{}}}`, append([]string{"Mcp-Protocol-Version", "2025-11-25"}, as2("bob")...)...)
	bodies = append(bodies, string(r.Body))
	_, code, _ := r.rpc(t)
	if code != -32042 || !strings.Contains(string(r.Body), `"mode":"url"`) || !strings.Contains(string(r.Body), public+"/connect/") {
		t.Fatalf("bob through /mcp: %s", r.Body)
	}
	if list := do(t, "GET", rt.URL()+"/connections", nil, as2("bob")...); list.Status != 200 || strings.Contains(string(list.Body), "gh") {
		t.Fatalf("bob's connections: %d %s", list.Status, list.Body)
	}
	list := do(t, "GET", rt.URL()+"/connections", nil, as2("alice")...)
	bodies = append(bodies, string(list.Body))
	if list.Status != 200 || !strings.Contains(string(list.Body), `"backend":"gh"`) {
		t.Fatalf("alice's connections: %d %s", list.Status, list.Body)
	}

	// The 3 s access token expires: the refresh token is used, and the
	// rotated one stored (the server accepts each refresh token once, so
	// the second refresh proves it).
	jti := first["jti"]
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for refreshes := 0; refreshes < 2; {
		deadline := time.Now().Add(15 * time.Second)
		for {
			out := whoami(route("alice"))
			if out["sub"] != "alice" {
				t.Fatalf("the backend saw %v, want alice", out)
			}
			if out["jti"] != jti {
				jti = out["jti"]
				refreshes++
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the 3 s token %v was still sent after 15 s", jti)
			}
			<-tick.C
		}
	}

	// Disconnect: revoked at the server (204: it accepted the revocation),
	// and the next call asks again.
	del := do(t, "DELETE", rt.URL()+"/connections/gh", nil, as2("alice")...)
	if del.Status != http.StatusNoContent {
		t.Fatalf("DELETE /connections/gh: %d %s", del.Status, del.Body)
	}
	if again := connectURL(route("alice")); again == aliceURL {
		t.Fatal("the used connect URL was handed out again")
	}
	if del := do(t, "DELETE", rt.URL()+"/connections/gh", nil, as2("alice")...); del.Status != http.StatusNotFound {
		t.Fatalf("second DELETE: %d %s", del.Status, del.Body)
	}

	// No token anywhere: logs, answers, audit, metrics, the database file.
	m := do(t, "GET", rt.URL()+"/metrics", nil, "Authorization", "Bearer auditor-key")
	a := do(t, "GET", rt.URL()+"/audit?limit=1000", nil, "Authorization", "Bearer auditor-key")
	if !strings.Contains(string(a.Body), `"credential":{"mode":"oauth","sub":"alice","act":"app","token_id":"sha256:`) {
		t.Errorf("audit of alice's oauth call: %s", a.Body)
	}
	dbBytes, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(db + "-wal")
	secrets := append(v.tokens(), clientSecret, vaultKey)
	if len(secrets) < 5 {
		t.Fatalf("only %d tokens seen", len(secrets))
	}
	noSecretIn(t, secrets, map[string]string{"log": rt.Output(), "metrics": string(m.Body), "audit": string(a.Body),
		"answers": strings.Join(bodies, "\n"), "database": string(dbBytes) + string(wal)})
}

// TestOAuthHeldCallKeepsItsUser (issue 33 item 2): a token_exchange call
// held for approval runs, once an approver (another JWT user) approves it,
// for its caller: the caller's JWT was kept sealed in the token vault, so
// the exchange is the caller's, never the approver's; the approval names
// the user.
func TestOAuthHeldCallKeepsItsUser(t *testing.T) {
	t.Parallel()
	as := startTestAS(t, "-audiences", "http://files", "-client", "toolrouterd:tr-secret-Hk2p")
	issuer := as.URL()
	v := &verifier{issuer: issuer, jwks: issuer + "/keys"}
	files := exchangeTool(t, v, "http://files")
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	reg := `tools:
  - {name: files/delete, endpoint: "` + files + `", approval: required, auth: {mode: token_exchange, token_url: "` + issuer + `/oauth/token", client_id_env: TR_CLIENT_ID, client_secret_env: TR_CLIENT_SECRET, audience: "http://files"}}
clients:
  - {name: alice, jwt_subject: alice, tools: ["*"]}
  - {name: bob, jwt_subject: bob, tools: ["*"], approver: true}
`
	rt, _ := startRouter(t, reg, "TR_CLIENT_ID=toolrouterd", "TR_CLIENT_SECRET=tr-secret-Hk2p",
		"TOOLROUTER_TOKEN_KEYS=k1:"+base64.StdEncoding.EncodeToString(key),
		"TOOLROUTER_JWT_ISSUER="+issuer, "TOOLROUTER_JWT_JWKS_URL="+issuer+"/keys", "TOOLROUTER_JWT_AUDIENCE=toolrouterd")
	token := func(user, secret string) []string {
		cc := clientcredentials.Config{ClientID: user, ClientSecret: secret, TokenURL: issuer + "/oauth/token"}
		tok, err := cc.Token(context.Background())
		if err != nil {
			t.Fatalf("%s's token: %v", user, err)
		}
		return []string{"Authorization", "Bearer " + tok.AccessToken}
	}
	alice, bob := token("alice", "alice-pw"), token("bob", "bob-pw")
	r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": "files/delete", "arguments": "{}"}}, alice...)
	res := r.JSON(t)
	id, _ := res["approval_id"].(string)
	if r.Status != 202 || res["status"] != "awaiting_approval" || id == "" {
		t.Fatalf("held call: %d %s", r.Status, r.Body)
	}
	if a := do(t, "GET", rt.URL()+"/approvals/"+id, nil, bob...); a.Status != 200 || a.JSON(t)["user"] != "alice" {
		t.Fatalf("approval: %d %s", a.Status, a.Body)
	}
	d := do(t, "POST", rt.URL()+"/approvals/"+id, map[string]any{"decision": "approve"}, bob...)
	if d.Status != 200 {
		t.Fatalf("approve: %d %s", d.Status, d.Body)
	}
	settled, _ := d.JSON(t)["result"].(map[string]any)
	out, _ := settled["output"].(map[string]any)
	if settled["success"] != true || out["sub"] != "alice" {
		t.Fatalf("the approved call: %v; want it made as alice", settled)
	}
	secrets := append([]string{strings.TrimPrefix(alice[1], "Bearer "), strings.TrimPrefix(bob[1], "Bearer ")}, v.tokens()...)
	noSecretIn(t, secrets, map[string]string{"log": rt.Output(), "answer": string(d.Body)})
}
