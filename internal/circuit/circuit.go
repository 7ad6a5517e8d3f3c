// Package circuit guards tool backends with circuit breakers (docs/operations.md
// "Circuit breakers"): after a number of consecutive connection failures
// or timeouts of one HTTP tool host or one MCP server, its calls fail fast
// as resource for a cool-down; then one trial call goes through (half
// open), and closes the circuit if it reaches the backend. Each replica
// keeps its own circuits: nothing is shared.
//
// The state machine is github.com/sony/gobreaker/v2's; this package says
// what a failure is, keys the breakers and reports them.
package circuit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Executor runs one call on a tool's backend (router.Executor).
type Executor interface {
	Call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome
}

// Breakers keeps a circuit breaker per backend: per HTTP tool endpoint
// host and per MCP server, with the settings of the tool (its server's for
// an MCP tool); tools of one host with different settings have a circuit
// each.
type Breakers struct {
	def    toolrouter.Circuit
	state  *prometheus.GaugeVec
	opened *prometheus.CounterVec

	mu     sync.Mutex
	byTool map[toolKey]*breaker // what a call looks up
	byHost map[hostKey]*breaker // the breakers themselves
}

type toolKey struct {
	server, endpoint string
	c                toolrouter.Circuit
}

type hostKey struct {
	kind, target string
	c            toolrouter.Circuit
}

type breaker struct {
	kind, target string
	c            toolrouter.Circuit
	cb           *gobreaker.TwoStepCircuitBreaker[struct{}]
	openedAt     atomic.Int64 // unix nanoseconds of the last opening
}

// New returns the breakers with def as the default setting, registering
// their metrics with reg (when not nil).
func New(def toolrouter.Circuit, reg prometheus.Registerer) *Breakers {
	b := &Breakers{def: def, byTool: map[toolKey]*breaker{}, byHost: map[hostKey]*breaker{},
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "toolrouter_circuit_state",
			Help: "State of a backend's circuit breaker: 0 closed, 1 half-open, 2 open."}, []string{"kind", "target"}),
		opened: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolrouter_circuit_opened_total",
			Help: "Times a backend's circuit breaker opened."}, []string{"kind", "target"}),
	}
	if reg != nil {
		reg.MustRegister(b.state, b.opened)
	}
	return b
}

// Wrap returns next with its calls guarded by the breakers.
func (b *Breakers) Wrap(next Executor) Executor { return guarded{b, next} }

type guarded struct {
	b    *Breakers
	next Executor
}

// The verdicts a call reports to its breaker.
var (
	errFailed   = errors.New("connection failure or timeout")
	errExcluded = errors.New("neither: the caller went away, or the call never left")
)

func (g guarded) Call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	br := g.b.breaker(req.Tool)
	if br == nil {
		return g.next.Call(ctx, req)
	}
	done, err := br.cb.Allow()
	if err != nil {
		return br.refusal(err)
	}
	out := g.next.Call(ctx, req)
	done(verdict(ctx, out))
	return out
}

// verdict is what out says of the backend: errFailed when it could not be
// reached or did not answer in time, errExcluded when the caller went away
// or the call never left, nil (success) when the backend answered, even
// with an error. An MCP call that found no session and sent nothing
// (Attempts 0) already failed at once: the server's supervisor reconnects
// with its own backoff, and counting it would only keep the circuit open
// after the server is back (a restarted stdio server).
func verdict(ctx context.Context, out toolrouter.Outcome) error {
	switch {
	case ctx.Err() != nil:
		return errExcluded
	case out.Success() || out.Answered || out.Status != 0:
		return nil
	case out.Category == toolrouter.CategoryTimeout,
		out.Category == toolrouter.CategoryResource && out.Attempts > 0:
		return errFailed
	}
	return errExcluded
}

// refusal is the failure of a call the open (or trying) circuit refused.
func (br *breaker) refusal(err error) toolrouter.Outcome {
	if errors.Is(err, gobreaker.ErrTooManyRequests) {
		return toolrouter.Failure(toolrouter.CategoryResource, "circuit open for %s: a trial call is in flight, retry after 1s", br.name())
	}
	left := br.c.Cooldown - time.Since(time.Unix(0, br.openedAt.Load()))
	return toolrouter.Failure(toolrouter.CategoryResource, "circuit open for %s after %d consecutive connection failures or timeouts, retry after %ds",
		br.name(), br.c.Failures, int(math.Ceil(max(left, time.Second).Seconds())))
}

func (br *breaker) name() string {
	if br.kind == "mcp" {
		return "MCP server " + br.target
	}
	return "tool endpoint host " + br.target
}

// breaker is the breaker of t's backend; nil when its circuit is off or
// its endpoint has no host.
func (b *Breakers) breaker(t *toolrouter.Tool) *breaker {
	if t == nil {
		return nil
	}
	c := t.Circuit.Or(b.def)
	if c.Off || c.Failures <= 0 || c.Cooldown <= 0 {
		return nil
	}
	tk := toolKey{server: t.MCPServer, endpoint: t.Endpoint, c: c}
	b.mu.Lock()
	defer b.mu.Unlock()
	if br, ok := b.byTool[tk]; ok {
		return br
	}
	hk := hostKey{kind: "mcp", target: t.MCPServer, c: c}
	if t.MCPServer == "" {
		u, err := url.Parse(t.Endpoint)
		if err != nil || u.Host == "" {
			return nil
		}
		hk.kind, hk.target = "http", u.Host
	}
	br, ok := b.byHost[hk]
	if !ok {
		br = b.newBreaker(hk)
		b.byHost[hk] = br
	}
	b.byTool[tk] = br
	return br
}

func (b *Breakers) newBreaker(hk hostKey) *breaker {
	br := &breaker{kind: hk.kind, target: hk.target, c: hk.c}
	failures := uint32(hk.c.Failures)
	br.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        hk.kind + " " + hk.target,
		MaxRequests: 1, // one trial call when half open
		Timeout:     hk.c.Cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsExcluded:  func(err error) bool { return errors.Is(err, errExcluded) },
		OnStateChange: func(_ string, _, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				br.openedAt.Store(time.Now().UnixNano())
				b.opened.WithLabelValues(hk.kind, hk.target).Inc()
			}
			b.state.WithLabelValues(hk.kind, hk.target).Set(stateValue(to))
		},
	})
	b.state.WithLabelValues(hk.kind, hk.target).Set(0)
	return br
}

func stateValue(s gobreaker.State) float64 {
	switch s {
	case gobreaker.StateHalfOpen:
		return 1
	case gobreaker.StateOpen:
		return 2
	}
	return 0
}

// Checks names each circuit that is not closed, with its state, for the
// details of /readyz ("circuit http 10.0.0.7:8080": "open, retry after
// 12s"); an open circuit does not make the replica unready.
func (b *Breakers) Checks() map[string]string {
	b.mu.Lock()
	brs := make([]*breaker, 0, len(b.byHost))
	for _, br := range b.byHost {
		brs = append(brs, br)
	}
	b.mu.Unlock()
	out := map[string]string{}
	for _, br := range brs {
		switch br.cb.State() {
		case gobreaker.StateOpen:
			left := br.c.Cooldown - time.Since(time.Unix(0, br.openedAt.Load()))
			out["circuit "+br.kind+" "+br.target] = fmt.Sprintf("open, retry after %ds", int(math.Ceil(max(left, time.Second).Seconds())))
		case gobreaker.StateHalfOpen:
			out["circuit "+br.kind+" "+br.target] = "half-open"
		}
	}
	return out
}
