// Package mcpclient makes the tools of MCP servers (the registry's
// mcp_servers, CONTRACT §3) tools of toolrouterd: it keeps one session per
// server over the streamable HTTP transport (official Go SDK), discovers
// the servers' tools with tools/list at start, on reload and on
// notifications/tools/list_changed, and executes calls with tools/call.
// It is the router's executor for tools whose MCPServer is set; the
// servers it is given (toolrouter.MCPServer) come from the caller, so it
// imports neither the registry nor the HTTP executor.
//
// A server that is down never blocks the others or startup: its known
// tools fail with category resource while a background loop reconnects
// with exponential backoff.
package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/outbound"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Defaults of the Manager's timing.
const (
	// defaultSyncWait bounds how long Sync waits for the servers' first
	// connection (or rediscovery) before returning.
	defaultSyncWait = 5 * time.Second
	// defaultBackoffMin and defaultBackoffMax bound the wait between
	// reconnection attempts (doubling, jittered by ±20%).
	defaultBackoffMin = 500 * time.Millisecond
	defaultBackoffMax = 30 * time.Second
	// defaultTimeout is the per-call timeout when neither the tool nor the
	// server has one.
	defaultTimeout = 30 * time.Second
	// keepAlive is the interval of the pings that detect a dead session
	// between calls.
	keepAlive = 30 * time.Second
	// minRediscovery is the least time between two discoveries of a
	// server on one session (issue 32 finding 3: a server announcing a
	// change all the time).
	minRediscovery = time.Second
)

// Manager keeps the sessions with the registry's MCP servers. Create it
// with New; it is safe for concurrent use.
type Manager struct {
	log        zerolog.Logger
	rawLog     zerolog.Logger // without component, for stdio servers' stderr
	base       http.RoundTripper
	up         *prometheus.GaugeVec
	reconnects *prometheus.CounterVec
	// limitedDiscoveries counts the discoveries stopped at a limit.
	limitedDiscoveries *prometheus.CounterVec

	// Limits bound every server's discovery (zero fields: the defaults);
	// set before the first Sync.
	Limits DiscoveryLimits

	syncWait time.Duration
	backoff  outbound.Backoff // between reconnection attempts
	// sdkCalls sends every tools/call through the SDK, never the hot path
	// (fastcall.go): sdkOnly in production, set by tests.
	sdkCalls bool

	syncMu sync.Mutex // serializes Sync and Close

	mu       sync.Mutex
	servers  []*server // in registry order
	onChange []func()
	closed   bool

	notifyMu sync.Mutex // serializes the OnChange hooks

	// Trace, when set before the first Sync, traces every server's
	// tools/call (telemetry.Telemetry.MCPClient) and HTTP requests.
	Trace     mcp.Middleware
	TraceHTTP func(http.RoundTripper) http.RoundTripper

	tokens     atomic.Uint64
	progressMu sync.Mutex
	progress   map[string]*progressSink
}

// New returns a Manager with no servers; Sync gives it some. Its metrics,
// toolrouter_mcp_server_up{server} and
// toolrouter_mcp_reconnects_total{server,result}, are registered on reg
// (nil: not registered).
func New(log zerolog.Logger, reg prometheus.Registerer) *Manager {
	m := &Manager{
		log:    log.With().Str("component", "mcpclient").Logger(),
		rawLog: log,
		base:   outbound.NewTransport(), // shared by every server
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "toolrouter_mcp_server_up",
			Help: "Whether toolrouterd has a live session with the MCP server (1) or not (0).",
		}, []string{"server"}),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolrouter_mcp_reconnects_total",
			Help: "Attempts to reconnect to an MCP server after its session was lost or it could not be reached, by result (ok or error).",
		}, []string{"server", "result"}),
		limitedDiscoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolrouter_mcp_discovery_limited_total",
			Help: "Discoveries of an MCP server's tools stopped at a limit (pages, tools or bytes); its last good listing was kept.",
		}, []string{"server", "limit"}),
		syncWait: defaultSyncWait,
		sdkCalls: sdkOnly,
		backoff:  outbound.Backoff{Base: defaultBackoffMin, Max: defaultBackoffMax, Jitter: 0.2},
		progress: map[string]*progressSink{},
	}
	if reg != nil {
		m.up = register(reg, m.up)
		m.reconnects = register(reg, m.reconnects)
		m.limitedDiscoveries = register(reg, m.limitedDiscoveries)
	}
	return m
}

func (m *Manager) limits() DiscoveryLimits { return m.Limits.withDefaults() }

// register registers c, or returns the collector already registered
// under its name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// OnChange adds a hook called after the set of discovered tools may have
// changed: at the end of every Sync, and when a server's tools change (a
// notifications/tools/list_changed, a reconnection). Hooks are called one
// at a time, never with a Manager lock held, so a hook may call Tools.
func (m *Manager) OnChange(fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onChange = append(m.onChange, fn)
}

func (m *Manager) changed() {
	m.mu.Lock()
	hooks := slices.Clone(m.onChange)
	m.mu.Unlock()
	m.notifyMu.Lock()
	defer m.notifyMu.Unlock()
	for _, fn := range hooks {
		fn()
	}
}

