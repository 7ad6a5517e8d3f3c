package e2e_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// recordingTool is a tool endpoint that counts its calls and keeps the
// Authorization headers it received.
type recordingTool struct {
	mu    sync.Mutex
	calls map[string]int // path → calls
	auth  []string
	srv   *httptest.Server
}

func newRecordingTool(t *testing.T) *recordingTool {
	rt := &recordingTool{calls: map[string]int{}}
	rt.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rt.mu.Lock()
		rt.calls[r.URL.Path]++
		if a := r.Header.Get("Authorization"); a != "" {
			rt.auth = append(rt.auth, a)
		}
		rt.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	t.Cleanup(rt.srv.Close)
	return rt
}

func (rt *recordingTool) count(path string) int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.calls[path]
}

// idp is a test identity provider: an EC key served as a JWKS, and a key
// it never publishes.
type idp struct {
	t               *testing.T
	key, unlisted   *ecdsa.PrivateKey
	issuer, jwksURL string
}

func newIDP(t *testing.T) *idp {
	p := &idp{t: t, issuer: "https://idp.e2e.test"}
	var err error
	if p.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	if p.unlisted, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: p.key.Public(), KeyID: "k1", Use: "sig", Algorithm: "ES256"}}})
	}))
	t.Cleanup(srv.Close)
	p.jwksURL = srv.URL
	return p
}

