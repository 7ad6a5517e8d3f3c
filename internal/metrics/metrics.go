// Package metrics holds toolrouterd's Prometheus collectors, registered on a
// registry of their own (no global state).
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
)

// Metrics are the service's collectors.
type Metrics struct {
	reg          *prometheus.Registry
	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	toolCalls    *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec
	reloads      *prometheus.CounterVec
	rateLimited  *prometheus.CounterVec
	inflight     prometheus.Gauge
	runs         *prometheus.CounterVec
	storeErrors  *prometheus.CounterVec
	storeUp      prometheus.Gauge
	storeLost    *prometheus.CounterVec

	// The children of the per-call vectors, looked up once per label set
	// rather than on every call.
	toolChildren childCache[toolKey, toolChildren]
	httpChildren childCache[httpKey, httpChildren]
}

type toolKey struct{ client, tool, outcome string }

type toolChildren struct {
	calls    prometheus.Counter
	duration prometheus.Observer
}

type httpKey struct {
	route, method string
	status        int
}

type httpChildren struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// maxCachedChildren bounds each child cache: label sets past it (say,
// made-up HTTP methods) are looked up in their vector on every call.
const maxCachedChildren = 512

// childCache maps label values to the vector children they select. Reads
// are lock-free lookups in an immutable map; a miss copies the map. The
// vectors keep their children for good (nothing deletes them), so a cached
// child stays the one the vector would return.
type childCache[K comparable, V any] struct {
	m  atomic.Pointer[map[K]V]
	mu sync.Mutex
}

// get returns the children for k, from lookup on a miss. A lookup that
// panics (invalid label values) caches nothing.
func (c *childCache[K, V]) get(k K, lookup func(K) V) V {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	v := lookup(k)
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil && len(*old) >= maxCachedChildren {
		return v
	}
	m := make(map[K]V, 1+len(ptrMap(old)))
	for k, v := range ptrMap(old) {
		m[k] = v
	}
	m[k] = v
	c.m.Store(&m)
	return v
}

func ptrMap[K comparable, V any](p *map[K]V) map[K]V {
	if p == nil {
		return nil
	}
	return *p
}

// New creates and registers the collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolrouter_http_requests_total",
			Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolrouter_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern and method.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"route", "method"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolrouter_tool_calls_total",
			Help: "Routed tool calls by client (a configured client name; empty when the service is open), tool and outcome (success or error category).",
		}, []string{"client", "tool", "outcome"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolrouter_tool_call_duration_seconds",
			Help:    "Tool call latency (normalization to result) by tool.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"tool"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolrouter_registry_reloads_total",
			Help: "Registry reloads by result (ok or error).",
		}, []string{"result"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolrouter_rate_limited_calls_total",
			Help: "Tool calls refused because their client was over its rate limit, by client.",
		}, []string{"client"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "toolrouter_http_requests_in_flight",
			Help: "HTTP requests being served.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolrouter_runs_total",
			Help: "Finished /runs runs by final status.",
		}, []string{"status"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolrouter_store_errors_total",
			Help: "Store calls that failed (not counting not-found and conflict answers), by operation.",
		}, []string{"operation"}),
		storeLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolrouter_store_lost_records_total",
			Help: "Records written behind (results, audit records, spend ledger entries) lost because their group commit failed, by kind.",
		}, []string{"kind"}),
		storeUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "toolrouter_store_up",
			Help: "Whether the store answered the last readiness check (1) or not (0).",
		}),
	}
	for _, st := range []string{"completed", "terminated", "failed", "interrupted", "cancelled"} {
		m.runs.WithLabelValues(st) // exported from 0
	}
	m.reg.MustRegister(m.httpRequests, m.httpDuration, m.toolCalls, m.toolDuration, m.reloads, m.rateLimited, m.inflight, m.runs, m.storeErrors, m.storeUp, m.storeLost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// StoreOps exports toolrouter_store_errors_total of each operation from 0,
// so that rate() sees the first error.
func (m *Metrics) StoreOps(ops ...string) {
	for _, op := range ops {
		m.storeErrors.WithLabelValues(op)
	}
	for _, kind := range []string{"result", "audit"} {
		m.storeLost.WithLabelValues(kind)
	}
}

// StoreError counts one failed store call of operation op.
func (m *Metrics) StoreError(op string) { m.storeErrors.WithLabelValues(op).Inc() }

// StoreLost counts n records of kind lost by a failed group commit
// (toolrouter_store_lost_records_total).
func (m *Metrics) StoreLost(kind string, n int) { m.storeLost.WithLabelValues(kind).Add(float64(n)) }

// StoreUp sets toolrouter_store_up: whether the store answered the last
// readiness check.
func (m *Metrics) StoreUp(up bool) {
	if up {
		m.storeUp.Set(1)
	} else {
		m.storeUp.Set(0)
	}
}

// Handler serves the metrics in the Prometheus text format, or in
// OpenMetrics (with the tool-call exemplars) to a scraper that asks for it.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Registerer lets other packages add collectors of their own.
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// HTTPRequest records one served request.
func (m *Metrics) HTTPRequest(route, method string, status int, d time.Duration) {
	c := m.httpChildren.get(httpKey{route, method, status}, m.lookupHTTP)
	c.requests.Inc()
	c.duration.Observe(d.Seconds())
}

func (m *Metrics) lookupHTTP(k httpKey) httpChildren {
	return httpChildren{
		requests: m.httpRequests.WithLabelValues(k.route, k.method, strconv.Itoa(k.status)),
		duration: m.httpDuration.WithLabelValues(k.route, k.method),
	}
}

// InFlight adjusts the in-flight request gauge by delta.
func (m *Metrics) InFlight(delta float64) { m.inflight.Add(delta) }

// ToolCall records one routed tool call of a client. client must be a
// configured client name (or ""), so the label stays bounded. When ctx
// holds a sampled span, its latency carries the trace id as an exemplar, so
// that a slow bucket on the dashboard leads to a trace.
func (m *Metrics) ToolCall(ctx context.Context, client, tool, outcome string, d time.Duration) {
	c := m.toolChildren.get(toolKey{client, tool, outcome}, m.lookupTool)
	c.calls.Inc()
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		if eo, ok := c.duration.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(d.Seconds(), prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	c.duration.Observe(d.Seconds())
}

// RunFinished records a /runs run that ended with status.
func (m *Metrics) RunFinished(status string) { m.runs.WithLabelValues(status).Inc() }

func (m *Metrics) lookupTool(k toolKey) toolChildren {
	return toolChildren{
		calls:    m.toolCalls.WithLabelValues(k.client, k.tool, k.outcome),
		duration: m.toolDuration.WithLabelValues(k.tool),
	}
}

// RateLimited records calls tool calls of a configured client refused by
// its rate limit.
func (m *Metrics) RateLimited(client string, calls int) {
	m.rateLimited.WithLabelValues(client).Add(float64(calls))
}

// Reload records a registry reload.
func (m *Metrics) Reload(ok bool) {
	r := "ok"
	if !ok {
		r = "error"
	}
	m.reloads.WithLabelValues(r).Inc()
}
