package mcpclient

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by MCP 2026-07-28 (SEP-2577) and still served to servers of the older revisions

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

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
	// hot is the hot path's client (fastcall.go): s.http without the
	// progress tap.
	hot *http.Client
	// transport is s.http's.
	transport *serverTransport
	// callIDs numbers the tools/call requests of the hot path (fastcall.go).
	callIDs atomic.Int64
	// postHdr is the header of the hot path's POSTs on the last session
	// they were sent on (postHeader).
	postHdr atomic.Pointer[sessionHeader]

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
	// connecting: the supervisor is making a connection attempt;
	// backingOff: it waits before the next one; wanted: a call asked for
	// an attempt begun after it (askAttempt), which skips the backoff.
	connecting, backingOff, wanted bool
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
	// catalog is the last good listing of the server's resources and
	// prompts (catalog.go); nil before one.
	catalog *catalog
	// users are the sessions of calls made with a backend credential,
	// one per user (usersession.go).
	users userSessions
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
	s.hot = &http.Client{Transport: untapped{s.transport}, CheckRedirect: s.http.CheckRedirect}
	// No roots capability unless the registry gives the server roots
	// (docs/mcp.md "MCP both ways"): the SDK would otherwise advertise it.
	caps := &mcp.ClientCapabilities{}
	if len(cfg.Roots) > 0 {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	// MCP Apps: toolrouterd relays UI resources (apps.go), so servers
	// that offer their UI only to hosts declaring it offer it here.
	caps.AddExtension(appsExtension, map[string]any{"mimeTypes": []string{appsMIME}})
	s.client = mcp.NewClient(&mcp.Implementation{Name: "toolrouterd", Version: "1"}, &mcp.ClientOptions{
		Capabilities: caps,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.m.log.Debug().Str("mcp_server", s.name).Msg("MCP server tool list changed")
			s.poke()
		},
		// A changed resource list may be a changed UI: the tools are
		// listed again, and their UI resources read (apps.go).
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			s.m.log.Debug().Str("mcp_server", s.name).Msg("MCP server resource list changed")
			s.poke()
		},
		// Its prompts are listed again with its tools (catalog.go).
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			s.m.log.Debug().Str("mcp_server", s.name).Msg("MCP server prompt list changed")
			s.poke()
		},
		// Progress notifications are forwarded by the transport (see
		// serverTransport.event): no ProgressNotificationHandler.
		KeepAlive: keepAlive,
		// An input_required result is not answered here but relayed to
		// the /mcp caller, whose retry comes back as a new call (docs/mcp.md
		// "Elicitation through the gateway (multi round-trip requests)").
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	// Skills (skills.go) are listed with this custom method.
	_ = mcp.AddSendingCustomMethod[*SkillsListParams, *SkillsListResult](s.client, "skills/list")
	_ = mcp.AddSendingCustomMethod[*DirectoryReadParams, *DirectoryReadResult](s.client, "resources/directory/read")
	if m.Trace != nil {
		s.client.AddSendingMiddleware(m.Trace)
	}
	for _, uri := range cfg.Roots {
		s.client.AddRoots(&mcp.Root{URI: uri})
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
	s.closeUserSessions()
	s.m.up.DeleteLabelValues(s.name)
	s.m.reconnects.DeletePartialMatch(map[string]string{"server": s.name})
	s.m.limitedDiscoveries.DeletePartialMatch(map[string]string{"server": s.name})
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
	// The timeout, output budget and circuit are not part of a tool's JSON;
	// they are part of what changed (a reload applies them in place).
	fp, _ := json.Marshal(tools)
	defs := make([]any, len(tools))
	for i, t := range tools {
		// Definition is its pin's: annotations are not all in the tool's JSON.
		defs[i] = []any{t.Definition, t.Budget, t.Circuit}
	}
	fd, _ := json.Marshal(defs)
	key := s.cfg.Timeout.String() + "\x00" + string(fp) + "\x00" + string(fd)
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

func (s *server) timeout() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.Timeout > 0 {
		return s.cfg.Timeout
	}
	return defaultTimeout
}
