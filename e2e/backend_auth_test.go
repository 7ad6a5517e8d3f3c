package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2/clientcredentials"
)

var (
	testasOnce sync.Once
	testasErr  error
)

var testasListening = regexp.MustCompile(`testas listening on http://(\S+)\n`)

// startTestAS builds (once) and starts cmd/testas, the zitadel/oidc
// authorization server of the backend credential tests.
func startTestAS(t *testing.T, args ...string) *proc {
	t.Helper()
	testasOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "testas"), "../cmd/testas").CombinedOutput()
		if err != nil {
			testasErr = fmt.Errorf("build testas: %v\n%s", err, out)
		}
	})
	if testasErr != nil {
		t.Fatal(testasErr)
	}
	p := start(t, "testas", nil, args...)
	p.addr = p.waitOutput(t, "listening line", submatch(testasListening))
	return p
}

// verifier checks the tokens a backend receives: signed by the AS's key
// set, for the backend's audience, and it remembers every raw token (for
// the search of the outputs).
type verifier struct {
	issuer, jwks string
	mu           sync.Mutex
	keys         *jose.JSONWebKeySet
	seen         []string
}

func (v *verifier) verify(authz, audience string) (map[string]any, error) {
	raw, ok := strings.CutPrefix(authz, "Bearer ")
	if !ok {
		return nil, fmt.Errorf("no bearer token")
	}
	v.mu.Lock()
	v.seen = append(v.seen, raw)
	keys := v.keys
	v.mu.Unlock()
	if keys == nil {
		resp, err := http.Get(v.jwks)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var set jose.JSONWebKeySet
		if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
			return nil, err
		}
		v.mu.Lock()
		v.keys, keys = &set, &set
		v.mu.Unlock()
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return nil, err
	}
	var std jwt.Claims
	all := map[string]any{}
	if err := tok.Claims(keys, &std, &all); err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	// A 2 s leeway: JWT times are whole seconds, so a token may end up
	// to a second before its expires_in says (toolrouterd stops using a
	// 2 s token 0.2 s before the latter).
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: v.issuer, AnyAudience: jwt.Audience{audience}, Time: time.Now()}, 2*time.Second); err != nil {
		return nil, err
	}
	return map[string]any{"sub": std.Subject, "jti": std.ID, "aud": []string(std.Audience), "act": all["act"]}, nil
}

func (v *verifier) tokens() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.seen)
}

// exchangeTool is an HTTP tool that checks its token and answers who it is
// for.
func exchangeTool(t *testing.T, v *verifier, audience string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		claims, err := v.verify(r.Header.Get("Authorization"), audience)
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "token rejected: " + err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(claims)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// exchangeMCP is an MCP server whose tool whoami checks the token of its
// tools/call request and answers who it is for; the session's other
// requests carry none.
func exchangeMCP(t *testing.T, v *verifier, audience string) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "whoami", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			claims, err := v.verify(req.GetExtra().Header.Get("Authorization"), audience)
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "token rejected: " + err.Error()}}}, nil
			}
			b, _ := json.Marshal(claims)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: claims}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// blackhole accepts connections and never answers.
