package toolrouter

import (
	"context"
	"errors"
	"testing"
	"time"
)

type detachKey struct{}

// A save's context keeps the caller's values, is not cancelled with the
// caller, has a deadline SaveTimeout to SaveTimeout+1s away, and a context
// derived from it is cancelled with it.
func TestSavesContext(t *testing.T) {
	t.Parallel()
	var s Saves
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), detachKey{}, "v"))
	start := time.Now()
	ctx := s.Context(parent)
	cancel()
	if ctx.Err() != nil {
		t.Fatalf("cancelled with its caller: %v", ctx.Err())
	}
	select {
	case <-ctx.Done():
		t.Fatal("done with its caller")
	default:
	}
	if got := ctx.Value(detachKey{}); got != "v" {
		t.Fatalf("value %v, want the caller's", got)
	}
	dl, ok := ctx.Deadline()
	if left := dl.Sub(start); !ok || left < SaveTimeout || left > SaveTimeout+time.Second+time.Since(start) {
		t.Fatalf("deadline %v away (%v), want %v to %v", left, ok, SaveTimeout, SaveTimeout+time.Second)
	}
	if s.Context(parent).(detached).deadline != ctx.(detached).deadline {
		t.Fatal("saves within one second do not share their deadline")
	}
	// A derived context ends with the shared deadline (cancelled here by
	// hand rather than waited for).
	child, stop := context.WithCancel(ctx)
	defer stop()
	s.cur.Load().cancel()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("derived context not cancelled with the save's deadline")
	}
	if !errors.Is(ctx.Err(), context.Canceled) || !errors.Is(context.Cause(child), context.Canceled) {
		t.Fatalf("errors %v, %v", ctx.Err(), context.Cause(child))
	}
}