func (p *idp) token(key *ecdsa.PrivateKey, kid, sub string, exp time.Time) string {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		p.t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(map[string]any{"iss": p.issuer, "aud": "toolrouterd-e2e", "sub": sub,
		"exp": exp.Unix(), "iat": time.Now().Add(-time.Minute).Unix()}).Serialize()
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

func clientsRegistry(toolURL, supportDigest string, withBilling bool) string {
	reg := fmt.Sprintf(`tools:
  - {name: billing/refund, endpoint: %[1]s/refund}
  - {name: billing/invoice, endpoint: %[1]s/invoice}
  - {name: kb/search, endpoint: %[1]s/search}
clients:
  - name: support
    key_sha256: %[2]s
    jwt_subject: support-bot
    tools: ["kb/*"]
`, toolURL, supportDigest)
	if withBilling {
		reg += `  - name: billing
    key_env: BILLING_KEY
    tools: ["billing/*"]
    rate_limit: 4/h
`
	}
	return reg
}

// TestClientsE2E: two clients with different scopes, a JWT client, keys
// that match no client, bad tokens, a rate limit and a SIGHUP that removes
// a client, through the real binary.
func TestClientsE2E(t *testing.T) {
	t.Parallel()
	tool := newRecordingTool(t)
	id := newIDP(t)
	sum := sha256.Sum256([]byte("support-key"))
	rt, path := startRouter(t, clientsRegistry(tool.srv.URL, hex.EncodeToString(sum[:]), true),
		"BILLING_KEY=billing-key", "TOOLROUTER_API_KEYS=legacy-key",
		"TOOLROUTER_JWT_ISSUER="+id.issuer, "TOOLROUTER_JWT_JWKS_URL="+id.jwksURL, "TOOLROUTER_JWT_AUDIENCE=toolrouterd-e2e")
	bearer := func(k string) []string { return []string{"Authorization", "Bearer " + k} }
	route := func(auth []string, name string) response {
		return do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": name, "arguments": "{}"}}, auth...)
	}
	schemaNames := func(auth []string) string {
		r := do(t, "GET", rt.URL()+"/schemas/anthropic", nil, auth...)
		if r.Status != 200 {
			t.Fatalf("schemas: %d %s", r.Status, r.Body)
		}
		var names []string
		for _, tl := range r.JSON(t)["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		return strings.Join(names, ",")
	}
	jwtSupport := id.token(id.key, "k1", "support-bot", time.Now().Add(time.Hour))

	t.Run("scopes", func(t *testing.T) {
		for _, tc := range []struct {
			auth []string
			want string
		}{
			{bearer("billing-key"), "billing/refund,billing/invoice"},
			{bearer("support-key"), "kb/search"},
			{bearer(jwtSupport), "kb/search"},
			{bearer("legacy-key"), "billing/refund,billing/invoice,kb/search"},
		} {
			if got := schemaNames(tc.auth); got != tc.want {
				t.Errorf("%s: /schemas lists %s, want %s", tc.auth[1][:14], got, tc.want)
			}
		}
		// Out of scope is exactly not found: same category, same message
		// shape, and the tool is not called.
		before := tool.count("/refund")
		for _, auth := range [][]string{bearer("support-key"), bearer(jwtSupport)} {
			out := route(auth, "billing/refund").JSON(t)
			missing := route(auth, "billing/nothing").JSON(t)
			if out["error_category"] != "not_found" || out["error"] != "Tool 'billing/refund' not found" {
				t.Errorf("out of scope: %v", out)
			}
			if strings.Replace(missing["error"].(string), "nothing", "refund", 1) != out["error"] {
				t.Errorf("out of scope %q differs from missing %q", out["error"], missing["error"])
			}
		}
		batch := do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": "p", "tool_calls": []any{
			map[string]any{"name": "kb/search", "arguments": "{}"},
			map[string]any{"name": toolrouter.ExportName(toolrouter.FormatOpenAI, "billing/refund"), "arguments": "{}"}, // the provider alias
		}}, bearer("support-key")...).JSON(t)
		res := batch["results"].([]any)
		if res[0].(map[string]any)["success"] != true || res[1].(map[string]any)["error_category"] != "not_found" {
			t.Errorf("batch: %v", res)
		}
		if n := tool.count("/refund"); n != before {
			t.Errorf("an out-of-scope tool was called %d times", n-before)
		}
		if r := route(bearer(jwtSupport), "kb/search").JSON(t); r["success"] != true {
			t.Errorf("JWT client calling its tool: %v", r)
		}
		tool.mu.Lock()
		defer tool.mu.Unlock()
		if len(tool.auth) > 0 {
			t.Errorf("the client's credentials reached the tool: %q", tool.auth)
		}
	})

	t.Run("bad credentials are 401", func(t *testing.T) {
		for name, auth := range map[string][]string{
			"no header":         nil,
			"unknown key":       bearer("no-such-key"),
			"expired token":     bearer(id.token(id.key, "k1", "support-bot", time.Now().Add(-time.Hour))),
			"unknown kid":       bearer(id.token(id.unlisted, "k9", "support-bot", time.Now().Add(time.Hour))),
			"unknown signer":    bearer(id.token(id.unlisted, "k1", "support-bot", time.Now().Add(time.Hour))),
			"malformed token":   bearer("eyJhbGciOiJFUzI1NiJ9.bm90IGpzb24.c2ln"),
			"unknown subject":   bearer(id.token(id.key, "k1", "someone-else", time.Now().Add(time.Hour))),
			"basic scheme":      {"Authorization", "Basic billing-key"},
			"scheme lower-case": bearer("billing-key")[:0],
		} {
			if name == "scheme lower-case" {
				if r := route([]string{"Authorization", "bearer billing-key"}, "billing/invoice"); r.Status != 200 {
					t.Errorf("bearer in lower case: %d", r.Status)
				}
				continue
			}
			r := route(auth, "kb/search")
			if r.Status != http.StatusUnauthorized || r.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("%s: %d %s", name, r.Status, r.Body)
				continue
			}
			want := `Bearer resource_metadata="` + rt.URL() + `/.well-known/oauth-protected-resource"`
			if ch := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, want) {
				t.Errorf("%s: WWW-Authenticate %q, want %s…", name, ch, want)
			}
		}
		r := do(t, "POST", rt.URL()+"/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}, "Accept", "application/json, text/event-stream")
		if ch := r.Header.Get("WWW-Authenticate"); r.Status != 401 || !strings.Contains(ch, "/.well-known/oauth-protected-resource/mcp") {
			t.Errorf("/mcp without a token: %d %q", r.Status, ch)
		}
		meta := do(t, "GET", rt.URL()+"/.well-known/oauth-protected-resource/mcp", nil)
		m := meta.JSON(t)
		if meta.Status != 200 || m["resource"] != rt.URL()+"/mcp" || fmt.Sprint(m["authorization_servers"]) != "["+id.issuer+"]" {
			t.Errorf("protected resource metadata: %d %v", meta.Status, m)
		}
	})

	t.Run("mcp scopes", func(t *testing.T) {
		hc := &http.Client{Transport: bearer2{token: jwtSupport}}
		cs, err := mcpConnect(t, rt.URL(), hc, nil)
		if err != nil {
			t.Fatal(err)
		}
		listed := mcpTools(t, cs)
		if len(listed) != 1 || listed[toolrouter.ExportName(toolrouter.FormatMCP, "kb/search")] == nil {
			t.Errorf("tools/list for support: %v", listed)
		}
		before := tool.count("/refund")
		res := mcpCall(t, cs, toolrouter.ExportName(toolrouter.FormatMCP, "billing/refund"), map[string]any{})
		if !res.IsError || res.Meta["toolrouter/error_category"] != "not_found" || tool.count("/refund") != before {
			t.Errorf("tools/call out of scope: %v %s", res.IsError, mcpText(res))
		}
	})

	t.Run("rate limit", func(t *testing.T) {
		// billing has 4/h; the scope test used one call. Windows are clock
		// hours: should one end during the test, the quota resets once and
		// the sequence is run again.
		for attempt := 0; attempt < 2; attempt++ {
			first := route(bearer("billing-key"), "billing/invoice")
			if first.Status == 429 {
				t.Fatalf("limit hit too early: %s", first.Body)
			}
			if first.Header.Get("RateLimit-Policy") != `"tool-calls";q=4;w=3600` {
				t.Errorf("RateLimit-Policy %q", first.Header.Get("RateLimit-Policy"))
			}
			var remaining int
			fmt.Sscanf(first.Header.Get("RateLimit"), `"tool-calls";r=%d`, &remaining)
			calls := make([]any, remaining+1)
			for i := range calls {
				calls[i] = map[string]any{"name": "billing/invoice", "arguments": "{}"}
			}
			before := tool.count("/invoice")
			over := do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": "p", "tool_calls": calls}, bearer("billing-key")...)
			if over.Status != 429 {
				continue // the window ended between the two requests
			}
			if over.Header.Get("Retry-After") == "" || !strings.HasPrefix(over.Header.Get("RateLimit"), `"tool-calls";r=`) ||
				!strings.Contains(string(over.Body), `rate limit of client \"billing\" exceeded (4/h)`) {
				t.Errorf("batch over the limit: %v %s", over.Header, over.Body)
			}
			if tool.count("/invoice") != before {
				t.Error("a batch over the limit called tools")
			}
			// The rest fits: a batch of exactly what remains.
			calls = calls[:remaining]
			if ok := do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": "p", "tool_calls": calls}, bearer("billing-key")...); ok.Status != 200 {
				continue
			}
			one := route(bearer("billing-key"), "billing/invoice")
			if one.Status != 429 || one.Header.Get("RateLimit") == "" {
				continue
			}
			// /mcp: HTTP 429 with a JSON-RPC error; the tool is not called.
			init := do(t, "POST", rt.URL()+"/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
				"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "e2e", "version": "0"}}},
				"Accept", "application/json, text/event-stream", "Authorization", "Bearer billing-key")
			sid := init.Header.Get("Mcp-Session-Id")
			call := do(t, "POST", rt.URL()+"/mcp", map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": toolrouter.ExportName(toolrouter.FormatMCP, "billing/invoice"), "arguments": map[string]any{}}},
				"Accept", "application/json, text/event-stream", "Authorization", "Bearer billing-key", "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18")
			if call.Status != 429 || call.Header.Get("Retry-After") == "" {
				t.Errorf("/mcp tools/call over the limit: %d %s", call.Status, call.Body)
			} else if m := call.JSON(t); m["id"] != float64(7) || m["error"] == nil {
				t.Errorf("/mcp 429 body: %s", call.Body)
			}
			if tool.count("/invoice") != before+remaining {
				t.Errorf("tool calls: %d, want %d", tool.count("/invoice"), before+remaining)
			}
			metrics := do(t, "GET", rt.URL()+"/metrics", nil)
			for _, want := range []string{`toolrouter_rate_limited_calls_total{client="billing"}`, `toolrouter_tool_calls_total{client="support",outcome="success",tool="kb/search"}`} {
				if !strings.Contains(string(metrics.Body), want) {
					t.Errorf("metrics lack %s", want)
				}
			}
			return
		}
		t.Fatal("the rate limit was never hit")
	})

	t.Run("SIGHUP removing a client", func(t *testing.T) {
		if r := route(bearer("support-key"), "kb/search"); r.Status != 200 {
			t.Fatalf("before: %d", r.Status)
		}
		rt.reload(t, path, clientsRegistry(tool.srv.URL, strings.Repeat("0", 64), false))
		for _, key := range []string{"billing-key", "support-key"} {
			if r := route(bearer(key), "kb/search"); r.Status != 401 {
				t.Errorf("%s after its client was removed: %d %s", key, r.Status, r.Body)
			}
		}
		if r := route(bearer(jwtSupport), "kb/search"); r.Status != 200 {
			t.Errorf("the JWT client stays: %d %s", r.Status, r.Body)
		}
	})
}