func blackhole(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// TestBackendCredentials (issue 33, first slice): per-user credentials to
// backends, through the binary, against zitadel/oidc's OP as the
// authorization server (cmd/testas).
func TestBackendCredentials(t *testing.T) {
	t.Parallel()
	as := startTestAS(t, "-audiences", "http://files,http://gh,http://short", "-short-audience", "http://short",
		"-short-lifetime", "2s", "-user-claims", "app=portal", "-client", "toolrouterd:tr-secret-Zq81")
	issuer := as.URL()
	v := &verifier{issuer: issuer, jwks: issuer + "/keys"}
	files := exchangeTool(t, v, "http://files")
	short := exchangeTool(t, v, "http://short")
	gh := exchangeMCP(t, v, "http://gh")
	// The per_client backend answers a digest of the key it got.
	crm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.Sum256([]byte(r.Header.Get("X-Api-Key")))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"key_sha256":%q}`, hex.EncodeToString(sum[:]))
	}))
	t.Cleanup(crm.Close)
	hole := blackhole(t)
	down := closedAddr(t)

	xchg := func(tokenURL, audience string) string {
		return fmt.Sprintf("{mode: token_exchange, token_url: %q, client_id_env: TR_CLIENT_ID, client_secret_env: TR_CLIENT_SECRET, audience: %q, actor: true}", tokenURL, audience)
	}
	tokenURL := issuer + "/oauth/token"
	reg := fmt.Sprintf(`tools:
  - {name: files/read, endpoint: %q, auth: %s}
  - {name: short/read, endpoint: %q, auth: %s}
  - {name: denied/read, endpoint: %q, auth: %s}
  - {name: hang/read, endpoint: %q, timeout: 1s, auth: %s}
  - {name: down/read, endpoint: %q, auth: %s}
  - {name: crm/lookup, endpoint: %q, auth: {mode: per_client, header: X-Api-Key}}
mcp_servers:
  - {name: gh, url: %q, auth: %s}
clients:
  - {name: portal, jwt_subject: portal, tools: ["*"]}
  - {name: support, key_env: SUPPORT_KEY, tools: ["*"], may_assert_user: true, credentials: {crm/lookup: {token_env: SUPPORT_CRM_TOKEN}}}
  - {name: batch, key_env: BATCH_KEY, tools: ["*"]}
  - {name: auditor, key_env: AUDITOR_KEY, admin: true}
`, files, xchg(tokenURL, "http://files"), short, xchg(tokenURL, "http://short"), files, xchg(tokenURL, "http://elsewhere"),
		files, xchg("http://"+hole+"/token", "http://files"), files, xchg("http://"+down+"/token", "http://files"),
		crm.URL, gh+"/mcp", xchg(tokenURL, "http://gh"))
	const crmToken = "crm-secret-4Jx9"
	rt, _ := startRouter(t, reg, "TR_CLIENT_ID=toolrouterd", "TR_CLIENT_SECRET=tr-secret-Zq81",
		"SUPPORT_KEY=support-key", "BATCH_KEY=batch-key", "AUDITOR_KEY=auditor-key", "SUPPORT_CRM_TOKEN="+crmToken,
		"TOOLROUTER_JWT_ISSUER="+issuer, "TOOLROUTER_JWT_JWKS_URL="+issuer+"/keys", "TOOLROUTER_JWT_AUDIENCE=toolrouterd",
		"TOOLROUTER_JWT_SUBJECT_CLAIM=app")

	userToken := func(user, secret string) string {
		cc := clientcredentials.Config{ClientID: user, ClientSecret: secret, TokenURL: tokenURL}
		tok, err := cc.Token(context.Background())
		if err != nil {
			t.Fatalf("%s's token: %v", user, err)
		}
		return tok.AccessToken
	}
	alice, bob := userToken("alice", "alice-pw"), userToken("bob", "bob-pw")
	var bodies []string // every answer toolrouterd gave, searched for tokens at the end
	route := func(name string, header ...string) map[string]any {
		t.Helper()
		r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p-" + name, "tool_call": map[string]any{"name": name, "arguments": "{}"}}, header...)
		bodies = append(bodies, string(r.Body))
		if r.Status != 200 {
			t.Fatalf("route %s: %d %s", name, r.Status, r.Body)
		}
		return r.JSON(t)
	}
	output := func(res map[string]any) map[string]any {
		t.Helper()
		out, _ := res["output"].(map[string]any)
		if out == nil {
			t.Fatalf("no output: %v", res)
		}
		return out
	}
	as2 := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	checkFor := func(out map[string]any, user, aud string) {
		t.Helper()
		act, _ := out["act"].(map[string]any)
		if out["sub"] != user || !slices.Contains(anyStrings(out["aud"]), aud) || act["sub"] != "toolrouterd" {
			t.Errorf("backend saw %v; want sub %s, aud %s, act toolrouterd", out, user, aud)
		}
	}

	t.Run("two users through /route", func(t *testing.T) {
		a1 := output(route("files/read", as2(alice)...))
		b1 := output(route("files/read", as2(bob)...))
		checkFor(a1, "alice", "http://files")
		checkFor(b1, "bob", "http://files")
		// The cached token is used again.
		if a2 := output(route("files/read", as2(alice)...)); a2["jti"] != a1["jti"] || a1["jti"] == b1["jti"] {
			t.Errorf("jti: alice %v then %v, bob %v; want alice's cached, bob's his own", a1["jti"], a2["jti"], b1["jti"])
		}
		// The audit record names the user, the actor, the mode and the
		// token's id.
		r := do(t, "GET", rt.URL()+"/audit?tool=files/read&limit=10", nil, "Authorization", "Bearer auditor-key")
		bodies = append(bodies, string(r.Body))
		var page struct {
			Records []struct {
				Credential *struct {
					Mode, Sub, Act string
					TokenID        string `json:"token_id"`
				} `json:"credential"`
			} `json:"records"`
		}
		if err := json.Unmarshal(r.Body, &page); err != nil || len(page.Records) < 3 {
			t.Fatalf("audit: %v %s", err, r.Body)
		}
		subs := map[string]string{}
		for _, rec := range page.Records {
			c := rec.Credential
			if c == nil || c.Mode != "token_exchange" || c.Act != "toolrouterd" {
				t.Fatalf("audit record credential %+v", c)
			}
			subs[c.Sub] = c.TokenID
		}
		if subs["alice"] != a1["jti"] || subs["bob"] != b1["jti"] {
			t.Errorf("audit token ids %v, want alice %v bob %v", subs, a1["jti"], b1["jti"])
		}
	})

	t.Run("two users through one /mcp session", func(t *testing.T) {
		sess := mcpSession(t, rt.URL(), "2025-11-25", as2(alice)...)
		for _, user := range []struct{ name, tok string }{{"alice", alice}, {"bob", bob}, {"alice", alice}} {
			r := mcpPost(t, rt.URL(), sess, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gh/whoami","arguments":{}}}`, as2(user.tok)...)
			bodies = append(bodies, string(r.Body))
			res, code, msg := r.rpc(t)
			sc, _ := res["structuredContent"].(map[string]any)
			if code != 0 || res["isError"] == true || sc == nil {
				t.Fatalf("%s: %v %d %s", user.name, res, code, msg)
			}
			checkFor(sc, user.name, "http://gh")
		}
	})

	t.Run("an expired token is exchanged again", func(t *testing.T) {
		first := output(route("short/read", as2(alice)...))
		checkFor(first, "alice", "http://short")
		deadline := time.Now().Add(15 * time.Second)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			out := output(route("short/read", as2(alice)...))
			if out["jti"] != first["jti"] {
				checkFor(out, "alice", "http://short") // a fresh token the backend accepts
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the 2s token %v was still sent after 15s", first["jti"])
			}
			<-tick.C
		}
	})

	t.Run("refused and unreachable exchanges are clean auth failures", func(t *testing.T) {
		res := route("denied/read", as2(alice)...)
		if res["error_category"] != "auth" || !strings.Contains(res["error"].(string), "backend denied/read") || !strings.Contains(res["error"].(string), `"invalid_target"`) {
			t.Errorf("refused exchange: %v", res)
		}
		start := time.Now()
		res = route("hang/read", as2(alice)...)
		if res["error_category"] != "auth" || !strings.Contains(res["error"].(string), "did not answer in time") || time.Since(start) > 10*time.Second {
			t.Errorf("AS that never answers: %v after %s", res, time.Since(start))
		}
		res = route("down/read", as2(alice)...)
		if res["error_category"] != "auth" || !strings.Contains(res["error"].(string), "unreachable") {
			t.Errorf("AS down: %v", res)
		}
	})

	t.Run("per_client", func(t *testing.T) {
		sum := sha256.Sum256([]byte(crmToken))
		out := output(route("crm/lookup", "Authorization", "Bearer support-key", "X-Toolrouter-User", "carol"))
		if out["key_sha256"] != hex.EncodeToString(sum[:]) {
			t.Errorf("crm got key %v", out)
		}
		// A client without its own credential is refused, naming the
		// backend; the JWT client too.
		for _, auth := range [][]string{{"Authorization", "Bearer batch-key"}, as2(alice)} {
			res := route("crm/lookup", auth...)
			if res["error_category"] != "auth" || !strings.Contains(res["error"].(string), "backend crm/lookup") {
				t.Errorf("no credential: %v", res)
			}
		}
		// Naming a user takes may_assert_user.
		r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": "crm/lookup", "arguments": "{}"}},
			"Authorization", "Bearer batch-key", "X-Toolrouter-User", "carol")
		bodies = append(bodies, string(r.Body))
		if r.Status != 403 || !strings.Contains(string(r.Body), "may_assert_user") {
			t.Errorf("batch naming a user: %d %s", r.Status, r.Body)
		}
		a := do(t, "GET", rt.URL()+"/audit?tool=crm/lookup&outcome=success", nil, "Authorization", "Bearer auditor-key")
		bodies = append(bodies, string(a.Body))
		if !strings.Contains(string(a.Body), `"credential":{"mode":"per_client","sub":"carol","act":"support","token_id":"sha256:`) {
			t.Errorf("audit of the per_client call: %s", a.Body)
		}
	})

	t.Run("no token anywhere", func(t *testing.T) {
		m := do(t, "GET", rt.URL()+"/metrics", nil, "Authorization", "Bearer auditor-key")
		a := do(t, "GET", rt.URL()+"/audit?limit=1000", nil, "Authorization", "Bearer auditor-key")
		secrets := append(v.tokens(), alice, bob, crmToken, "tr-secret-Zq81")
		if len(secrets) < 8 {
			t.Fatalf("only %d tokens seen", len(secrets))
		}
		places := map[string]string{"log": rt.Output(), "metrics": string(m.Body), "audit": string(a.Body), "answers": strings.Join(bodies, "\n")}
		for where, text := range places {
			for _, s := range secrets {
				if strings.Contains(text, s) || strings.Contains(text, url.QueryEscape(s)) {
					t.Errorf("a token (%s…) is in the %s", s[:8], where)
				}
			}
		}
	})
}

