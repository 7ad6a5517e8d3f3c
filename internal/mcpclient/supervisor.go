package mcpclient

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by MCP 2026-07-28 (SEP-2577) and still served to servers of the older revisions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errSessionLost is why a server is down after it said it no longer knows
// the session.
var errSessionLost = errors.New("the server ended the session")

// run is the supervisor: connect, serve the session until it ends,
// reconnect with backoff.
func (s *server) run() {
	defer close(s.done)
	var delay time.Duration
	failures := 0 // connection attempts failed in a row
	for first := true; ; first = false {
		if delay > 0 && !s.backOff(delay) {
			return
		}
		s.mu.Lock()
		s.connecting, s.wanted = true, false
		s.mu.Unlock()
		cs, raw, stop, err := s.connect()
		if s.ctx.Err() != nil {
			if cs != nil {
				_ = cs.Close()
			}
			stop()
			return
		}
		if !first {
			result := "ok"
			if err != nil {
				result = "error"
			}
			s.m.reconnects.WithLabelValues(s.name, result).Inc()
		}
		keep := false
		if le := limited(err); le != nil {
			s.discoveryLimited(le)
			keep, err = cs != nil, nil
		}
		if err != nil {
			stop()
			s.attemptFailed(err)
			failures++
			delay = s.m.backoff.Delay(failures)
			continue
		}
		gen := s.setUp(cs, raw, keep)
		began := time.Now()
		err = s.serve(cs, gen)
		_ = cs.Close()
		stop()
		if s.ctx.Err() != nil {
			return
		}
		s.sessionEnded(gen, err)
		// Reconnect at once, unless sessions keep dying young (a stdio
		// server that crashes at once): then back off, longer each time.
		if time.Since(began) < time.Second {
			failures++
			delay = s.m.backoff.Delay(failures)
		} else {
			delay, failures = 0, 0
		}
	}
}

// backOff waits delay before the next connection attempt, unless a call
// asked for one (askAttempt) or the supervisor is kicked. It reports false
// when the server is stopped.
func (s *server) backOff(delay time.Duration) bool {
	s.mu.Lock()
	if s.wanted {
		s.mu.Unlock()
		return true
	}
	s.backingOff = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.backingOff = false
		s.mu.Unlock()
	}()
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-s.kick:
	case <-t.C:
	}
	return true
}

// askAttempt asks the supervisor of a server that is down for a
// connection attempt begun no earlier than now, at once (not after its
// backoff), and returns the number of connection attempts finished
// before that one, for awaitSession. Calls that ask meanwhile share the
// attempt. So a call never fails with the error of an attempt made before
// it: the server may be back since (it restarted while the supervisor
// found it down).
func (s *server) askAttempt() uint64 {
	s.mu.Lock()
	n := s.attempts
	kick := false
	if s.cs == nil {
		s.wanted = true
		if s.connecting {
			// The attempt under way may have begun before the server
			// was back: the one after it, which starts at once.
			n++
		}
		kick = s.backingOff
	}
	s.mu.Unlock()
	if kick {
		s.poke()
	}
	return n
}

// connect opens a session (starting the process of a stdio server) and
// discovers the tools, within the server's timeout. stop, never nil,
// stops the process once the session is over or could not be set up.
func (s *server) connect() (cs *mcp.ClientSession, raw []discovered, stop func(), err error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout())
	defer cancel()
	var t mcp.Transport = &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: s.http}
	stop = func() {}
	if len(s.command) > 0 {
		st := s.newStdioTransport()
		t, stop = st, st.stop
	}
	cs, err = s.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, stop, fmt.Errorf("connect: %w", err)
	}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Logging != nil {
		// Log messages of a call reach the /mcp caller that made it
		// (toolrouter.Relay), filtered by that caller's level.
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			s.m.log.Debug().Err(err).Str("mcp_server", s.name).Msg("MCP server refused logging/setLevel")
		}
	}
	raw, err = s.list(ctx, cs)
	if limited(err) != nil {
		// The session is sound, its listing too large: kept, with the
		// last good listing.
		return cs, nil, stop, err
	}
	if err != nil {
		_ = cs.Close()
		return nil, nil, stop, err
	}
	return cs, raw, stop, nil
}

