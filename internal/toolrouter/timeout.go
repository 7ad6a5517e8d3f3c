package toolrouter

import (
	"context"
	"errors"
	"time"
)

// errToolTimeout is the cause of a call's own deadline (WithToolTimeout),
// telling it apart from a deadline or cancellation of the caller's context.
var errToolTimeout = errors.New("tool timeout")

// WithToolTimeout bounds a tool call by the tool's timeout; ContextOutcome
// tells that deadline apart from the caller's.
func WithToolTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, timeout, errToolTimeout)
}

// ContextOutcome is the failure of a call whose context callCtx (made by
// WithToolTimeout from the caller's ctx) is done: the tool's own deadline
// (timeout), the caller's deadline, or the caller's cancellation.
func ContextOutcome(ctx, callCtx context.Context, timeout time.Duration) Outcome {
	if errors.Is(context.Cause(callCtx), errToolTimeout) {
		return Failure(CategoryTimeout, "tool timed out after %s", timeout)
	}
	err := ctx.Err()
	if err == nil {
		err = callCtx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Failure(CategoryTimeout, "call cancelled: %v", err)
	}
	return Failure(CategoryExecution, "call cancelled: %v", err)
}
