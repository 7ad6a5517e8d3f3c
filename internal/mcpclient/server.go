package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/outbound"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// errToolTimeout is the cause of a call's own deadline, telling it apart
// from the caller's.
var errToolTimeout = errors.New("tool timeout")

// errSessionLost is why a server is down after it said it no longer knows
// the session.
var errSessionLost = errors.New("the server ended the session")

// server is one MCP server: a supervisor goroutine (run) owns the
// connection, calls share its session.
type server struct {
	drains  chan struct{} // slots of background stream drains (fastcall.go)
	m       *Manager
	name    string
	url     string
	headers map[string]string
	roots   []string // offered as MCP roots; fixed like url and headers
	// command, env and dir start a stdio server (command set, url empty).
	command []string
	env     map[string]string
	dir     string
	client  *mcp.Client
	http    *http.Client
	// transport is s.http's.
	transport *serverTransport
	// callIDs numbers the tools/call requests of the hot path (fastcall.go).
	callIDs atomic.Int64

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// kick asks the supervisor to act now: reconnect when the server is
	// down (or its session broke), rediscover the tools when it is up.
	kick chan struct{}

	mu  sync.Mutex
	cfg toolrouter.MCPServer
	cs  *mcp.ClientSession // nil while down
	sid string             // cs's session id
	gen uint64             // sessions opened so far; numbers the current one
	// lostGen is the last session the server disowned (404).
	lostGen uint64
	// err is why the server is down (nil before the first attempt).
	err error
	// attempts counts the finished connection attempts.
	attempts uint64
	// round is closed, and replaced, after every connection or discovery
	// attempt.
	round chan struct{}
	// raw is the last successful discovery; tools the registry tools made
	// of it, fingerprint their JSON.
	raw         []discovered
	listed      bool // raw is the result of a discovery
	tools       []*toolrouter.Tool
	fingerprint string
	downLogged  bool
}

func newServer(m *Manager, cfg toolrouter.MCPServer) *server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{
		drains:  make(chan struct{}, maxDrains),
		m:       m,
		name:    cfg.Name,
		url:     cfg.URL,
		headers: maps.Clone(cfg.Headers),
		roots:   slices.Clone(cfg.Roots),
		command: slices.Clone(cfg.Command),
		env:     maps.Clone(cfg.Env),
		dir:     cfg.Dir,
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		kick:    make(chan struct{}, 1),
		cfg:     cfg,
		round:   make(chan struct{}),
	}
	s.transport = &serverTransport{base: m.traced(), headers: s.headers, lost: s.lost, event: m.progressEvent}
	s.http = &http.Client{
		Transport: s.transport,
		// Never follow a redirect: it would carry the server's headers
		// (secrets) to another URL.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	// No roots capability unless the registry gives the server roots
	// (README, "MCP servers"): the SDK would otherwise advertise it.
	caps := &mcp.ClientCapabilities{}
	if len(cfg.Roots) > 0 {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "toolrouterd", Version: "1"}, &mcp.ClientOptions{
		Capabilities: caps,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.m.log.Debug().Str("mcp_server", s.name).Msg("MCP server tool list changed")
			s.poke()
		},
		// Progress notifications are forwarded by the transport (see
		// serverTransport.event): no ProgressNotificationHandler.
		KeepAlive: keepAlive,
		// An input_required result is not answered here but relayed to
		// the /mcp caller, whose retry comes back as a new call (README,
		// "MCP", multi round-trip requests).
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	if m.Trace != nil {
		s.client.AddSendingMiddleware(m.Trace)
	}
	for _, uri := range cfg.Roots {
		s.client.AddRoots(&mcp.Root{URI: uri}) //nolint:staticcheck // roots are deprecated in 2026-07-28, still served to older servers
	}
	return s
}

// sameConnection reports whether cfg connects to the server the way s
// does (else a Sync replaces s).
func (s *server) sameConnection(cfg toolrouter.MCPServer) bool {
	return s.url == cfg.URL && maps.Equal(s.headers, cfg.Headers) && slices.Equal(s.roots, cfg.Roots) &&
		slices.Equal(s.command, cfg.Command) && maps.Equal(s.env, cfg.Env) && s.dir == cfg.Dir
}

func (s *server) start() {
	s.m.up.WithLabelValues(s.name).Set(0)
	go s.run()
}

// stop ends the supervisor, closes the session and forgets the server's
// metrics.
func (s *server) stop() {
	s.cancel()
	<-s.done
	s.m.up.DeleteLabelValues(s.name)
	s.m.reconnects.DeletePartialMatch(map[string]string{"server": s.name})
}

// poke asks the supervisor to act now (see kick).
func (s *server) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// firstRound is closed when the first connection attempt is over.
func (s *server) firstRound() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.round
}