// bearer2 sends a bearer token with every request of an MCP client.
type bearer2 struct{ token string }

func (b bearer2) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestCheckUnsetKeyEnv (issue 21 item 13): a registry checked without its
// secrets passes with a warning naming the variable of each client key
// that is unset; the service itself still refuses to start on it.
func TestCheckUnsetKeyEnv(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/registry.yaml"
	os.WriteFile(path, []byte(`tools:
  - {name: billing/refund, endpoint: http://127.0.0.1:9/r}
clients:
  - name: billing
    key_env: CHECK_BILLING_KEY
    tools: ["billing/*"]
  - name: support
    key_env: CHECK_SUPPORT_KEY
    tools: ["billing/*"]
`), 0o600)
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHECK_BILLING_KEY=") && !strings.HasPrefix(kv, "CHECK_SUPPORT_KEY=") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(binDir+"/toolrouterd", "check", path)
	cmd.Env = append(env, "CHECK_SUPPORT_KEY=s-key")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("check without a client's secret: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `warning: `+path+`:5: client "billing": key_env: environment variable CHECK_BILLING_KEY is unset or empty`) ||
		strings.Contains(string(out), "CHECK_SUPPORT_KEY") || !strings.Contains(string(out), "ok, 1 tool(s), 0 provider(s), 0 MCP server(s), 2 client(s)") {
		t.Errorf("check output:\n%s", out)
	}
	// Two clients under one unset variable share a key: still a problem.
	os.WriteFile(path, []byte("clients:\n  - {name: a, key_env: CHECK_BILLING_KEY}\n  - {name: b, key_env: CHECK_BILLING_KEY}\n"), 0o600)
	cmd = exec.Command(binDir+"/toolrouterd", "check", path)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), `the same key as client "a"`) {
		t.Errorf("check of two clients under one variable: %v\n%s", err, out)
	}
	// Start-up refuses the first file.
	os.WriteFile(path, []byte("clients:\n  - {name: billing, key_env: CHECK_BILLING_KEY}\n"), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd = exec.CommandContext(ctx, binDir+"/toolrouterd")
	cmd.Env = append(env, "TOOLROUTER_REGISTRY="+path, "TOOLROUTER_STORE=memory://", "TOOLROUTER_ADDR=127.0.0.1:0")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "CHECK_BILLING_KEY is unset or empty") {
		t.Errorf("start-up with an unset key_env: %v\n%s", err, out)
	}
}

