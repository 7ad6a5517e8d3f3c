package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
)

// TestBackendCredentialsAcrossReplicas: two replicas on one PostgreSQL
// database call a token_exchange backend for two users of one JWT client
// (zitadel/oidc's OP as the authorization server, cmd/testas). On either
// replica, in any order, the backend gets the token of the user the call
// is made for, never the other's; and an Idempotency-Key one user sent is
// never replayed to the other (the store is what the replicas share):
// bob's request with alice's key and body runs for bob, while alice's
// repeat on the other replica is replayed to her.
func TestBackendCredentialsAcrossReplicas(t *testing.T) {
	t.Parallel()
	db := pgtest.Start(t)
	as := startTestAS(t, "-audiences", "http://files", "-user-claims", "app=portal", "-client", "toolrouterd:tr-secret-R3p")
	issuer := as.URL()
	v := &verifier{issuer: issuer, jwks: issuer + "/keys"}
	var mu sync.Mutex
	var wrong []string // calls whose token was not their user's
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		claims, err := v.verify(r.Header.Get("Authorization"), "http://files")
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "token rejected: " + err.Error()})
			return
		}
		var args struct {
			As string `json:"as"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &args)
		if args.As != "" && args.As != claims["sub"] {
			mu.Lock()
			wrong = append(wrong, fmt.Sprintf("a call for %s carried %v's token", args.As, claims["sub"]))
			mu.Unlock()
		}
		_ = json.NewEncoder(w).Encode(claims)
	}))
	t.Cleanup(files.Close)
	tokenURL := issuer + "/oauth/token"
	reg := fmt.Sprintf(`tools:
  - name: files/read
    endpoint: %q
    auth: {mode: token_exchange, token_url: %q, client_id_env: TR_CLIENT_ID, client_secret_env: TR_CLIENT_SECRET, audience: http://files, actor: true}
clients:
  - {name: portal, jwt_subject: portal, tools: ["*"]}
`, files.URL, tokenURL)
	reps := startReplicas(t, 2, reg, db, "TR_CLIENT_ID=toolrouterd", "TR_CLIENT_SECRET=tr-secret-R3p",
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
	users := map[string]string{"alice": userToken("alice", "alice-pw"), "bob": userToken("bob", "bob-pw")}
	call := func(rep int, user string, args string, header ...string) response {
		t.Helper()
		r := do(t, "POST", reps[rep].URL()+"/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": "files/read", "arguments": args}},
			append([]string{"Authorization", "Bearer " + users[user]}, header...)...)
		if r.Status != 200 {
			t.Fatalf("replica %d, %s: %d %s", rep, user, r.Status, r.Body)
		}
		return r
	}
	sub := func(r response) any {
		out, _ := r.JSON(t)["output"].(map[string]any)
		return out["sub"]
	}

	// Interleaved: each user on each replica, each cache cold and warm.
	for round := 0; round < 3; round++ {
		for _, c := range []struct {
			rep  int
			user string
		}{{0, "alice"}, {1, "bob"}, {1, "alice"}, {0, "bob"}} {
			if got := sub(call(c.rep, c.user, fmt.Sprintf(`{"as":%q}`, c.user))); got != c.user {
				t.Errorf("round %d, replica %d: a call for %s reached the backend as %v", round, c.rep, c.user, got)
			}
		}
	}
	mu.Lock()
	if len(wrong) > 0 {
		t.Errorf("tokens crossed users: %v", wrong)
	}
	mu.Unlock()

	// One Idempotency-Key, one body, two users of one client.
	first := call(0, "alice", "{}", "Idempotency-Key", "k-shared")
	bobs := call(1, "bob", "{}", "Idempotency-Key", "k-shared")
	if sub(first) != "alice" || sub(bobs) != "bob" || bobs.Header.Get("Idempotent-Replayed") == "true" {
		t.Errorf("bob with alice's key got %v (replayed %q); alice had %v", sub(bobs), bobs.Header.Get("Idempotent-Replayed"), sub(first))
	}
	again := call(1, "alice", "{}", "Idempotency-Key", "k-shared")
	if sub(again) != "alice" || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("alice's repeat on the other replica: %v (replayed %q), want her own answer replayed", sub(again), again.Header.Get("Idempotent-Replayed"))
	}
}
