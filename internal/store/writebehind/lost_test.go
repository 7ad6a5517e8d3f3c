package writebehind_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
)

// A failed commit of writes nobody waits for is reported with what was
// lost, by kind, and Err says commits fail until one succeeds (issue 21
// item 7: a full disk lost records without a word).
func TestFailedCommitReportsLostWritesByKind(t *testing.T) {
	var failing atomic.Bool
	diskFull := errors.New("database or disk is full")
	w := writebehind.New(func(ctx context.Context, ws []writebehind.Write) error {
		if failing.Load() {
			return diskFull
		}
		return nil
	}, 100, 100)
	defer w.Close()
	var mu sync.Mutex
	lost := map[string]int{}
	var errs []error
	w.SetOnError(func(err error, l map[string]int) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
		for k, n := range l {
			lost[k] += n
		}
	})
	ctx := context.Background()
	result := writebehind.Write{SQL: "INSERT INTO results", Kind: "result"}
	audit := writebehind.Write{SQL: "INSERT INTO audit", Kind: "audit"}
	if err := w.Add(ctx, result, audit, audit); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil || w.Err() != nil {
		t.Fatalf("healthy: flush %v, Err %v", err, w.Err())
	}
	failing.Store(true)
	for range 3 {
		if err := w.Add(ctx, result, audit); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Add(ctx, audit); err != nil {
		t.Fatal(err)
	}
	if err := w.AddWait(ctx, writebehind.Write{SQL: "UPDATE keys", Kind: "key"}); !errors.Is(err, diskFull) {
		t.Fatalf("a waited write gets the commit's error: %v", err)
	}
	if !errors.Is(w.Err(), diskFull) {
		t.Fatalf("Err while commits fail: %v", w.Err())
	}
	mu.Lock()
	if want := map[string]int{"result": 3, "audit": 4}; !reflect.DeepEqual(lost, want) || len(errs) == 0 || !errors.Is(errs[0], diskFull) {
		t.Errorf("lost %v (errors %v), want %v: the waited write is not lost, its caller heard", lost, errs, want)
	}
	mu.Unlock()
	failing.Store(false)
	if err := w.AddWait(ctx, result); err != nil {
		t.Fatal(err)
	}
	if w.Err() != nil {
		t.Errorf("Err after a commit succeeded: %v", w.Err())
	}
}
