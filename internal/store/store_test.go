package store_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store"
)

// each runs a contract test against every store this machine can open.
func each(t *testing.T, f func(t *testing.T, open func() store.Store)) {
	t.Run("memory", func(t *testing.T) {
		m := store.NewMemory()
		f(t, func() store.Store { return m })
	})
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "t.db")
		f(t, func() store.Store {
			s, err := store.Open(context.Background(), "sqlite://"+path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

func TestSequencesAreGapFreeAndDistinct(t *testing.T) {
	each(t, func(t *testing.T, open func() store.Store) {
		s := open()
		ctx := context.Background()
		const workers, per = 8, 25
		var mu sync.Mutex
		seen := map[int64]bool{}
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					n, err := s.NextSequence(ctx, "plan-a")
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if seen[n] {
						t.Errorf("sequence %d handed out twice", n)
					}
					seen[n] = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for i := int64(0); i < workers*per; i++ {
			if !seen[i] {
				t.Errorf("gap: %d never handed out", i)
			}
		}
		if n, _ := s.NextSequence(ctx, "plan-b"); n != 0 {
			t.Errorf("a new plan starts at %d, want 0", n)
		}
		if _, err := s.NextSequence(ctx, ""); err == nil {
			t.Error("empty plan id accepted")
		}
		if err := s.Ping(ctx); err != nil {
			t.Error(err)
		}
	})
}

func TestSQLiteContinuesAfterRestart(t *testing.T) {
	ctx := context.Background()
	url := "sqlite://" + filepath.Join(t.TempDir(), "r.db")
	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		s.NextSequence(ctx, "p")
	}
	s.Close()
	s, err = store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, _ := s.NextSequence(ctx, "p"); n != 3 {
		t.Errorf("after restart: %d, want 3", n)
	}
}

func TestOpenRejectsUnknownSchemes(t *testing.T) {
	for _, u := range []string{"redis://x", "nothing", "sqlite://"} {
		if _, err := store.Open(context.Background(), u); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}