func anyStrings(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, s := range x {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
	case string:
		out = append(out, x)
	}
	return out
}

// TestCheckAuthBlocks: toolrouterd check names the field of each problem
// of an auth block and of a client's credentials; an unset secret
// variable is a warning, as for a client's key_env.
func TestCheckAuthBlocks(t *testing.T) {
	file := filepath.Join(t.TempDir(), "registry.yaml")
	src := `tools:
  - {name: a, endpoint: http://x/a, auth: {mode: oauth}}
  - {name: b, endpoint: http://x/b, auth: {mode: token_exchange, token_url: nope, client_id_env: CID, client_secret_env: CSEC_UNSET, audience: x}}
  - {name: c, endpoint: http://x/c, auth: {mode: per_client, scopes: [s]}}
clients:
  - {name: k, key_env: CID, credentials: {a: {token_env: CID}}}
`
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "toolrouterd"), "check", file)
	cmd.Env = append(os.Environ(), "CID=x")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("check passed:\n%s", out)
	}
	for _, want := range []string{
		`tool "a": auth.mode: must be static, per_client or token_exchange (oauth and id_jag are not built yet)`,
		`tool "b": auth.token_url: must be an absolute http or https URL with a host`,
		`warning: ` + file + `:3: tool "b": auth.client_secret_env: environment variable CSEC_UNSET is unset or empty`,
		`tool "c": auth.scopes: only for mode token_exchange`,
		`client "k": credentials.a: "a" has auth mode static, not per_client`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}