// refresh asks for a rediscovery (or a reconnection attempt, when down)
// and returns a channel closed once it is over.
func (s *server) refresh() <-chan struct{} {
	s.mu.Lock()
	ch := s.round
	s.mu.Unlock()
	s.poke()
	return ch
}

// reconfigure takes a new configuration with the same URL and headers:
// prefix, allowlist and timeout apply to the tools at once.
func (s *server) reconfigure(cfg toolrouter.MCPServer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = cfg
	s.rebuild()
}

// rebuild makes the registry tools of the last discovery; s.mu is held.
// It reports whether they changed, and logs what is wrong with them when
// they did.
func (s *server) rebuild() bool {
	var tools []*toolrouter.Tool
	var warnings []func()
	for _, d := range s.raw {
		if !allowed(s.cfg.Tools, d.tool.Name) {
			continue
		}
		if d.schemaErr != nil {
			name, err := d.tool.Name, d.schemaErr
			warnings = append(warnings, func() {
				s.m.log.Warn().Str("mcp_server", s.name).Str("tool", name).Err(err).
					Msg("MCP tool's inputSchema does not compile: its arguments are not validated here")
			})
		}
		tools = append(tools, registryTool(s.cfg, d))
	}
	for _, name := range s.cfg.Tools {
		if name != "*" && s.listed && !slices.ContainsFunc(s.raw, func(d discovered) bool { return d.tool.Name == name }) {
			warnings = append(warnings, func() {
				s.m.log.Warn().Str("mcp_server", s.name).Str("tool", name).Msg("allowlisted tool not offered by the MCP server")
			})
		}
	}
	// Timeout is not part of a tool's JSON; it is part of what changed.
	fp, _ := json.Marshal(tools)
	key := s.cfg.Timeout.String() + "\x00" + string(fp)
	if key == s.fingerprint {
		return false
	}
	s.tools, s.fingerprint = tools, key
	for _, w := range warnings {
		w()
	}
	return true
}

func (s *server) currentTools() []*toolrouter.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// nextRound closes the current round and opens the next; s.mu is held.
func (s *server) nextRound() {
	close(s.round)
	s.round = make(chan struct{})
}

// run is the supervisor: connect, serve the session until it ends,
// reconnect with backoff.
func (s *server) run() {
	defer close(s.done)
	var delay time.Duration
	failures := 0 // connection attempts failed in a row
	for first := true; ; first = false {
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return
			case <-s.kick:
				t.Stop()
			case <-t.C:
			}
		}
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
		if err != nil {
			stop()
			s.attemptFailed(err)
			failures++
			delay = s.m.backoff.Delay(failures)
			continue
		}
		gen := s.setUp(cs, raw)
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
	if err != nil {
		_ = cs.Close()
		return nil, nil, stop, err
	}
	return cs, raw, stop, nil
}

func (s *server) timeout() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.Timeout > 0 {
		return s.cfg.Timeout
	}
	return defaultTimeout
}

