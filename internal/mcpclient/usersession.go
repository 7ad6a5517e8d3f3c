package mcpclient

//lint:file-ignore SA1019 logging is deprecated by MCP 2026-07-28 (SEP-2577) and still served to servers of the older revisions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/outbound"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Per-user sessions (docs/backend-auth.md "Isolation between users"): a
// call made with a backend credential (an auth mode other than static)
// never shares an upstream MCP session with another user's calls. Its
// session is its user's own, opened with its credential (initialize
// carries it) and kept for the user's next calls; every request of that
// session (the SDK's pings and stream too) carries the user's latest
// credential. The supervised session (discovery, static calls) keeps the
// registry's headers.
const (
	// maxUserSessions bounds the user sessions of one server; the least
	// recently used is closed to make room.
	maxUserSessions = 1000
	// userSessionIdle closes a user session unused for this long.
	userSessionIdle = 10 * time.Minute
	// userSessionSweep is how often a server's calls look for idle
	// sessions to close.
	userSessionSweep = time.Minute
)

// userSessions are one server's sessions per user.
type userSessions struct {
	mu sync.Mutex
	m  map[string]*userSession
	// swept is when the idle sessions were last closed; now is the
	// clock (nil: time.Now).
	swept time.Time
	now   func() time.Time
}

// userSession is one user's session, or its opening (ready open).
type userSession struct {
	ready chan struct{}
	cs    *mcp.ClientSession // set before ready closes; nil when opening failed
	err   error
	cred  atomic.Pointer[toolrouter.Credential]
	used  time.Time // guarded by userSessions.mu
}

// userKey names whose session a call with credential c takes: the mode,
// the acting party (toolrouterd's client id at the AS, or the registry
// client of per_client) and the user.
func userKey(c *toolrouter.Credential) string {
	if c == nil {
		return ""
	}
	return c.Use.Mode + "\x1f" + c.Use.Actor + "\x1f" + c.Use.Subject
}

// userSession returns the session of the user of cred, opening it (within
// the server's timeout, bounded by ctx) when there is none.
func (s *server) userSession(ctx context.Context, key string, cred *toolrouter.Credential) (*mcp.ClientSession, error) {
	u := &s.users
	u.mu.Lock()
	now := time.Now()
	if u.now != nil {
		now = u.now()
	}
	us := u.m[key]
	if us == nil || now.Sub(u.swept) > userSessionSweep {
		// A new session makes room; idle ones are closed at least once
		// a sweep interval while the server is called.
		u.swept = now
		s.evictUserSessions(now, us == nil)
		us = u.m[key] // gone when it was idle itself
	}
	if us == nil {
		if u.m == nil {
			u.m = map[string]*userSession{}
		}
		us = &userSession{ready: make(chan struct{}), used: now}
		us.cred.Store(cred)
		u.m[key] = us
		u.mu.Unlock()
		go s.openUserSession(key, us)
	} else {
		us.used = now
		us.cred.Store(cred) // the latest token for the session's own requests
		u.mu.Unlock()
	}
	select {
	case <-us.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if us.err != nil {
		return nil, us.err
	}
	return us.cs, nil
}

// openUserSession opens us (detached from the call that asked: other
// calls of the user may wait for it), within the server's timeout.
func (s *server) openUserSession(key string, us *userSession) {
	defer close(us.ready)
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout())
	defer cancel()
	hc := &http.Client{Transport: &userTransport{base: s.http.Transport, us: us}, CheckRedirect: s.http.CheckRedirect}
	cs, err := s.client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc}, nil)
	if err != nil {
		us.err = fmt.Errorf("connect a session for the user: %w", err)
		s.users.mu.Lock()
		if s.users.m[key] == us {
			delete(s.users.m, key)
		}
		s.users.mu.Unlock()
		return
	}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Logging != nil {
		// As on the server's own session (connect): the log messages of
		// the user's calls reach the /mcp caller that made them.
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			s.m.log.Debug().Err(err).Str("mcp_server", s.name).Msg("MCP server refused logging/setLevel")
		}
	}
	us.cs = cs
}

// dropUserSession forgets and closes the user's session cs, after a
// transport failure (a new call opens another).
func (s *server) dropUserSession(key string, cs *mcp.ClientSession) {
	s.users.mu.Lock()
	if us := s.users.m[key]; us != nil && isReady(us) && us.cs == cs { // (an opening one writes us.cs)
		delete(s.users.m, key)
	}
	s.users.mu.Unlock()
	go cs.Close()
}

// evictUserSessions closes the idle sessions and, making room for one
// more, the least recently used when the bound is reached. s.users.mu is
// held.
func (s *server) evictUserSessions(now time.Time, room bool) {
	var oldestKey string
	var oldest time.Time
	for k, us := range s.users.m {
		if !isReady(us) {
			continue
		}
		if now.Sub(us.used) > userSessionIdle {
			delete(s.users.m, k)
			closeUserSession(us)
			continue
		}
		if oldest.IsZero() || us.used.Before(oldest) {
			oldestKey, oldest = k, us.used
		}
	}
	if room && len(s.users.m) >= maxUserSessions && oldestKey != "" {
		closeUserSession(s.users.m[oldestKey])
		delete(s.users.m, oldestKey)
	}
}

// closeUserSessions closes every user session (the server stops).
func (s *server) closeUserSessions() {
	s.users.mu.Lock()
	all := s.users.m
	s.users.m = nil
	s.users.mu.Unlock()
	for _, us := range all {
		<-us.ready // an opening ends within the server's timeout, or with s.ctx
		closeUserSession(us)
	}
}

func isReady(us *userSession) bool {
	select {
	case <-us.ready:
		return true
	default:
		return false
	}
}

func closeUserSession(us *userSession) {
	if us.cs != nil {
		go us.cs.Close()
	}
}

// userTransport gives every request of a user's session the user's
// latest credential, unless the request's context carries its call's.
type userTransport struct {
	base http.RoundTripper
	us   *userSession
}

func (t *userTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if credentialFrom(r.Context()) == nil {
		if c := t.us.cred.Load(); c != nil {
			r = r.WithContext(withCredential(r.Context(), c))
		}
	}
	return t.base.RoundTrip(r)
}

// userAttempt sends c once on its user's session. A transport failure
// drops the session; a call that never reached the server (the session
// lost or closed, the server unreachable) is sent again once on a new
// session, an idempotent one that may have run as its retries allow.
func (s *server) userAttempt(ctx context.Context, c *toolCall, key string) (out toolrouter.Outcome, again bool, err error) {
	cs, err := s.userSession(ctx, key, c.req.Credential)
	if err != nil {
		return s.unavailable(err), false, err
	}
	c.attempts++
	out, err = s.send(ctx, cs, c)
	if err == nil || ctx.Err() != nil {
		return out, false, err
	}
	if jerr := serverError(err); jerr != nil {
		return answeredError(jerr), false, err
	}
	s.dropUserSession(key, cs)
	taken := errors.Is(err, errCallTaken)
	never := !taken && (errors.Is(err, mcp.ErrSessionMissing) || outbound.Unreachable(err) || errors.Is(err, mcp.ErrConnectionClosed))
	switch {
	case never && c.fresh:
		c.fresh = false
		return out, true, err
	case !never && c.retries > 0:
		c.retries--
		return out, true, err
	case never:
		return s.unavailable(err), false, err
	}
	return toolrouter.Failure(toolrouter.CategoryExecution, "MCP server %s: tools/call failed: %s", s.name, s.scrub(err)), false, err
}
