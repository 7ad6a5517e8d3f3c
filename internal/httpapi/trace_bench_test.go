package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolrouterd/toolrouterd/internal/httpapi"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/router"
	"github.com/toolrouterd/toolrouterd/internal/telemetry"
)

// countingExporter is an in-memory span exporter that keeps only a count,
// so that a long benchmark does not grow without bound.
type countingExporter struct{ n atomic.Int64 }

func (e *countingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.n.Add(int64(len(spans)))
	return nil
}
func (*countingExporter) Shutdown(context.Context) error { return nil }

// BenchmarkRouteTracing is issue 11's overhead figure: BenchmarkRouteHTTP's
// OpenAI call with no Telemetry at all (nil), with telemetry.Setup and
// OTEL_TRACES_EXPORTER unset (off: the default, which must cost nothing,
// 0 allocations more than nil), and with every trace sampled and exported
// through the batcher to an in-memory exporter (on: server, execute_tool
// and tool request spans per call).
func BenchmarkRouteTracing(b *testing.B) {
	off, err := telemetry.Setup(context.Background(), func(string) string { return "" })
	if err != nil || off.Enabled() {
		b.Fatalf("tracing off: %v", err)
	}
	exp := &countingExporter{}
	on := telemetry.Exporting(exp, false)
	b.Cleanup(func() { _ = on.Shutdown(context.Background()) })
	for _, tc := range []struct {
		name string
		tel  *telemetry.Telemetry
	}{{"nil", nil}, {"off", off}, {"on", on}} {
		b.Run(tc.name, func(b *testing.B) {
			h := tracedHandler(b, tc.tel)
			body := []byte(routeBodies[0].body)
			checkRoute(b, h, body, routeBodies[0].format)
			c := newBenchClient(h, body)
			b.ReportAllocs()
			for b.Loop() {
				doRoute(b, c)
			}
		})
	}
	if err := on.Shutdown(context.Background()); err != nil || exp.n.Load() == 0 {
		b.Fatalf("tracing on exported %d spans (%v)", exp.n.Load(), err)
	}
}

// tracedHandler is newBenchHandler's handler with tel as its Telemetry, on
// the HTTP server, the router and the tool client as the service wires it
// (nil: none at all).
func tracedHandler(tb testing.TB, tel *telemetry.Telemetry) http.Handler {
	var opts func(*router.Options)
	if tel != nil {
		opts = func(o *router.Options) {
			o.Tracer = tel
			o.Exec = remote.New(remote.Options{Transport: echoTransport{}, Wrap: tel.Transport})
		}
	}
	return newServerWith(tb, opts, func(d *httpapi.Deps) {
		d.Logger = zerolog.New(io.Discard).Level(zerolog.InfoLevel)
		if tel != nil {
			d.Tracer = tel
		}
	}).h
}

// TestTracingOffCostsNoAllocations: with tracing set up but off (the
// default), a route allocates exactly what it does with no Telemetry.
func TestTracingOffCostsNoAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not exact under the race detector")
	}
	off, err := telemetry.Setup(context.Background(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(routeBodies[0].body)
	allocs := func(tel *telemetry.Telemetry) float64 {
		c := newBenchClient(tracedHandler(t, tel), body)
		return testing.AllocsPerRun(1000, func() {
			doRoute(t, c)
		})
	}
	if none, offAllocs := allocs(nil), allocs(off); offAllocs != none {
		t.Errorf("a route allocates %v times with tracing off, %v without Telemetry", offAllocs, none)
	}
}