// list runs tools/list over every page.
func (s *server) list(ctx context.Context, cs *mcp.ClientSession) ([]discovered, error) {
	var out []discovered
	seen := map[string]bool{}
	params := &mcp.ListToolsParams{}
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("tools/list: more than %d pages", maxPages)
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		for _, t := range res.Tools {
			if t == nil || seen[t.Name] {
				continue
			}
			seen[t.Name] = true
			out = append(out, newDiscovered(t))
		}
		if res.NextCursor == "" {
			return out, nil
		}
		if res.NextCursor == params.Cursor {
			return nil, fmt.Errorf("tools/list: the server repeats cursor %q", res.NextCursor)
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// serve waits until the session ends (the server closed it, a call found
// it broken) or the server is stopped, rediscovering the tools when
// kicked. It returns why the session ended.
func (s *server) serve(cs *mcp.ClientSession, gen uint64) error {
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	for {
		select {
		case <-s.ctx.Done():
			return nil
		case err := <-ended:
			if err == nil {
				err = errors.New("the session was closed")
			}
			return fmt.Errorf("session lost: %w", err)
		case <-s.kick:
			if broken, err := s.broken(gen); broken {
				return err
			}
			ctx, cancel := context.WithTimeout(s.ctx, s.timeout())
			raw, err := s.list(ctx, cs)
			cancel()
			if s.ctx.Err() != nil {
				return nil
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

func (s *server) setUp(cs *mcp.ClientSession, raw []discovered) uint64 {
	s.mu.Lock()
	s.gen++
	gen := s.gen
	s.cs, s.sid, s.err = cs, cs.ID(), nil
	s.attempts++
	s.raw, s.listed = raw, true
	changed := s.rebuild()
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

// session returns the live session, waiting for the first connection
// attempt when it is not over yet; with no session it returns why.
func (s *server) session(ctx context.Context) (*mcp.ClientSession, uint64, error) {
	return s.awaitSession(ctx, 0)
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

// call executes one tools/call. The outcomes:
//   - a result: success, or (isError) a failure the tool reported;
//   - a JSON-RPC error from the server (unknown tool, invalid params …):
//     a failure classified by its message, answered;
//   - the call's timeout: category timeout (the SDK then sends
//     notifications/cancelled);
//   - no session, the server unreachable: category resource, "MCP server
//     X unavailable: …";
//   - the server no longer knows the session (it restarted, the session
//     expired): a new session, and the call again (it never ran);
//   - the connection lost mid-call: the call again on a new session if the
//     tool is idempotent, else a failure (the tool may have run): resource
//     for a stdio server (its process exited), else execution.
func (s *server) call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	t := req.Tool
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = s.timeout()
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, timeout, errToolTimeout)
	defer cancel()

	args := req.Args
	if args == nil {
		args = map[string]any{}
	}
	params := &mcp.CallToolParams{Name: t.MCPTool, Arguments: args}
	relay := toolrouter.RelayFrom(ctx)
	if progress := progressFunc(req.Progress, relay); progress != nil {
		token, stop := s.m.watchProgress(progress)
		defer stop()
		params.SetProgressToken(token)
	}
	if relay != nil && relay.Log != nil {
		// The caller's own level filters what it gets (the /mcp session's,
		// or its request's); ask the server for everything. Servers on
		// protocol 2026-07-28 read the level from the request's _meta,
		// older ones from the session's logging/setLevel (see connect).
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta[metaLogLevel] = "debug"
	}
	if relay != nil {
		if err := retryParams(params, relay); err != nil {
			return toolrouter.Failure(toolrouter.CategoryParse, "%v", err)
		}
	}
	retries := 0
	if t.Idempotent {
		retries = t.Retries
	}
	fresh := true // one new session for a call the server never ran
	attempts := 0
	var after uint64
	var wait bool
	for {
		var cs *mcp.ClientSession
		var gen uint64
		var err error
		if wait {
			cs, gen, err = s.awaitSession(callCtx, after)
		} else {
			cs, gen, err = s.session(callCtx)
		}
		if err != nil {
			if callCtx.Err() != nil {
				return s.contextOutcome(ctx, callCtx, timeout, attempts)
			}
			out := toolrouter.Failure(toolrouter.CategoryResource, "MCP server %s unavailable: %s", s.name, s.scrub(err))
			out.Attempts = attempts
			return out
		}
		attempts++
		if relay != nil && relay.ClientCapabilities != nil && modern(cs) {
			// The caller's capabilities, not toolrouterd's: the backend
			// asks for the input the caller can give.
			params.Meta[mcp.MetaKeyClientCapabilities] = relay.ClientCapabilities
		}
		var out toolrouter.Outcome
		if s.fast(cs) {
			// The hot path encodes with encoding/json, as the router
			// encoded ArgsJSON: the same bytes, without encoding the
			// map again. (The SDK's encoder does not escape HTML, so
			// its path keeps the map.)
			if req.ArgsJSON != nil {
				params.Arguments = req.ArgsJSON
			}
			out, err = s.fastCall(callCtx, cs, t, params)
			params.Arguments = args
		} else {
			var res *mcp.CallToolResult
			if res, err = cs.CallTool(callCtx, params); err == nil {
				out = outcome(t, res)
			}
		}
		if err == nil {
			out.Attempts = attempts
			return out
		}
		if callCtx.Err() != nil {
			return s.contextOutcome(ctx, callCtx, timeout, attempts)
		}
		// A call the server took may have run: never sent again as one
		// that did not reach it (fastcall.go).
		taken := errors.Is(err, errCallTaken)
		lost := !taken && (errors.Is(err, mcp.ErrSessionMissing) || s.lostSession(gen))
		jerr := serverError(err)
		switch {
		case lost:
			after = s.markBroken(gen, errSessionLost)
			if fresh {
				fresh, wait = false, true
				continue
			}
			out := toolrouter.Failure(toolrouter.CategoryResource, "MCP server %s unavailable: %s", s.name, errSessionLost)
			out.Attempts = attempts
			return out
		case jerr != nil:
			msg := jerr.Message
			if msg == "" {
				msg = fmt.Sprintf("JSON-RPC error %d", jerr.Code)
			}
			cat := toolrouter.ClassifyError(msg)
			if cat == toolrouter.CategoryUnknown {
				cat = toolrouter.CategoryExecution
			}
			return toolrouter.Outcome{Err: msg, Category: cat, Attempts: attempts, Answered: true}
		}
		// The transport failed.
		after = s.markBroken(gen, err)
		// The request did not leave: no connection, or a session already
		// closing.
		never := !taken && (outbound.Unreachable(err) || errors.Is(err, mcp.ErrConnectionClosed))
		switch {
		case never && fresh:
			fresh, wait = false, true
			continue
		case !never && retries > 0:
			retries--
			wait = true
			continue
		case never:
			out := toolrouter.Failure(toolrouter.CategoryResource, "MCP server %s unavailable: %s", s.name, s.scrub(err))
			out.Attempts = attempts
			return out
		}
		if len(s.command) > 0 {
			// A stdio server's connection only breaks when its process
			// exits: the server is gone (the supervisor restarts it).
			out := toolrouter.Failure(toolrouter.CategoryResource, "MCP server %s unavailable: its process exited during the call (%s)", s.name, s.scrub(err))
			out.Attempts = attempts
			return out
		}
		out = toolrouter.Failure(toolrouter.CategoryExecution, "MCP server %s: tools/call failed: %s", s.name, s.scrub(err))
		out.Attempts = attempts
		return out
	}
}

// retryParams puts what the relay carries for the backend into a call's
// params: the caller's inputResponses and the backend's requestState.
func retryParams(params *mcp.CallToolParams, relay *toolrouter.Relay) error {
	if params.Meta == nil {
		params.Meta = mcp.Meta{}
	}
	params.RequestState = relay.RequestState
	if len(relay.InputResponses) == 0 {
		return nil
	}
	var responses mcp.InputResponseMap
	if err := json.Unmarshal(relay.InputResponses, &responses); err != nil {
		return fmt.Errorf("inputResponses: %w", err)
	}
	params.InputResponses = responses
	return nil
}

// modern reports whether cs speaks protocol 2026-07-28 or later, whose
// requests carry the client's capabilities in their _meta.
func modern(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= "2026-07-28"
}

// metaLogLevel is the _meta key of a request's log level (protocol
// 2026-07-28).
const metaLogLevel = "io.modelcontextprotocol/logLevel"

// progressFunc is the func that receives a call's progress: the route's
// (SSE updates of /route) and the relay's (an /mcp caller), either or both.
func progressFunc(route func(progress, total float64, message string), relay *toolrouter.Relay) func(progress, total float64, message string) {
	var fns []func(progress, total float64, message string)
	if route != nil {
		fns = append(fns, route)
	}
	if relay != nil && relay.Progress != nil {
		fns = append(fns, relay.Progress)
	}
	switch len(fns) {
	case 0:
		return nil
	case 1:
		return fns[0]
	}
	return func(progress, total float64, message string) {
		for _, fn := range fns {
			fn(progress, total, message)
		}
	}
}

// lostSession reports whether the transport saw the server disown session
// gen.
func (s *server) lostSession(gen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostGen == gen
}

func (s *server) contextOutcome(ctx, callCtx context.Context, timeout time.Duration, attempts int) toolrouter.Outcome {
	var out toolrouter.Outcome
	switch err := ctx.Err(); {
	case errors.Is(context.Cause(callCtx), errToolTimeout):
		out = toolrouter.Failure(toolrouter.CategoryTimeout, "MCP tool timed out after %s", timeout)
	case errors.Is(err, context.DeadlineExceeded):
		out = toolrouter.Failure(toolrouter.CategoryTimeout, "call cancelled: %v", err)
	default:
		if err == nil {
			err = callCtx.Err()
		}
		out = toolrouter.Failure(toolrouter.CategoryExecution, "call cancelled: %v", err)
	}
	out.Attempts = attempts
	return out
}

// scrub is an error's message fit for clients and logs: the innermost
// network error when there is one (the SDK's wrapping repeats the
// request), and never the URL's credentials.
func (s *server) scrub(err error) string {
	if err == nil {
		return ""
	}
	var ue *url.Error
	msg := err.Error()
	if errors.As(err, &ue) && ue.Err != nil {
		msg = ue.Err.Error()
	}
	if red := redactURL(s.url); red != s.url {
		msg = strings.ReplaceAll(msg, s.url, red)
	}
	return msg
}

// The codes of the SDK's own errors, which look like JSON-RPC errors but
// never came from the server: client is closing, server is closing,
// rejected by transport.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// serverError finds the JSON-RPC error the server answered with in err's
// tree, skipping the SDK's own sentinels; nil when the server gave none.
func serverError(err error) *jsonrpc.Error {
	var found *jsonrpc.Error
	var walk func(error) bool
	walk = func(e error) bool {
		if je, ok := e.(*jsonrpc.Error); ok {
			switch je.Code {
			case codeClientClosing, codeServerClosing, codeRejected:
			default:
				found = je
				return true
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if x := u.Unwrap(); x != nil {
				return walk(x)
			}
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				if walk(x) {
					return true
				}
			}
		}
		return false
	}
	walk(err)
	return found
}
