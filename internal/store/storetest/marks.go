package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
)

// marksAreSharedAndExpire: of replicas putting one key at once, one value
// wins and every replica reads it; a mark is gone once it expires, and its
// key may then take a new value.
func marksAreSharedAndExpire(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 3)
	expires := clk.Now().Add(time.Minute)
	got := make([]string, 12)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := ss[i%3].PutMark(ctx, "k", fmt.Sprint("v", i), expires)
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	wg.Wait()
	for i, v := range got {
		if v != got[0] || v == "" {
			t.Fatalf("replica %d put %q, got %q; another got %q: want one winner", i%3, fmt.Sprint("v", i), v, got[0])
		}
	}
	for i, s := range ss {
		if v, ok, err := s.GetMark(ctx, "k"); err != nil || !ok || v != got[0] {
			t.Errorf("replica %d reads %q %v %v, want %q", i, v, ok, err, got[0])
		}
	}
	if _, ok, err := ss[0].GetMark(ctx, "other"); err != nil || ok {
		t.Errorf("unknown key: %v %v", ok, err)
	}
	clk.Advance(time.Minute)
	if v, ok, err := ss[1].GetMark(ctx, "k"); err != nil || ok {
		t.Errorf("expired mark still read: %q %v %v", v, ok, err)
	}
	if v, err := ss[2].PutMark(ctx, "k", "new", clk.Now().Add(time.Hour)); err != nil || v != "new" {
		t.Errorf("put over an expired mark: %q %v, want new", v, err)
	}
	if v, ok, err := ss[0].GetMark(ctx, "k"); err != nil || !ok || v != "new" {
		t.Errorf("after the new put: %q %v %v", v, ok, err)
	}
}