// TestCheckClients: toolrouterd check rejects bad clients (every problem,
// with file and line) and warns about patterns that match no tool.
func TestCheckClients(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string) string {
		p := dir + "/" + name
		os.WriteFile(p, []byte(content), 0o600)
		return p
	}
	tools := "tools:\n  - {name: billing/refund, endpoint: http://x/r}\nmcp_servers:\n  - {name: files, url: http://x/mcp}\n"
	bad := file("bad.yaml", tools+`clients:
  - name: a
    key_env: CHECK_UNSET_KEY
  - name: b
    key_sha256: nothex
  - name: c
    key_env: CHECK_KEY
  - name: d
    key_env: CHECK_KEY_TOO
`)
	cmd := exec.Command(binDir+"/toolrouterd", "check", bad)
	cmd.Env = append(os.Environ(), "CHECK_KEY=same", "CHECK_KEY_TOO=same")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("check passed bad clients:\n%s", out)
	}
	for _, want := range []string{
		`warning: ` + bad + `:7: client "a": key_env: environment variable CHECK_UNSET_KEY is unset or empty (the service refuses to start without it)`,
		`bad.yaml:9: client "b": key_sha256: must be the key's SHA-256`,
		`bad.yaml:13: client "d": key_env: the same key as client "c"`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "same") && !strings.Contains(string(out), "the same key") {
		t.Errorf("check printed a key:\n%s", out)
	}
	if strings.Contains(string(out), "3 problem(s)") || !strings.Contains(string(out), "2 problem(s)") {
		t.Errorf("an unset key_env is a warning, not a problem:\n%s", out)
	}
	good := file("good.yaml", tools+`clients:
  - name: billing
    jwt_subject: billing
    tools: ["billing/*", "bilthe/typo", "files/*"]
`)
	out, err = exec.Command(binDir+"/toolrouterd", "check", good).CombinedOutput()
	if err != nil {
		t.Fatalf("check: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `warning: `+good+`:8: client "billing": tools: pattern "bilthe/typo" matches no tool`) ||
		strings.Count(string(out), "warning") != 1 || !strings.Contains(string(out), "1 client(s)") {
		t.Errorf("check output:\n%s", out)
	}
}
