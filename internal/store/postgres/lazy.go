package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/outbound"
)

// connectBackoff spaces the attempts to reach a server that is down at
// start: 250 ms doubling to 15 s, jittered.
var connectBackoff = outbound.Backoff{Base: 250 * time.Millisecond, Max: 15 * time.Second, Jitter: 0.2}

// connecting is the state of a store opened by OpenLazy until its
// migrations are applied.
type connecting struct {
	mu      sync.Mutex
	last    error // nil once connected
	cancel  context.CancelFunc
	done    chan struct{}
	onRetry func(attempt int, err error)
}

// OpenLazy is Open for a service that must start while PostgreSQL is
// down (docs/operations.md "Running one node or several replicas"): it makes one
// attempt (at most firstAttempt), and if that fails returns anyway (an
// error only for a malformed URL), then connects and applies the
// migrations in the background, retrying with backoff. Until then Ping
// fails (/readyz answers 503) and every other call fails as the server
// being unreachable (503 with Retry-After). onRetry (may be nil) hears
// each failed attempt.
func OpenLazy(url string, onRetry func(attempt int, err error)) (*Store, error) {
	p, err := open(context.Background(), url, true)
	if err != nil {
		return nil, err
	}
	// The first attempt before returning: a server that is up is ready
	// when the service starts listening.
	actx, acancel := context.WithTimeout(context.Background(), firstAttempt)
	err = p.migrate(actx)
	acancel()
	ctx, cancel := context.WithCancel(context.Background())
	p.conn = &connecting{last: err, cancel: cancel, done: make(chan struct{}), onRetry: onRetry}
	if err == nil {
		close(p.conn.done)
		return p, nil
	}
	if onRetry != nil {
		onRetry(1, err)
	}
	go p.connect(ctx)
	return p, nil
}

// firstAttempt bounds the attempt to connect made before OpenLazy returns.
const firstAttempt = 5 * time.Second

func (p *Store) connect(ctx context.Context) {
	defer close(p.conn.done)
	for attempt := 2; ; attempt++ {
		if outbound.Sleep(ctx, connectBackoff.Delay(attempt-1)) != nil {
			return
		}
		actx, cancel := context.WithTimeout(ctx, pgDefaultConnectTimeout)
		err := p.migrate(actx)
		cancel()
		p.conn.mu.Lock()
		p.conn.last = err
		p.conn.mu.Unlock()
		if err == nil || ctx.Err() != nil {
			return
		}
		if p.conn.onRetry != nil {
			p.conn.onRetry(attempt, err)
		}
	}
}

// err is why the store is not usable yet (nil once connected, and always
// for a store opened by Open).
func (c *connecting) err() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil {
		return fmt.Errorf("postgres store: not ready: %w", c.last)
	}
	return nil
}

// stop ends the background connection attempts.
func (c *connecting) stop() {
	if c == nil {
		return
	}
	c.cancel()
	<-c.done
}
