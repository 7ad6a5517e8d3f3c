package telemetry

import (
	"context"
	"net"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// StartHTTPServer opens the SERVER span of an incoming request, continuing
// the trace of its traceparent header, and returns the context to serve it
// with (its logger carries trace_id and span_id). end names the span after
// the route template that matched ("POST /route", as the HTTP conventions
// say) and records the status; route "" leaves the method alone.
func (t *Telemetry) StartHTTPServer(r *http.Request) (ctx context.Context, end func(route string, status int)) {
	if !t.Enabled() {
		return r.Context(), func(string, int) {}
	}
	ctx = t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	ctx, span := t.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("http.request.method", r.Method),
		attribute.String("url.path", r.URL.Path),
		attribute.String("url.scheme", scheme),
		attribute.String("network.protocol.version", strconv.Itoa(r.ProtoMajor)+"."+strconv.Itoa(r.ProtoMinor)),
		attribute.String("user_agent.original", r.UserAgent()),
	))
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		span.SetAttributes(attribute.String("client.address", host))
	}
	return withLogIDs(ctx, span), func(route string, status int) {
		if route != "" {
			span.SetName(r.Method + " " + route)
			span.SetAttributes(attribute.String("http.route", route))
		}
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= 500 { // a 4xx is the client's error, not the server's
			span.SetStatus(codes.Error, "")
			span.SetAttributes(attribute.String("error.type", strconv.Itoa(status)))
		}
		span.End()
	}
}

// Transport wraps an outgoing http.RoundTripper (to HTTP tools, LLM
// providers, MCP servers): each request gets a CLIENT span, and carries its
// context in traceparent/tracestate. With tracing off it returns base.
func (t *Telemetry) Transport(base http.RoundTripper) http.RoundTripper {
	if !t.Enabled() {
		return base
	}
	return &transport{t: t, base: base}
}

type transport struct {
	t    *Telemetry
	base http.RoundTripper
}

func (tr *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	attrs := []attribute.KeyValue{
		attribute.String("server.address", r.URL.Hostname()),
	}
	if p := r.URL.Port(); p != "" {
		if n, err := strconv.Atoi(p); err == nil {
			attrs = append(attrs, attribute.Int("server.port", n))
		}
	}
	recordRPC(r, attrs)
	attrs = append(attrs, attribute.String("http.request.method", r.Method), attribute.String("url.full", redacted(r)))
	ctx, span := tr.t.tracer.Start(r.Context(), r.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	r2 := r.Clone(ctx) // a RoundTripper must not modify the request it is given
	tr.t.prop.Inject(ctx, propagation.HeaderCarrier(r2.Header))
	resp, err := tr.base.RoundTrip(r2)
	if err != nil {
		fail(span, "_OTHER", err.Error())
		return resp, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 400 {
		fail(span, strconv.Itoa(resp.StatusCode), "")
	}
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the wrapped transport.
func (tr *transport) CloseIdleConnections() {
	if ci, ok := tr.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// redacted is the request URL without userinfo and query (where keys
// travel).
func redacted(r *http.Request) string {
	u := *r.URL
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
