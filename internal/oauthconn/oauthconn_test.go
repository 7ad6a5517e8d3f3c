package oauthconn_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/oauthconn"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vault"
)

// as is an authorization server for the unit tests: RFC 8414 metadata,
// RFC 7591 registration, authorization (it "signs in" the login the
// test names), PKCE-checked code exchange, rotating refresh tokens,
// RFC 7009 revocation. The e2e tests use a real one.
type as struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	codes   map[string][2]string // code -> challenge, user
	refresh map[string]string    // live refresh token -> user
	access  map[string]string    // live access token -> user
	n       int
	ttl     int
	// onRefresh, when set, runs once before a refresh is answered.
	onRefresh func()
	resources []string
	revoked   []string
}

func newAS(t *testing.T) *as {
	a := &as{t: t, codes: map[string][2]string{}, refresh: map[string]string{}, access: map[string]string{}, ttl: 3600}
	mux := http.NewServeMux()
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		u := a.srv.URL
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": u, "authorization_endpoint": u + "/authorize", "token_endpoint": u + "/token",
			"registration_endpoint": u + "/register", "revocation_endpoint": u + "/revoke", "code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": "dyn-client"})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "dyn-client" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		a.mu.Lock()
		a.n++
		code := fmt.Sprint("code-", a.n)
		a.codes[code] = [2]string{q.Get("code_challenge"), r.Header.Get("X-Login")}
		a.resources = append(a.resources, q.Get("resource"))
		a.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+q.Get("state"), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		a.mu.Lock()
		hook := a.onRefresh
		if r.Form.Get("grant_type") == "refresh_token" {
			a.onRefresh = nil
		}
		a.mu.Unlock()
		if hook != nil && r.Form.Get("grant_type") == "refresh_token" {
			hook()
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		var user string
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			c, ok := a.codes[r.Form.Get("code")]
			delete(a.codes, r.Form.Get("code"))
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != c[0] {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
				return
			}
			user = c[1]
		case "refresh_token":
			u, ok := a.refresh[r.Form.Get("refresh_token")]
			delete(a.refresh, r.Form.Get("refresh_token")) // rotated: works once
			if !ok {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
				return
			}
			user = u
		}
		a.n++
		at, rt := fmt.Sprintf("AT-%s-%d-secret", user, a.n), fmt.Sprintf("RT-%s-%d-secret", user, a.n)
		a.access[at], a.refresh[rt] = user, user
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "expires_in": a.ttl})
	})
	mux.HandleFunc("/revoke", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		a.mu.Lock()
		defer a.mu.Unlock()
		tok := r.Form.Get("token")
		a.revoked = append(a.revoked, tok)
		delete(a.refresh, tok)
		delete(a.access, tok)
	})
	return a
}

// backend is a protected resource whose 401 names its metadata (RFC 9728 §5.1).
func newBackend(t *testing.T, issuer string) *httptest.Server {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/meta/prm", scope="repo"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("/meta/prm", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{issuer}})
	})
	return srv
}

func newConnector(t *testing.T, st *memory.Store, now func() time.Time) *oauthconn.Connector {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	keys, err := vault.ParseKeys("k:" + base64.StdEncoding.EncodeToString(k))
	if err != nil {
		t.Fatal(err)
	}
	return &oauthconn.Connector{Vault: &vault.Vault{Keys: keys, Store: st}, PublicURL: "http://tr.example", Now: now}
}

// replica is another replica of c: the same store and keys.
func replica(c *oauthconn.Connector) *oauthconn.Connector {
	return &oauthconn.Connector{Vault: &vault.Vault{Keys: c.Vault.Keys, Store: c.Vault.Store}, PublicURL: c.PublicURL, Now: c.Now}
}

