package toolrouter_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestContextOutcome tells the tool's own deadline from the caller's
// deadline and from the caller's cancellation.
func TestContextOutcome(t *testing.T) {
	t.Parallel()
	done := func(ctx context.Context) {
		t.Helper()
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the context never ended")
		}
	}
	t.Run("tool timeout", func(t *testing.T) {
		t.Parallel()
		callCtx, cancel := toolrouter.WithToolTimeout(context.Background(), time.Millisecond)
		defer cancel()
		done(callCtx)
		out := toolrouter.ContextOutcome(context.Background(), callCtx, time.Millisecond)
		if out.Category != toolrouter.CategoryTimeout || out.Err != "tool timed out after 1ms" {
			t.Fatalf("outcome = %+v", out)
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		t.Parallel()
		ctx, cancelCaller := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancelCaller()
		callCtx, cancel := toolrouter.WithToolTimeout(ctx, time.Hour)
		defer cancel()
		done(callCtx)
		out := toolrouter.ContextOutcome(ctx, callCtx, time.Hour)
		if out.Category != toolrouter.CategoryTimeout || out.Err != "call cancelled: context deadline exceeded" {
			t.Fatalf("outcome = %+v", out)
		}
	})
	t.Run("caller cancellation", func(t *testing.T) {
		t.Parallel()
		ctx, cancelCaller := context.WithCancel(context.Background())
		callCtx, cancel := toolrouter.WithToolTimeout(ctx, time.Hour)
		defer cancel()
		cancelCaller()
		out := toolrouter.ContextOutcome(ctx, callCtx, time.Hour)
		if out.Category != toolrouter.CategoryExecution || out.Err != "call cancelled: context canceled" {
			t.Fatalf("outcome = %+v", out)
		}
	})
}
