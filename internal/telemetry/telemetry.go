// Package telemetry is toolrouterd's OpenTelemetry tracing, set up in one
// place from the standard OTEL_* variables (docs/observability.md "Tracing,
// dashboard and alerts"), and the spans the rest of the service opens
// through it.
//
// Span names and attributes follow the OpenTelemetry semantic conventions
// v1.41.0 (development status): docs/gen-ai/gen-ai-spans.md (execute_tool,
// chat), gen-ai-agent-spans.md (invoke_agent) and mcp.md (tools/call, trace
// context in params._meta), the last version before the GenAI conventions
// moved to their own repository; HTTP spans follow docs/http (stable).
//
// With OTEL_TRACES_EXPORTER unset or "none" no exporter and no SDK run: every
// method returns at once and the hot path pays one nil check. A nil
// *Telemetry is valid and traces nothing.
package telemetry

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation is the instrumentation scope of every span.
const instrumentation = "github.com/toolrouterd/toolrouterd"

// Telemetry opens spans and carries trace context. Create it with Setup.
type Telemetry struct {
	tp      *sdktrace.TracerProvider // nil: tracing off
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	content bool // TOOLROUTER_TRACE_CONTENT: arguments and results on spans
	store   bool // TOOLROUTER_TRACE_STORE: a span per store call
}

// Setup reads the tracing configuration: OTEL_TRACES_EXPORTER (none, the
// default, or otlp), OTEL_EXPORTER_OTLP_PROTOCOL or _TRACES_PROTOCOL
// (http/protobuf, the default, or grpc), TOOLROUTER_TRACE_CONTENT and
// TOOLROUTER_TRACE_STORE. The
// exporters read their endpoint, headers and timeouts
// (OTEL_EXPORTER_OTLP_*), the SDK its sampler (OTEL_TRACES_SAMPLER, _ARG)
// and batching (OTEL_BSP_*), and the resource OTEL_SERVICE_NAME (default
// toolrouterd) and OTEL_RESOURCE_ATTRIBUTES from the process environment.
// Errors name the variable at fault.
func Setup(ctx context.Context, getenv func(string) string) (*Telemetry, error) {
	t := &Telemetry{}
	for name, dst := range map[string]*bool{"TOOLROUTER_TRACE_CONTENT": &t.content, "TOOLROUTER_TRACE_STORE": &t.store} {
		if v := getenv(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%s: want true or false, got %q", name, v)
			}
			*dst = b
		}
	}
	switch e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e {
	case "", "none":
		return t, nil
	case "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: unsupported %q (want none or otlp)", e)
	}
	protoVar := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	proto := getenv(protoVar)
	if proto == "" {
		protoVar, proto = "OTEL_EXPORTER_OTLP_PROTOCOL", getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch proto {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%s: unsupported %q (want http/protobuf or grpc)", protoVar, proto)
	}
	if err != nil {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_*: %w", err)
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the default name.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "toolrouterd")),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// The sampler comes from OTEL_TRACES_SAMPLER (default parentbased_always_on).
	t.start(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)))
	return t, nil
}

// Exporting is tracing on, every trace sampled, the spans batched to exp
// as Setup's are to the OTLP exporter; store spans too when store is set.
// Benchmarks and tests use it with an exporter of their own.
func Exporting(exp sdktrace.SpanExporter, store bool) *Telemetry {
	t := &Telemetry{store: store}
	t.start(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sdktrace.AlwaysSample())))
	return t
}

func (t *Telemetry) start(tp *sdktrace.TracerProvider) {
	t.tp = tp
	t.tracer = tp.Tracer(instrumentation)
	t.prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// Enabled says whether spans are recorded and exported.
func (t *Telemetry) Enabled() bool { return t != nil && t.tp != nil }

// Shutdown flushes the spans not yet exported and stops the exporter.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// withLogIDs attaches to ctx a logger (the one already there) carrying the
// trace and span ids of span, so that every log line of a traced request
// leads to its trace.
func withLogIDs(ctx context.Context, span trace.Span) context.Context {
	sc := span.SpanContext()
	if !sc.IsValid() {
		return ctx
	}
	l := zerolog.Ctx(ctx).With().Str("trace_id", sc.TraceID().String()).Str("span_id", sc.SpanID().String()).Logger()
	return l.WithContext(ctx)
}

// fail marks span as failed with errType as its error.type.
func fail(span trace.Span, errType, msg string) {
	span.SetAttributes(attribute.String("error.type", errType))
	span.SetStatus(codes.Error, msg)
}
