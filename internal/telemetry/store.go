package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// StoreSpans opens the span of one store call: a CLIENT span "store
// {operation}" with db.system.name (system: sqlite, postgresql, or memory,
// which the conventions do not list) and db.operation.name, per the stable
// database conventions (docs/db/database-spans.md, v1.41.0); end marks it
// failed (error.type _OTHER) when err is not nil.
type StoreSpans func(ctx context.Context, operation string) (_ context.Context, end func(err error))

// Store returns the store call spans when TOOLROUTER_TRACE_STORE=true and
// tracing is on, else nil: store calls are many and small, so they are
// traced only when debugging (docs/observability.md "Tracing, dashboard and alerts").
func (t *Telemetry) Store(system string) StoreSpans {
	if !t.Enabled() || !t.store {
		return nil
	}
	sys := attribute.String("db.system.name", system)
	return func(ctx context.Context, op string) (context.Context, func(error)) {
		ctx, span := t.tracer.Start(ctx, "store "+op, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(sys, attribute.String("db.operation.name", op)))
		return ctx, func(err error) {
			if err != nil {
				fail(span, "_OTHER", err.Error())
			}
			span.End()
		}
	}
}