// Sync makes the Manager's servers those of the registry: it connects to
// new servers (starting stdio servers' processes), disconnects from
// removed ones (stopping their processes), reconnects to servers whose
// URL, headers, command, env or cwd changed, and rediscovers the tools of the others. It
// waits a little (at most a few seconds, and never past ctx) for the first
// connection or rediscovery of each server, so that the tools of servers
// that answer are known when it returns; a server that is down or slow
// goes on connecting in the background.
func (m *Manager) Sync(ctx context.Context, servers []toolrouter.MCPServer) {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	old := map[string]*server{}
	for _, s := range m.servers {
		old[s.name] = s
	}
	var next, stop, start []*server
	var waits []<-chan struct{}
	seen := map[string]bool{}
	for _, cfg := range servers {
		if seen[cfg.Name] { // the registry rejects duplicates; be safe
			continue
		}
		seen[cfg.Name] = true
		if s := old[cfg.Name]; s != nil {
			delete(old, cfg.Name)
			if s.sameConnection(cfg) {
				s.reconfigure(cfg)
				waits = append(waits, s.refresh())
				next = append(next, s)
				continue
			}
			stop = append(stop, s)
		}
		s := newServer(m, cfg)
		waits = append(waits, s.firstRound())
		next = append(next, s)
		start = append(start, s)
	}
	for _, s := range old {
		stop = append(stop, s)
	}
	m.servers = next
	m.mu.Unlock()

	for _, s := range stop {
		s.stop()
	}
	for _, s := range start {
		s.start()
	}
	timer := time.NewTimer(m.syncWait)
	defer timer.Stop()
wait:
	for _, ch := range waits {
		select {
		case <-ch:
		case <-timer.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	m.changed()
}

// Tools returns the tools of every server's last successful discovery
// (those of a server that is down included), in registry order and then
// in the server's order. They are shared and must not be modified.
func (m *Manager) Tools() []*toolrouter.Tool {
	m.mu.Lock()
	servers := slices.Clone(m.servers)
	m.mu.Unlock()
	var out []*toolrouter.Tool
	for _, s := range servers {
		out = append(out, s.currentTools()...)
	}
	return out
}

// Refresh asks server name for a rediscovery of its tools (a
// reconnection when it is down) without waiting for it; OnChange hooks
// run if its tools changed.
func (m *Manager) Refresh(name string) {
	if s := m.server(name); s != nil {
		s.poke()
	}
}

// Close disconnects from every server. Calls still running fail.
func (m *Manager) Close() {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	m.mu.Lock()
	servers := m.servers
	m.servers = nil
	m.closed = true
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.stop)
	}
	wg.Wait()
}

func (m *Manager) server(name string) *server {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.servers {
		if s.name == name {
			return s
		}
	}
	return nil
}

// Call executes a call of an MCP-backed tool (req.Tool.MCPServer set) with
// tools/call on its server's session. See server.call for the outcomes.
func (m *Manager) Call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	t := req.Tool
	if t == nil || t.MCPServer == "" {
		return toolrouter.Failure(toolrouter.CategoryExecution, "not a tool of an MCP server")
	}
	if t.Kind == toolrouter.KindSkill {
		return toolrouter.Failure(toolrouter.CategoryNotFound, "%s is a skill: read it over /mcp (skills/get, resources/read), it is not called", t.Name)
	}
	s := m.server(t.MCPServer)
	if s == nil {
		return toolrouter.Failure(toolrouter.CategoryNotFound, "MCP server %q is not configured", t.MCPServer)
	}
	return s.call(ctx, req)
}

// progressSink forwards a call's progress notifications to its
// toolrouter.ExecRequest.Progress until the call returns.
type progressSink struct {
	mu     sync.Mutex
	fn     func(progress, total float64, message string)
	closed bool
}

// watchProgress registers fn for a new progress token; stop unregisters
// it and returns only once fn is no longer running and will not be called
// again.
func (m *Manager) watchProgress(fn func(progress, total float64, message string)) (token string, stop func()) {
	token = "toolrouterd-" + strconv.FormatUint(m.tokens.Add(1), 10)
	sink := &progressSink{fn: fn}
	m.progressMu.Lock()
	m.progress[token] = sink
	m.progressMu.Unlock()
	return token, func() {
		m.progressMu.Lock()
		delete(m.progress, token)
		m.progressMu.Unlock()
		sink.mu.Lock()
		sink.closed = true
		sink.mu.Unlock()
	}
}

// progressEvent forwards a server-sent event that is a
// notifications/progress for a running call to the call's Progress. The
// servers' transports call it as the SDK reads the events (see sseTap), so
// a call's progress is forwarded before its result arrives.
func (m *Manager) progressEvent(data []byte) {
	if !bytes.Contains(data, []byte(`"notifications/progress"`)) {
		return
	}
	var n struct {
		Method string                         `json:"method"`
		Params mcp.ProgressNotificationParams `json:"params"`
	}
	if json.Unmarshal(data, &n) != nil || n.Method != "notifications/progress" {
		return
	}
	token, ok := n.Params.ProgressToken.(string)
	if !ok {
		return
	}
	m.progressMu.Lock()
	sink := m.progress[token]
	m.progressMu.Unlock()
	if sink == nil {
		return
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if !sink.closed {
		sink.fn(n.Params.Progress, n.Params.Total, n.Params.Message)
	}
}

// traced is the base transport, wrapped by TraceHTTP when set.
func (m *Manager) traced() http.RoundTripper {
	if m.TraceHTTP != nil {
		return m.TraceHTTP(m.base)
	}
	return m.base
}