// signIn opens the connect URL in a "browser" signed in as login, and
// follows the redirects back into the connector's callback.
func signIn(t *testing.T, c *oauthconn.Connector, connectURL, login string) int {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/connect/{state}", func(w http.ResponseWriter, r *http.Request) { c.ServeConnect(w, r, r.PathValue("state")) })
	mux.HandleFunc("/oauth/callback", c.ServeCallback)
	browser := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host == "tr.example" {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, r)
			return rec.Result(), nil
		}
		r.Header.Set("X-Login", login)
		return http.DefaultTransport.RoundTrip(r)
	})}
	resp, err := browser.Get(connectURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestConnectRefreshDisconnect(t *testing.T) {
	ctx := context.Background()
	a := newAS(t)
	a.ttl = 60
	be := newBackend(t, a.srv.URL)
	clk := time.Now()
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clk }
	st := memory.New()
	st.Now = now
	c := newConnector(t, st, now)
	auth := &toolrouter.BackendAuth{Mode: toolrouter.AuthOAuth, Resource: be.URL + "/mcp"}
	alice := oauthconn.Who{Client: "app", User: "alice"}
	bob := oauthconn.Who{Client: "app", User: "bob"}

	// No token yet: a connect URL.
	_, err := c.Token(ctx, alice, "gh", auth)
	var nc *oauthconn.NeedsConnect
	if !errors.As(err, &nc) || !strings.HasPrefix(nc.URL, "http://tr.example/connect/") {
		t.Fatalf("Token before connecting = %v", err)
	}
	if code := signIn(t, c, nc.URL, "alice"); code != http.StatusOK {
		t.Fatalf("sign-in ended with %d", code)
	}
	if len(a.resources) != 1 || a.resources[0] != be.URL+"/mcp" {
		t.Fatalf("resource sent = %v", a.resources)
	}
	// The link is single-use.
	if code := signIn(t, c, nc.URL, "mallory"); code != http.StatusNotFound {
		t.Fatalf("second use of the link: %d, want 404", code)
	}
	tok, err := c.Token(ctx, alice, "gh", auth)
	if err != nil || !strings.HasPrefix(tok.Value.Reveal(), "AT-alice-") {
		t.Fatalf("alice's token = %v, %v", tok, err)
	}
	first := tok.Value.Reveal()
	// Bob never gets Alice's token: he is asked to connect.
	if _, err := c.Token(ctx, bob, "gh", auth); !errors.As(err, &nc) {
		t.Fatalf("bob: %v, want a connect URL", err)
	}
	// Nothing of the vault is in the clear.
	raw, _ := st.ListSecrets(ctx, "oauth_token", "app/alice")
	if len(raw) != 1 || strings.Contains(raw[0].Sealed, "secret") {
		t.Fatalf("stored connection = %+v", raw)
	}

	// Another replica sees her connection, and Bob's calls there get no
	// token of hers.
	other := replica(c)
	if tok, err := other.Token(ctx, alice, "gh", auth); err != nil || tok.Value.Reveal() != first {
		t.Fatalf("alice on another replica = %v, %v", tok, err)
	}
	if _, err := other.Token(ctx, bob, "gh", auth); !errors.As(err, &nc) {
		t.Fatalf("bob on another replica: %v, want a connect URL", err)
	}

	// Expired: refreshed, and the rotated refresh token stored (the old
	// one no longer works at the server, so a second refresh proves it).
	for i := range 2 {
		mu.Lock()
		clk = clk.Add(2 * time.Minute)
		mu.Unlock()
		tok, err = c.Token(ctx, alice, "gh", auth)
		if err != nil || tok.Value.Reveal() == first || !strings.HasPrefix(tok.Value.Reveal(), "AT-alice-") {
			t.Fatalf("refresh %d = %v, %v", i, tok, err)
		}
		first = tok.Value.Reveal()
	}

	list, err := c.Connections(ctx, alice)
	if err != nil || len(list) != 1 || list[0].Backend != "gh" {
		t.Fatalf("Connections = %+v, %v", list, err)
	}
	if list, _ := c.Connections(ctx, bob); len(list) != 0 {
		t.Fatalf("bob's connections = %+v", list)
	}
	// Disconnect revokes both tokens at the server; the next call asks again.
	if ok, err := c.Disconnect(ctx, alice, "gh"); !ok || err != nil {
		t.Fatalf("Disconnect = %v, %v", ok, err)
	}
	if len(a.revoked) != 2 || a.revoked[1] != first {
		t.Fatalf("revoked %v", a.revoked)
	}
	if _, err := c.Token(ctx, alice, "gh", auth); !errors.As(err, &nc) {
		t.Fatalf("after disconnect: %v, want a connect URL", err)
	}
	if ok, err := c.Disconnect(ctx, alice, "gh"); ok || err != nil {
		t.Fatalf("second Disconnect = %v, %v", ok, err)
	}
}

