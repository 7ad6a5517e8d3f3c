package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// secretsAreSharedTakenOnceAndExpire: a secret put on one replica is read,
// listed by owner and replaced on the others; of replicas taking one secret
// at once exactly one gets it; an expired secret is absent.
func secretsAreSharedTakenOnceAndExpire(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 3)
	put := func(s store.Store, kind, key, owner, sealed string, expires time.Time) {
		t.Helper()
		if err := s.PutSecret(ctx, &toolrouter.SealedSecret{Kind: kind, Key: key, Owner: owner, Label: key, Sealed: sealed, ExpiresAt: expires}); err != nil {
			t.Fatal(err)
		}
	}
	put(ss[0], "tok", "a/gh", "a", "s1", time.Time{})
	put(ss[0], "tok", "a/crm", "a", "s2", clk.Now().Add(time.Hour))
	put(ss[1], "tok", "b/gh", "b", "s3", time.Time{})
	put(ss[1], "other", "a/x", "a", "s4", time.Time{})
	got, err := ss[2].GetSecret(ctx, "tok", "a/gh")
	if err != nil || got.Sealed != "s1" || got.Owner != "a" || got.Label != "a/gh" || !got.ExpiresAt.IsZero() || got.UpdatedAt.IsZero() {
		t.Fatalf("GetSecret = %+v, %v", got, err)
	}
	list, err := ss[2].ListSecrets(ctx, "tok", "a")
	if err != nil || len(list) != 2 || list[0].Key != "a/crm" || list[1].Key != "a/gh" {
		t.Fatalf("ListSecrets(a) = %+v, %v", list, err)
	}
	if !list[0].ExpiresAt.Equal(clk.Now().Add(time.Hour).Truncate(time.Microsecond)) && !list[0].ExpiresAt.Equal(clk.Now().Add(time.Hour)) {
		t.Errorf("expires_at = %v, want %v", list[0].ExpiresAt, clk.Now().Add(time.Hour))
	}
	put(ss[2], "tok", "a/gh", "a", "s1b", time.Time{}) // replaced (a rotated token)
	if got, err := ss[0].GetSecret(ctx, "tok", "a/gh"); err != nil || got.Sealed != "s1b" {
		t.Fatalf("after replace: %+v, %v", got, err)
	}

	// One taker wins.
	put(ss[0], "state", "st", "a", "v", clk.Now().Add(time.Minute))
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := range 9 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := ss[i%3].TakeSecret(ctx, "state", "st")
			switch {
			case err == nil && s.Sealed == "v":
				won.Add(1)
			case toolrouter.ErrorCode(err) != toolrouter.ENOTFOUND:
				t.Errorf("TakeSecret: %v", err)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d takers got the secret, want 1", won.Load())
	}

	// Deleted and expired secrets are absent.
	if ok, err := ss[1].DeleteSecret(ctx, "tok", "b/gh"); err != nil || !ok {
		t.Fatalf("DeleteSecret = %v, %v", ok, err)
	}
	if ok, err := ss[1].DeleteSecret(ctx, "tok", "b/gh"); err != nil || ok {
		t.Fatalf("DeleteSecret again = %v, %v", ok, err)
	}
	clk.Advance(2 * time.Hour)
	if _, err := ss[0].GetSecret(ctx, "tok", "a/crm"); toolrouter.ErrorCode(err) != toolrouter.ENOTFOUND {
		t.Fatalf("expired GetSecret: %v", err)
	}
	if _, err := ss[0].TakeSecret(ctx, "tok", "a/crm"); toolrouter.ErrorCode(err) != toolrouter.ENOTFOUND {
		t.Fatalf("expired TakeSecret: %v", err)
	}
	if list, err := ss[0].ListSecrets(ctx, "tok", "a"); err != nil || len(list) != 1 || list[0].Key != "a/gh" {
		t.Fatalf("ListSecrets after expiry = %+v, %v", list, err)
	}
}
