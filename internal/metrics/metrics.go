// Package metrics holds toolrouterd's Prometheus collectors, registered on a
// registry of their own (no global state).
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the service's collectors.
type Metrics struct {
	reg          *prometheus.Registry
	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	toolCalls    *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec
	reloads      *prometheus.CounterVec
	inflight     prometheus.Gauge
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
			Help: "Routed tool calls by tool and outcome (success or error category).",
		}, []string{"tool", "outcome"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolrouter_tool_call_duration_seconds",
			Help:    "Tool call latency (normalization to result) by tool.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"tool"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolrouter_registry_reloads_total",
			Help: "Registry reloads by result (ok or error).",
		}, []string{"result"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "toolrouter_http_requests_in_flight",
			Help: "HTTP requests being served.",
		}),
	}
	m.reg.MustRegister(m.httpRequests, m.httpDuration, m.toolCalls, m.toolDuration, m.reloads, m.inflight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registerer lets other packages add collectors of their own.
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// HTTPRequest records one served request.
func (m *Metrics) HTTPRequest(route, method string, status int, d time.Duration) {
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(d.Seconds())
}

// InFlight adjusts the in-flight request gauge by delta.
func (m *Metrics) InFlight(delta float64) { m.inflight.Add(delta) }

// ToolCall records one routed tool call.
func (m *Metrics) ToolCall(tool, outcome string, d time.Duration) {
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
	m.toolDuration.WithLabelValues(tool).Observe(d.Seconds())
}

// Reload records a registry reload.
func (m *Metrics) Reload(ok bool) {
	r := "ok"
	if !ok {
		r = "error"
	}
	m.reloads.WithLabelValues(r).Inc()
}