func TestRefusedRefreshAsksToConnectAgain(t *testing.T) {
	ctx := context.Background()
	a := newAS(t)
	a.ttl = 60
	be := newBackend(t, a.srv.URL)
	clk := time.Now()
	now := func() time.Time { return clk }
	st := memory.New()
	c := newConnector(t, st, now)
	auth := &toolrouter.BackendAuth{Mode: toolrouter.AuthOAuth, Resource: be.URL + "/mcp"}
	who := oauthconn.Who{Client: "app", User: "alice"}
	_, err := c.Token(ctx, who, "gh", auth)
	var nc *oauthconn.NeedsConnect
	if !errors.As(err, &nc) {
		t.Fatal(err)
	}
	signIn(t, c, nc.URL, "alice")
	a.mu.Lock()
	clear(a.refresh) // revoked at the server
	a.mu.Unlock()
	clk = clk.Add(2 * time.Minute)
	if _, err := c.Token(ctx, who, "gh", auth); !errors.As(err, &nc) {
		t.Fatalf("refused refresh: %v, want a connect URL", err)
	} else if strings.Contains(err.Error(), "secret") {
		t.Fatalf("error carries a token: %v", err)
	}
}

// TestRefreshRaceAcrossReplicas: two replicas find the token expired; one
// refreshes (rotating the refresh token), the other's refresh with the old
// one is refused, and it uses the pair the first stored instead of
// dropping the connection.
func TestRefreshRaceAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	a := newAS(t)
	a.ttl = 60
	be := newBackend(t, a.srv.URL)
	clk := time.Now()
	now := func() time.Time { return clk }
	st := memory.New()
	st.Now = now
	c1 := newConnector(t, st, now)
	auth := &toolrouter.BackendAuth{Mode: toolrouter.AuthOAuth, Resource: be.URL + "/mcp"}
	who := oauthconn.Who{Client: "app", User: "alice"}
	_, err := c1.Token(ctx, who, "gh", auth)
	var nc *oauthconn.NeedsConnect
	if !errors.As(err, &nc) {
		t.Fatal(err)
	}
	signIn(t, c1, nc.URL, "alice")
	clk = clk.Add(2 * time.Minute)
	// Replica 2 asks to refresh with the pair it read; before the server
	// answers it, replica 1 refreshes with the same refresh token (and
	// stores the rotated pair): replica 2's refresh is then refused.
	c2 := replica(c1)
	var t1 *oauthconn.Token
	a.mu.Lock()
	a.onRefresh = func() {
		var err error
		if t1, err = c1.Token(ctx, who, "gh", auth); err != nil {
			t.Errorf("replica 1: %v", err)
		}
	}
	a.mu.Unlock()
	t2, err := c2.Token(ctx, who, "gh", auth)
	if err != nil || t1 == nil || t2.Value.Reveal() != t1.Value.Reveal() {
		t.Fatalf("replica 2 = %v, %v; want replica 1's refreshed token", t2, err)
	}
	if list, _ := c2.Connections(ctx, who); len(list) != 1 {
		t.Fatal("the connection was dropped")
	}
}

// TestDiscoveryRefusesAnotherResourcesMetadata (RFC 9728 §3.3).
func TestDiscoveryRefusesAnotherResourcesMetadata(t *testing.T) {
	a := newAS(t)
	be := newBackend(t, a.srv.URL) // its metadata names be.URL+"/mcp"
	c := newConnector(t, memory.New(), nil)
	_, err := c.Token(context.Background(), oauthconn.Who{User: "u"}, "gh", &toolrouter.BackendAuth{Mode: toolrouter.AuthOAuth,
		Resource: be.URL + "/other", ResourceMetadata: be.URL + "/meta/prm"})
	if err == nil || !strings.Contains(err.Error(), "RFC 9728 §3.3") {
		t.Fatalf("err = %v", err)
	}
}

func TestDiscoveryNeedsPKCE(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/a", "token_endpoint": srv.URL + "/t"})
	})
	c := newConnector(t, memory.New(), nil)
	_, err := c.Token(context.Background(), oauthconn.Who{User: "u"}, "gh", &toolrouter.BackendAuth{Mode: toolrouter.AuthOAuth, AuthorizationServer: srv.URL, Resource: "http://x/mcp"})
	if err == nil || !strings.Contains(err.Error(), "PKCE S256") {
		t.Fatalf("err = %v", err)
	}
}
