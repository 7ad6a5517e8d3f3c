package access_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/registry"
)

// issuer is a test identity provider: its own keys, served as a JWKS.
type issuer struct {
	t       *testing.T
	mu      sync.Mutex
	keys    map[string]crypto.Signer
	served  []string // kids in the JWKS
	fetches atomic.Int32
	srv     *httptest.Server
}

func newIssuer(t *testing.T) *issuer {
	is := &issuer{t: t, keys: map[string]crypto.Signer{}}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		set := jose.JSONWebKeySet{}
		for _, kid := range is.served {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: is.keys[kid].Public(), KeyID: kid, Use: "sig"})
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

// addKey makes a key; served says whether the JWKS lists it.
func (is *issuer) addKey(kid string, ec, served bool) {
	var k crypto.Signer
	var err error
	if ec {
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	} else {
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		is.t.Fatal(err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys[kid] = k
	if served {
		is.served = append(is.served, kid)
	}
}

func (is *issuer) serve(kid string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.served = append(is.served, kid)
}

func (is *issuer) token(kid string, claims map[string]any) string {
	is.mu.Lock()
	k := is.keys[kid]
	is.mu.Unlock()
	alg := jose.RS256
	if _, ok := k.(*ecdsa.PrivateKey); ok {
		alg = jose.ES256
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: k, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		is.t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		is.t.Fatal(err)
	}
	return s
}

func TestJWT(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	is.addKey("rsa-1", false, true)
	is.addKey("ec-1", true, true)
	is.addKey("later", false, false)
	is.addKey("never", true, false)
	now := time.Now()
	clock := now
	var clockMu sync.Mutex
	v := access.NewJWTVerifier(access.JWTConfig{
		Issuer: "https://idp.example", JWKSURL: is.srv.URL, Audience: "https://tools.example/mcp",
		MinRefresh: time.Minute, Leeway: time.Second,
		Now: func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock },
	})
	good := func() map[string]any {
		return map[string]any{"iss": "https://idp.example", "aud": []string{"other", "https://tools.example/mcp"},
			"sub": "support-bot", "exp": now.Add(time.Hour).Unix(), "nbf": now.Add(-time.Minute).Unix()}
	}
	with := func(k string, v any) map[string]any {
		c := good()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	ctx := context.Background()
	for _, kid := range []string{"rsa-1", "ec-1"} {
		c, err := v.Verify(ctx, is.token(kid, good()))
		if err != nil || c.Subject != "support-bot" {
			t.Fatalf("%s: %+v %v", kid, c, err)
		}
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("JWKS fetched %d times, want once (cached)", n)
	}
	for _, tc := range []struct{ name, token, want string }{
		{"expired", is.token("rsa-1", with("exp", now.Add(-time.Minute).Unix())), "token expired"},
		{"no exp", is.token("rsa-1", with("exp", nil)), "no exp claim"},
		{"not yet", is.token("rsa-1", with("nbf", now.Add(time.Hour).Unix())), "not valid yet"},
		{"issuer", is.token("ec-1", with("iss", "https://evil.example")), "issuer is not https://idp.example"},
		{"audience", is.token("ec-1", with("aud", "https://other.example")), "audience does not include"},
		{"no subject", is.token("ec-1", with("sub", nil)), `no string claim "sub"`},
		{"malformed", "abc.def.ghi", "malformed token"},
		{"alg none", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "malformed token"},
		{"tampered", tamper(is.token("rsa-1", good())), "signature does not verify"},
		{"unknown kid", is.token("never", good()), `unknown key (kid "never")`},
	} {
		_, err := v.Verify(ctx, tc.token)
		if err == nil || !access.IsDenied(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want denied %q", tc.name, err, tc.want)
		}
	}
	// The unknown kid did not refetch: the set was fetched less than
	// MinRefresh ago. Later, an unknown kid refetches once.
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("JWKS fetched %d times within MinRefresh of the first fetch", n)
	}
	clockMu.Lock()
	clock = clock.Add(time.Minute)
	clockMu.Unlock()
	if _, err := v.Verify(ctx, is.token("never", good())); err == nil || !strings.Contains(err.Error(), "unknown key") {
		t.Errorf("unknown kid: %v", err)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("JWKS fetched %d times, want 2 (one refresh for the unknown kid)", n)
	}
	is.serve("later") // the issuer rotates in a new key
	if _, err := v.Verify(ctx, is.token("later", good())); err == nil || !strings.Contains(err.Error(), "unknown key") {
		t.Errorf("within MinRefresh: %v", err)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("JWKS fetched %d times within MinRefresh", n)
	}
	clockMu.Lock()
	clock = clock.Add(time.Minute)
	clockMu.Unlock()
	if c, err := v.Verify(ctx, is.token("later", good())); err != nil || c.Subject != "support-bot" {
		t.Errorf("after MinRefresh the new key is fetched: %v", err)
	}
	if n := is.fetches.Load(); n != 3 {
		t.Errorf("JWKS fetched %d times, want 3", n)
	}
}

func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	parts[1] = strings.TrimRight(parts[1], "=") + "A"
	if len(parts[1])%4 == 1 {
		parts[1] = parts[1][:len(parts[1])-2]
	}
	return strings.Join(parts, ".")
}

