package vault_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vault"
)

func newKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

type pair struct{ Access, Refresh string }

func TestSealedAtRestAndBoundToItsKey(t *testing.T) {
	ctx := context.Background()
	kr, err := vault.ParseKeys("k1:" + newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	v := &vault.Vault{Keys: kr, Store: st}
	if err := v.Put(ctx, "oauth_token", "alice/gh", "alice", "gh", pair{"AT-secret-alice", "RT-secret-alice"}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	raw, err := st.GetSecret(ctx, "oauth_token", "alice/gh")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw.Sealed, "secret-alice") || !strings.HasPrefix(raw.Sealed, "v1:k1:") {
		t.Fatalf("stored %q: not sealed", raw.Sealed)
	}
	var got pair
	if ok, err := v.Get(ctx, "oauth_token", "alice/gh", &got); !ok || err != nil || got.Access != "AT-secret-alice" {
		t.Fatalf("Get = %v %v %+v", ok, err, got)
	}
	// Alice's box copied to Bob's key does not open.
	raw.Key = "bob/gh"
	raw.Owner = "bob"
	if err := st.PutSecret(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if ok, err := v.Get(ctx, "oauth_token", "bob/gh", &got); err == nil || ok {
		t.Fatalf("a box moved to another key opened: %v %v", ok, err)
	} else if strings.Contains(err.Error(), "secret-alice") {
		t.Fatalf("error carries the secret: %v", err)
	}
	if ok, err := v.Get(ctx, "oauth_token", "carol/gh", &got); ok || err != nil {
		t.Fatalf("missing = %v %v", ok, err)
	}
	list, err := v.List(ctx, "oauth_token", "alice")
	if err != nil || len(list) != 1 || list[0].Label != "gh" {
		t.Fatalf("List = %+v %v", list, err)
	}
}

func TestRotation(t *testing.T) {
	ctx := context.Background()
	oldKey, newK := newKey(t), newKey(t)
	st := memory.New()
	oldRing, err := vault.ParseKeys("old:" + oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&vault.Vault{Keys: oldRing, Store: st}).Put(ctx, "k", "a", "o", "l", pair{Access: "x"}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	// The new key first: the old box still opens, and is sealed again
	// under the new key when read.
	ring, err := vault.ParseKeys("new:" + newK + ", old:" + oldKey)
	if err != nil || ring.SealingKey() != "new" {
		t.Fatal(err)
	}
	v := &vault.Vault{Keys: ring, Store: st}
	var got pair
	if ok, err := v.Get(ctx, "k", "a", &got); !ok || err != nil || got.Access != "x" {
		t.Fatalf("Get under rotated ring = %v %v", ok, err)
	}
	raw, _ := st.GetSecret(ctx, "k", "a")
	if !strings.HasPrefix(raw.Sealed, "v1:new:") {
		t.Fatalf("not re-sealed: %q", raw.Sealed)
	}
	// With the old key dropped it still opens.
	only, _ := vault.ParseKeys("new:" + newK)
	if ok, err := (&vault.Vault{Keys: only, Store: st}).Get(ctx, "k", "a", &got); !ok || err != nil {
		t.Fatalf("after dropping the old key: %v %v", ok, err)
	}
	// A box under a key no longer configured fails naming the key id.
	if err := (&vault.Vault{Keys: oldRing, Store: st}).Put(ctx, "k", "b", "o", "l", pair{}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := (&vault.Vault{Keys: only, Store: st}).Get(ctx, "k", "b", &got); err == nil || !strings.Contains(err.Error(), `"old"`) {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestTakeIsSingleUse(t *testing.T) {
	ctx := context.Background()
	kr, _ := vault.ParseKeys("k:" + newKey(t))
	v := &vault.Vault{Keys: kr, Store: memory.New()}
	if err := v.Put(ctx, "oauth_state", "s", "u", "", pair{Access: "v"}, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var got pair
	if ok, err := v.Take(ctx, "oauth_state", "s", &got); !ok || err != nil || got.Access != "v" {
		t.Fatalf("Take = %v %v", ok, err)
	}
	if ok, err := v.Take(ctx, "oauth_state", "s", &got); ok || err != nil {
		t.Fatalf("second Take = %v %v", ok, err)
	}
}

func TestParseKeysErrorsNeverShowTheKey(t *testing.T) {
	secret := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcde")) // 31 bytes
	for spec, want := range map[string]string{
		"":                                   "no key",
		"nokey":                              "entry 1: want ID:KEY",
		"a:" + secret:                        `key "a": want 32 bytes`,
		"a:" + newKey(t) + ",a:" + newKey(t): `"a" appears twice`,
		"bad id!:" + newKey(t):               "entry 1",
	} {
		_, err := vault.ParseKeys(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseKeys(%q) = %v, want %q", spec, err, want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("error shows the key: %v", err)
		}
	}
	url := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	if _, err := vault.ParseKeys("u:" + url); err != nil {
		t.Errorf("base64url key: %v", err)
	}
}

func signedJWT(t *testing.T, exp time.Time) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(jwt.Claims{Subject: "alice", Expiry: jwt.NewNumericDate(exp)}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestSubjectTokenKeptUntilItsExp: the caller's JWT of a held call is
// kept sealed until its exp, then gone; an expired or exp-less token is
// not kept.
func TestSubjectTokenKeptUntilItsExp(t *testing.T) {
	ctx := context.Background()
	kr, _ := vault.ParseKeys("k:" + newKey(t))
	st := memory.New()
	now := time.Now()
	st.Now = func() time.Time { return now }
	v := &vault.Vault{Keys: kr, Store: st}
	jwtA := signedJWT(t, now.Add(time.Minute))
	if err := v.KeepSubjectToken(ctx, "approval:ap_1", "app/alice", toolrouter.NewSecret(jwtA), now); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := v.SubjectToken(ctx, "approval:ap_1"); err != nil || !ok || got.Reveal() != jwtA {
		t.Fatalf("SubjectToken = %v %v", ok, err)
	}
	if raw, _ := st.GetSecret(ctx, "subject_token", "approval:ap_1"); strings.Contains(raw.Sealed, jwtA[:20]) {
		t.Fatal("the token is stored in the clear")
	}
	now = now.Add(2 * time.Minute)
	if _, ok, err := v.SubjectToken(ctx, "approval:ap_1"); err != nil || ok {
		t.Fatalf("after its exp: %v %v", ok, err)
	}
	for _, tok := range []string{signedJWT(t, now.Add(-time.Second)), "not-a-jwt"} {
		if err := v.KeepSubjectToken(ctx, "k2", "o", toolrouter.NewSecret(tok), now); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := v.SubjectToken(ctx, "k2"); ok {
			t.Fatalf("kept %q", tok)
		}
	}
}