// list runs tools/list over every page, within the Manager's discovery
// limits (a *limitError past one).
func (s *server) list(ctx context.Context, cs *mcp.ClientSession) ([]discovered, error) {
	lim := s.m.limits()
	budget := &readBudget{}
	budget.left.Store(lim.Bytes)
	ctx = withBudget(ctx, budget)
	var out []discovered
	seen := map[string]bool{}
	received := 0
	params := &mcp.ListToolsParams{}
	for page := 0; ; page++ {
		if page == lim.Pages {
			return nil, &limitError{limit: "pages", max: int64(lim.Pages)}
		}
		res, err := cs.ListTools(ctx, params)
		if budget.exceeded.Load() {
			return nil, &limitError{limit: "bytes", max: lim.Bytes}
		}
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if received += len(res.Tools); received > lim.Tools {
			return nil, &limitError{limit: "tools", max: int64(lim.Tools)}
		}
		for _, t := range res.Tools {
			if t == nil || seen[t.Name] {
				continue
			}
			seen[t.Name] = true
			out = append(out, newDiscovered(t))
		}
		if res.NextCursor == "" {
			out = readUIs(ctx, cs, out)
			if declaresSkills(cs) {
				skills, err := s.listSkills(ctx, cs, lim.Pages)
				if err != nil {
					return nil, err
				}
				for _, d := range skills {
					if !seen[d.tool.Name] {
						seen[d.tool.Name] = true
						out = append(out, d)
					}
				}
			}
			// Last: what is left of the byte budget is its.
			s.refreshCatalog(ctx, cs)
			return out, nil
		}
		if res.NextCursor == params.Cursor {
			return nil, fmt.Errorf("tools/list: the server repeats cursor %q", res.NextCursor)
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// discoveryLimited logs and counts a discovery stopped at a limit; the
// server's last good listing stays.
func (s *server) discoveryLimited(le *limitError) {
	s.m.limitedDiscoveries.WithLabelValues(s.name, le.limit).Inc()
	s.mu.Lock()
	kept := len(s.tools)
	s.mu.Unlock()
	s.m.log.Warn().Str("mcp_server", s.name).Str("limit", le.limit).Int64("max", le.max).Int("kept_tools", kept).
		Msg("MCP tool discovery stopped at a limit: the server's listing is too large; its last good listing is kept")
}

// serve waits until the session ends (the server closed it, a call found
// it broken) or the server is stopped, rediscovering the tools when
// kicked. It returns why the session ended.
func (s *server) serve(cs *mcp.ClientSession, gen uint64) error {
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	lost := func(err error) error {
		if err == nil {
			err = errors.New("the session was closed")
		}
		return fmt.Errorf("session lost: %w", err)
	}
	last := time.Now() // connect listed the tools
	for {
		select {
		case <-s.ctx.Done():
			return nil
		case err := <-ended:
			return lost(err)
		case <-s.kick:
			// At most one discovery per minRediscovery: a server that
			// says its list changed all the time is listed once a second
			// (kicks meanwhile are one).
			if wait := minRediscovery - time.Since(last); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-s.ctx.Done():
					t.Stop()
					return nil
				case err := <-ended:
					t.Stop()
					return lost(err)
				case <-t.C:
				}
			}
			last = time.Now()
			if broken, err := s.broken(gen); broken {
				return err
			}
			ctx, cancel := context.WithTimeout(s.ctx, s.timeout())
			raw, err := s.list(ctx, cs)
			cancel()
			if s.ctx.Err() != nil {
				return nil
			}
			if le := limited(err); le != nil {
				s.discoveryLimited(le)
				s.mu.Lock()
				s.nextRound()
				s.mu.Unlock()
				continue // the session ends next if the SDK gave it up
			}
			if err != nil {
				if serverError(err) != nil {
					// The server answered: keep the session and the tools.
					s.m.log.Warn().Str("mcp_server", s.name).Str("error", s.scrub(err)).Msg("MCP tool rediscovery failed")
					s.mu.Lock()
					s.nextRound()
					s.mu.Unlock()
					continue
				}
				return err
			}
			s.setTools(raw)
		}
	}
}

// broken reports whether the session gen was given up by a call.
func (s *server) broken(gen uint64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen == gen && s.cs != nil {
		return false, nil
	}
	return true, s.err
}

// setUp takes the new session cs and its discovery raw (keep: the last
// good listing stays, this one was over a limit).
func (s *server) setUp(cs *mcp.ClientSession, raw []discovered, keep bool) uint64 {
	s.mu.Lock()
	s.gen++
	gen := s.gen
	s.cs, s.sid, s.err = cs, cs.ID(), nil
	s.attempts++
	s.connecting = false
	changed := false
	if !keep {
		s.raw, s.listed = raw, true
		changed = s.rebuild()
	}
	n := len(s.tools)
	wasDown := s.downLogged
	s.downLogged = false
	// Set before the round ends: a Sync it wakes sees the server up.
	s.m.up.WithLabelValues(s.name).Set(1)
	s.nextRound()
	s.mu.Unlock()
	ev := s.m.log.Info()
	if !wasDown && gen > 1 {
		ev = s.m.log.Debug() // a quiet session renewal
	}
	ev.Str("mcp_server", s.name).Int("tools", n).Int("offered", len(raw)).Msg("MCP server connected")
	if changed {
		s.m.changed()
	}
	return gen
}

func (s *server) setTools(raw []discovered) {
	s.mu.Lock()
	s.raw, s.listed = raw, true
	changed := s.rebuild()
	n := len(s.tools)
	s.nextRound()
	s.mu.Unlock()
	s.m.log.Debug().Str("mcp_server", s.name).Int("tools", n).Bool("changed", changed).Msg("MCP tools rediscovered")
	if changed {
		s.m.changed()
	}
}

// attemptFailed records a failed connection attempt.
func (s *server) attemptFailed(err error) {
	s.mu.Lock()
	s.cs, s.sid = nil, ""
	s.err = err
	s.attempts++
	s.connecting = false
	logIt := !s.downLogged
	s.downLogged = true
	s.m.up.WithLabelValues(s.name).Set(0)
	s.nextRound()
	s.mu.Unlock()
	ev := s.m.log.Debug()
	if logIt {
		ev = s.m.log.Warn()
	}
	ev.Str("mcp_server", s.name).Str("error", s.scrub(err)).Msg("MCP server unavailable; retrying in the background")
}

// sessionEnded records the end of session gen.
func (s *server) sessionEnded(gen uint64, err error) {
	s.mu.Lock()
	if s.gen == gen && s.cs != nil {
		s.cs, s.sid = nil, ""
		s.err = err
	}
	if s.err == nil {
		s.err = err
	}
	s.m.up.WithLabelValues(s.name).Set(0)
	s.mu.Unlock()
	s.m.log.Debug().Str("mcp_server", s.name).Str("reason", s.scrub(err)).Msg("MCP session ended; reconnecting")
}

// markBroken gives up session gen after a call found it unusable, and
// asks the supervisor to reconnect. It returns the number of finished
// connection attempts, for awaitSession.
func (s *server) markBroken(gen uint64, err error) uint64 {
	s.mu.Lock()
	if s.gen == gen && s.cs != nil {
		s.cs, s.sid = nil, ""
		s.err = err
		s.m.up.WithLabelValues(s.name).Set(0)
	}
	n := s.attempts
	s.mu.Unlock()
	s.poke()
	return n
}

// lost is told by the transport that the server does not know session
// sid any more.
func (s *server) lost(sid string) {
	s.mu.Lock()
	current := s.cs != nil && s.sid == sid
	gen := s.gen
	if current {
		s.lostGen = gen
	}
	s.mu.Unlock()
	if current {
		s.markBroken(gen, errSessionLost)
	}
}

// lostSession reports whether the transport saw the server disown session
// gen.
func (s *server) lostSession(gen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostGen == gen
}

// awaitSession returns the live session, or waits until more than after
// connection attempts are finished and none succeeded.
func (s *server) awaitSession(ctx context.Context, after uint64) (*mcp.ClientSession, uint64, error) {
	for {
		s.mu.Lock()
		cs, gen, err, n, round := s.cs, s.gen, s.err, s.attempts, s.round
		s.mu.Unlock()
		switch {
		case cs != nil:
			return cs, gen, nil
		case n > after:
			if err == nil {
				err = errors.New("not connected")
			}
			return nil, 0, err
		}
		select {
		case <-round:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-s.ctx.Done():
			return nil, 0, errors.New("the server was removed from the registry or toolrouterd is stopping")
		}
	}
}