func TestJWTSubjectClaimPicksClient(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	is.addKey("k", true, true)
	v := access.NewJWTVerifier(access.JWTConfig{Issuer: "iss", JWKSURL: is.srv.URL, Audience: "aud", SubjectClaim: "client_id"})
	r := reg(t, twoClients, map[string]string{"BILLING_KEY": "b-key"})
	a := access.NewAuthenticator(nil, func() *registry.Registry { return r }, v)
	exp := time.Now().Add(time.Hour).Unix()
	for _, tc := range []struct {
		claims map[string]any
		client string
	}{
		{map[string]any{"iss": "iss", "aud": "aud", "exp": exp, "sub": "x", "client_id": "support-bot"}, "support"},
		{map[string]any{"iss": "iss", "aud": "aud", "exp": exp, "sub": "support-bot", "client_id": "nobody"}, ""},
	} {
		req := httptest.NewRequest("POST", "/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+is.token("k", tc.claims))
		c, err := a.Authenticate(context.Background(), req)
		if tc.client == "" {
			if !access.IsDenied(err) || !strings.Contains(err.Error(), "subject matches no client") {
				t.Errorf("%v: %v %v", tc.claims, c, err)
			}
			continue
		}
		if err != nil || c.Name != tc.client {
			t.Errorf("%v: %v %v", tc.claims, c, err)
		}
	}
	// A key still works next to JWTs.
	req := httptest.NewRequest("POST", "/mcp", nil)
	req.Header.Set("Authorization", "Bearer b-key")
	if c, err := a.Authenticate(context.Background(), req); err != nil || c.Name != "billing" {
		t.Errorf("key with JWT on: %v %v", c, err)
	}
}

func TestJWKSDown(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) }))
	defer srv.Close()
	v := access.NewJWTVerifier(access.JWTConfig{Issuer: "iss", JWKSURL: srv.URL, Audience: "aud"})
	_, err := v.Verify(context.Background(), "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsifQ.eyJzdWIiOiJ4In0.c2ln")
	if err == nil || access.IsDenied(err) || !strings.Contains(err.Error(), "503") {
		t.Errorf("a JWKS that cannot be fetched is not the caller's fault: %v", err)
	}
}

// TestJWTWithoutSubNamesNoUser: with the client picked by another claim
// (azp, client_id), a token without its own sub is the app's, not a
// person's: it names no user, so two people's tokens never share one (and
// with it the backend tokens exchanged for it).
func TestJWTWithoutSubNamesNoUser(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	is.addKey("k", true, true)
	v := access.NewJWTVerifier(access.JWTConfig{Issuer: "iss", JWKSURL: is.srv.URL, Audience: "aud", SubjectClaim: "client_id"})
	r := reg(t, twoClients, map[string]string{"BILLING_KEY": "b-key"})
	a := access.NewAuthenticator(nil, func() *registry.Registry { return r }, v)
	exp := time.Now().Add(time.Hour).Unix()
	for _, tc := range []struct {
		claims map[string]any
		user   string
	}{
		{map[string]any{"iss": "iss", "aud": "aud", "exp": exp, "client_id": "support-bot"}, ""},
		{map[string]any{"iss": "iss", "aud": "aud", "exp": exp, "sub": "alice", "client_id": "support-bot"}, "alice"},
	} {
		req := httptest.NewRequest("POST", "/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+is.token("k", tc.claims))
		c, u, err := a.Identify(context.Background(), req)
		if err != nil || c == nil || c.Name != "support" {
			t.Fatalf("%v: %v %v", tc.claims, c, err)
		}
		switch {
		case tc.user == "" && u != nil:
			t.Errorf("%v: user %q, want none (the token has no sub)", tc.claims, u.Subject)
		case tc.user != "" && (u == nil || u.Subject != tc.user):
			t.Errorf("%v: user %+v, want %q", tc.claims, u, tc.user)
		}
	}
}
