// Package service wires toolrouterd's parts once: store → registry →
// router, agent and MCP → httpapi. cmd/toolrouterd serves it; the godog
// features start it in-process.
package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/api"
	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/agent"
	"github.com/toolrouterd/toolrouterd/internal/approval"
	"github.com/toolrouterd/toolrouterd/internal/audit"
	"github.com/toolrouterd/toolrouterd/internal/circuit"
	"github.com/toolrouterd/toolrouterd/internal/codemode"
	"github.com/toolrouterd/toolrouterd/internal/config"
	"github.com/toolrouterd/toolrouterd/internal/cost"
	"github.com/toolrouterd/toolrouterd/internal/credential"
	"github.com/toolrouterd/toolrouterd/internal/guardrail"
	"github.com/toolrouterd/toolrouterd/internal/httpapi"
	"github.com/toolrouterd/toolrouterd/internal/lograte"
	"github.com/toolrouterd/toolrouterd/internal/mcpclient"
	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/metrics"
	"github.com/toolrouterd/toolrouterd/internal/oauthconn"
	"github.com/toolrouterd/toolrouterd/internal/pin"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/router"
	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/task"
	"github.com/toolrouterd/toolrouterd/internal/telemetry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vault"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// Options are what a Service is built from.
type Options struct {
	Config config.Config
	// Registry is the registry in force at start (nil: no tools); Reload
	// reads Config.Registry again.
	Registry *registry.Registry
	// Getenv expands ${VAR} in the registry and reads the LLM providers'
	// keys.
	Getenv func(string) string
	Logger zerolog.Logger
	// Owner names this replica in the runs it owns.
	Owner string
	// Telemetry traces requests, tool calls, MCP and model calls; nil (or
	// set up with tracing off) records nothing.
	Telemetry *telemetry.Telemetry
	// Version is the build's version, reported by /mcp as serverInfo.version.
	Version string
}

// Service is a wired toolrouterd: its HTTP handler and the parts that
// serving, reloading and shutting down need.
type Service struct {
	Handler http.Handler
	Store   store.Store
	Runner  *agent.Runner
	// Tasks runs calls as tasks (docs/mcp.md "Tasks").
	Tasks *task.Runner
	// MCP is the /mcp endpoint; Close ends its sessions' open streams.
	MCP *mcpserver.Handler

	cfg       config.Config
	log       zerolog.Logger
	holder    *registry.Holder
	views     *vserver.Catalog
	vmcp      *viewMCP
	metrics   *metrics.Metrics
	exec      *remote.Client
	mcp       *mcpclient.Manager
	adapters  *Adapters
	router    *router.Router
	approvals *approval.Keeper
	guards    *guardrail.Guards
	pins      *pin.Keeper
	meter     *cost.Meter
	authn     *access.Authenticator
	// requireAuth: a registry reload must keep requests authenticated
	// (RequireAuth).
	requireAuth bool
}

// RequireAuth makes Reload reject a registry file that would leave
// requests unauthenticated (no clients, with no TOOLROUTER_API_KEYS and no
// JWT). cmd/toolrouterd calls it, before any reload, when it listens on a
// non-loopback address without TOOLROUTER_ALLOW_UNAUTHENTICATED.
func (s *Service) RequireAuth() { s.requireAuth = true }

// Unauthenticated reports whether requests are served without
// authentication: no TOOLROUTER_API_KEYS, no registry clients and no JWT
// (the current registry's clients).
func (s *Service) Unauthenticated() bool { return s.authn.Open() }

// New opens the store and wires the service. Its error names the variable
// at fault when one is. ctx bounds the first connection to MCP servers.
func New(ctx context.Context, o Options) (*Service, error) {
	if o.Getenv == nil {
		return nil, errors.New("service: Options.Getenv is nil")
	}
	models, err := cost.DefaultModels() // embedded: fails only in a broken build
	if err != nil {
		return nil, err
	}
	st, err := store.OpenStarting(ctx, o.Config.Store, func(attempt int, err error) {
		o.Logger.Warn().Int("attempt", attempt).Str("error", err.Error()).Msg("store unreachable; retrying with backoff (not ready)")
	})
	if err != nil {
		return nil, fmt.Errorf("TOOLROUTER_STORE: cannot open the %s store: %w", StoreKind(o.Config.Store), err)
	}
	reg := o.Registry
	if reg == nil {
		reg = registry.Empty()
	}
	tel := o.Telemetry
	s := &Service{
		cfg:      o.Config,
		log:      o.Logger,
		holder:   registry.NewHolder(o.Config.Registry, o.Getenv, reg),
		metrics:  metrics.New(),
		exec:     remote.New(remote.Options{Wrap: tel.Transport}),
		adapters: NewAdapters(o.Getenv, tel),
	}
	// One limiter for the warnings of a failing store (issue 14 item 9).
	logLimit := lograte.New(nil)
	watchLostWrites(st, s.metrics, o.Logger, logLimit)
	st = countStore(st, s.metrics, tel.Store(dbSystem(o.Config.Store)))
	s.Store = st
	var jwt *access.JWTVerifier
	if o.Config.JWT() {
		jwt = access.NewJWTVerifier(access.JWTConfig{Issuer: o.Config.JWTIssuer, JWKSURL: o.Config.JWTJwksURL,
			Audience: o.Config.JWTAudience, SubjectClaim: o.Config.JWTSubjectClaim, Log: &o.Logger})
	}
	authn := access.NewAuthenticator(o.Config.APIKeys, s.holder.Current, jwt)
	s.authn = authn
	authn.OnBuild = func(cs *access.Clients) {
		for _, w := range cs.Warnings {
			o.Logger.Warn().Msg(w)
		}
	}
	if authn.Open() {
		o.Logger.Warn().Msg("TOOLROUTER_API_KEYS is empty and the registry has no clients: requests are not authenticated")
	}
	trail := &audit.Trail{Store: st, Replica: o.Owner, Log: o.Logger, Limit: logLimit}

	s.mcp = mcpclient.New(o.Logger, s.metrics.Registerer())
	s.mcp.Trace, s.mcp.TraceHTTP = tel.MCPClient(), tel.Transport
	s.mcp.Limits = mcpclient.DiscoveryLimits{Pages: o.Config.MCPDiscoveryMaxPages, Tools: o.Config.MCPDiscoveryMaxTools, Bytes: o.Config.MCPDiscoveryMaxBytes}
	// The tools discovered on MCP servers are served as their pins say
	// (docs/trusting-tools.md "Pinned definitions"); discovery starts at the
	// end of New, once everything it publishes to exists.
	s.pins = &pin.Keeper{Store: st, Audit: trail, Log: o.Logger.With().Str("component", "pin").Logger(),
		Servers: s.mcpServers, Discovered: s.mcp.Tools, Redefine: mcpclient.Redefine, Publish: s.publish,
		MaxPending: o.Config.PinMaxPending, MaxPins: o.Config.PinMaxPerServer, Refresh: s.mcp.Refresh}
	s.pins.Register(s.metrics.Registerer())
	if err := s.pins.PinFile(o.Logger.WithContext(ctx), reg.Tools()); err != nil {
		o.Logger.Warn().Err(err).Msg("pin the registry file's tool definitions")
	}
	// The registry's guardrails, around every call (docs/trusting-tools.md "Trusting tools").
	s.guards = &guardrail.Guards{Registry: func() guardrail.Registry { return s.holder.Current() }, Client: guardrail.NewClient(tel.Transport)}
	// Circuit breakers per tool host and MCP server, per replica (docs/operations.md
	// "Circuit breakers").
	circuits := circuit.New(toolrouter.Circuit{Failures: o.Config.CircuitFailures, Cooldown: o.Config.CircuitCooldown}, s.metrics.Registerer())
	// Backend credentials (docs/backend-auth.md), below the breakers: the
	// user's token for each backend, seen by nothing above.
	creds := &credential.Decorator{Registry: func() credential.Servers { return s.holder.Current() },
		Exchanger: &credential.Exchanger{HTTP: &http.Client{Transport: tel.Transport(http.DefaultTransport), Timeout: 30 * time.Second}}}
	// The oauth mode's connections, in the token vault (docs/backend-auth.md
	// "oauth", "The token vault"): only with TOOLROUTER_TOKEN_KEYS.
	var connections httpapi.Connections
	var vlt *vault.Vault
	if o.Config.TokenKeys != "" {
		keys, err := vault.ParseKeys(o.Config.TokenKeys)
		if err != nil {
			s.Close()
			return nil, err
		}
		vlt = &vault.Vault{Keys: keys, Store: st}
		conn := &oauthconn.Connector{Vault: vlt, PublicURL: o.Config.PublicURL,
			HTTP: &http.Client{Transport: tel.Transport(http.DefaultTransport), Timeout: 30 * time.Second}}
		creds.OAuth, connections = conn, conn
	}
	s.views = vserver.NewCatalog(s.holder.Current, func(w string) { o.Logger.Warn().Msg(w) })
	clientByName := func(name string) *access.Client { return authn.Clients().ByName(name) }
	// The end of every call: its result finished, recorded and stored.
	finish := &router.Finisher{Results: st, Observer: s.metrics, Audit: trail, LogLimit: logLimit}
	s.approvals = &approval.Keeper{Store: st, Results: st, Finish: finish, Tools: s.approvalTools,
		TTL: o.Config.ApprovalTTL, MaxPending: o.Config.MaxPendingApprovals, Client: clientByName, Views: s.views.Current}
	// The pipeline of a call (docs/architecture.md "The pipeline of a
	// call"), outermost first: the work of each stage before the call runs
	// top-down, its work on the outcome bottom-up, so a call goes resolve,
	// validate, guard before, approval, cost, (exec), output schema, guard after,
	// redact, shape, batch budget.
	shaper := shape.New()
	s.meter = cost.New(st, func() cost.Limits { return s.holder.Current() }, s.metrics.Registerer())
	s.meter.Models = models
	stages := []toolrouter.Stage{
		pipeline.Resolve(s.pipelineTools), // the tool the call names, in its view (and the view's budget)
		pipeline.Validate,                 // its arguments against the tool's input schema; a run's actor context added
		s.guards.BeforeStage,              // before-hooks: deny, or rewrite the arguments
		s.approvals.Stage,                 // held for an approver; an approved call resumes below
		s.meter.Stage,                     // spend limits before the call, what it cost after (docs/costs.md)
		pipeline.BatchBudget,              // the output held to the bytes its batch shares
		shaper.Stage,                      // the output fit to its budget (the whole one stored)
		s.guards.RedactStage,              // secrets redacted: last of what changes an output (issue 32 item 13)
		s.guards.AfterStage,               // after-hooks: deny, or replace the output
		pipeline.CheckOutput,              // the output against the tool's output schema
	}
	// discovery: code (docs/code-mode.md): execute_code's programs, each
	// of their calls back through this router.
	limits := codemode.DefaultLimits()
	limits.Timeout, limits.CPU, limits.MaxCalls = o.Config.CodeTimeout, o.Config.CodeCPU, o.Config.CodeMaxCalls
	limits.MaxHeapBytes, limits.MaxOutputBytes = uint64(o.Config.CodeMaxHeapBytes), o.Config.CodeMaxOutputBytes
	code := &codemode.Runner{Engine: codemode.NewEngine(limits, o.Config.CodeConcurrency), Results: s.approvals}
	s.router = router.New(router.Options{
		Code:             code,
		Exec:             circuits.Wrap(creds.Wrap(s.exec)),
		MCP:              pin.Guard{Executor: circuits.Wrap(creds.Wrap(s.mcp))},
		Seq:              st,
		Finish:           finish,
		Tracer:           tel,
		Stages:           stages,
		BatchConcurrency: o.Config.BatchConcurrency,
		MaxBatchOutput:   o.Config.MaxBatchOutputBytes,
	})
	// A refused request's record names the tools its calls reach.
	limiter := audit.Limiter{Taker: s.newLimiter(st), Trail: trail, Canonical: s.canonical}
	code.Limiter = limiter
	code.Bind(s.router)
	s.Runner = &agent.Runner{
		Router:    s.router,
		Registry:  func() agent.Registry { return s.holder.Current() },
		Adapter:   s.adapters.For,
		Tracer:    tel,
		Observer:  s.metrics,
		Runs:      st,
		Owner:     o.Owner,
		Heartbeat: o.Config.RunHeartbeat,
		// The tool calls of one model turn are a batch too.
		ToolConcurrency: o.Config.BatchConcurrency,
		Limiter:         limiter,
		ModelTurns:      s.newTurnLimiter(st),
		MaxActive:       o.Config.MaxActiveRuns,
		MaxRunBytes:     o.Config.MaxRunBytes,
		Client:          clientByName,
		Views:           s.views.Current,
		Meter:           s.meter,
	}
	// A held call and a paused run keep the caller's JWT in the vault,
	// when there is one (docs/backend-auth.md "Who the user is").
	if vlt != nil {
		s.approvals.Subjects, s.Runner.Subjects = vlt, vlt
	}
	// The one link back: a decided approval of a paused run resumes it
	// (docs/approvals.md "Approvals"), and runs route through the pipeline
	// that holds approvals.
	s.approvals.Settled = s.Runner.ResumeLater
	s.Tasks = &task.Runner{Store: st, Router: s.router, Results: s.approvals, Heartbeat: o.Config.TaskHeartbeat,
		TTL: o.Config.ResultRetention, Logger: o.Logger.With().Str("component", "task").Logger()}
	s.vmcp = &viewMCP{views: s.views, handlers: map[string]*mcpserver.Handler{}, base: mcpserver.Deps{
		Router:       s.router,
		Logger:       o.Logger,
		Version:      o.Version,
		MaxBodyBytes: o.Config.MaxBodyBytes,
		Limiter:      limiter,
		Tracing:      tel.MCPServer(),
		// A JSON-RPC batch is held to /route/batch's concurrency.
		BatchConcurrency: o.Config.BatchConcurrency,
		Marks:            st,
		StateKey:         o.Config.StateKey,
		Tasks:            s.Tasks,
		Resources:        skillFiles{reg: s.holder.Current, next: s.mcp, creds: creds},
		Directories:      skillFiles{reg: s.holder.Current, next: s.mcp, creds: creds},
		Catalogs:         serverCatalogs{files: skillFiles{reg: s.holder.Current, next: s.mcp, creds: creds}, next: s.mcp},
		Audit:            trail,
	}}
	s.MCP = mcpserver.New(s.vmcp.deps(""))
	s.Handler, err = httpapi.NewServer(httpapi.Deps{
		Logger:         o.Logger,
		Router:         s.router,
		Tools:          func() httpapi.Tools { return s.holder.Current() },
		Readiness:      st,
		Circuits:       circuits,
		Metrics:        s.metrics,
		Runs:           s.Runner,
		Tasks:          s.Tasks,
		Approvals:      pin.Approvals{Keeper: s.approvals, Pins: s.pins},
		Keys:           st,
		Audit:          st,
		Usage:          st,
		KeyTTL:         o.Config.IdempotencyTTL,
		Auth:           authn,
		JWTIssuer:      o.Config.JWTIssuer,
		Limiter:        limiter,
		MaxBodyBytes:   o.Config.MaxBodyBytes,
		WriteTimeout:   o.Config.WriteTimeout,
		AllowedOrigins: o.Config.AllowedOrigins,
		Spec:           api.Spec,
		MCP:            s.MCP,
		Views:          s.views.Current,
		VirtualMCP:     s.vmcp.handler,
		Tracer:         tel,
		Connections:    connections,
	})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("build HTTP server: %w", err)
	}
	// Discovery last: what it publishes reaches the registry and /mcp.
	s.mcp.OnChange(func() {
		if err := s.pins.Sync(o.Logger.WithContext(context.WithoutCancel(ctx))); err != nil {
			o.Logger.Warn().Err(err).Msg("pinned tool definitions")
		}
	})
	s.mcp.OnChange(s.syncMCP) // /mcp sessions hear of MCP tool changes
	s.mcp.Sync(ctx, reg.MCPServers())
	return s, nil
}

// mcpServers are the MCP servers of the registry in force.
func (s *Service) mcpServers() []toolrouter.MCPServer { return s.holder.Current().MCPServers() }

// publish serves the MCP tools as their pins say: in the registry, and
// to /mcp sessions, which hear of quarantines and accepted changes.
func (s *Service) publish(tools []*toolrouter.Tool) {
	if err := s.holder.SetExtra(tools); err != nil {
		s.log.Warn().Err(err).Msg("MCP tools left out of the registry")
	}
	s.syncMCP()
}

func (s *Service) pipelineTools() pipeline.Tools { return s.holder.Current() }

func (s *Service) approvalTools() approval.Tools { return s.holder.Current() }

// canonical is the registry name of the tool name reaches in view
// (audit.Limiter).
func (s *Service) canonical(ctx context.Context, view toolrouter.View, name string) string {
	return pipeline.Canonical(ctx, s.holder.Current(), view, name)
}

// Tools is how many tools the registry in force has.
func (s *Service) Tools() int { return len(s.holder.Current().Tools()) }

// Reload reads the registry file again (SIGHUP): a bad file is rejected
// and the registry in force stays. /mcp sessions and MCP servers follow a
// good one.
func (s *Service) Reload(ctx context.Context) error {
	if s.cfg.Registry == "" {
		return errors.New("TOOLROUTER_REGISTRY is not set, there is no file to reload")
	}
	if err := s.holder.ReloadIf(s.keepsAuth); err != nil {
		s.metrics.Reload(false)
		return err
	}
	s.metrics.Reload(true)
	if err := s.pins.PinFile(s.log.WithContext(ctx), s.holder.Current().Tools()); err != nil {
		s.log.Warn().Err(err).Msg("pin the registry file's tool definitions")
	}
	s.syncMCP()
	s.mcp.Sync(ctx, s.holder.Current().MCPServers())
	return nil
}

// keepsAuth accepts a new registry unless RequireAuth is on and r would
// leave requests unauthenticated.
func (s *Service) keepsAuth(r *registry.Registry) error {
	if s.requireAuth && !s.cfg.JWT() && access.NewClients(s.cfg.APIKeys, r.Clients()).Open() {
		return errors.New("the file has no clients, and neither TOOLROUTER_API_KEYS nor JWT is set: requests to the non-loopback " +
			"TOOLROUTER_ADDR would not be authenticated; keep a client, or restart with TOOLROUTER_ALLOW_UNAUTHENTICATED=true")
	}
	return nil
}

// Close releases what New opened: MCP connections, idle HTTP connections,
// the store. Background runs should have ended (Runner.Wait).
func (s *Service) Close() {
	s.MCP.Close()
	s.vmcp.each((*mcpserver.Handler).Close)
	s.mcp.Close()
	s.exec.CloseIdle()
	s.guards.Client.CloseIdleConnections()
	s.adapters.CloseIdle()
	if err := s.Store.Close(); err != nil {
		s.log.Warn().Err(err).Msg("close store")
	}
}

// PurgeKeys deletes expired idempotency keys every interval until ctx
// ends, so the table does not grow without bound (claiming a key already
// ignores them), when the store can.
func (s *Service) PurgeKeys(ctx context.Context, every time.Duration) {
	p, ok := s.Store.(interface {
		PurgeExpiredKeys(ctx context.Context) (int, error)
	})
	if !ok {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := p.PurgeExpiredKeys(ctx); err != nil {
				s.log.Warn().Err(err).Msg("purge expired idempotency keys")
			} else if n > 0 {
				s.log.Debug().Int("keys", n).Msg("purged expired idempotency keys")
			}
		}
	}
}

// ExpireApprovals expires the approvals past their time every interval
// until ctx ends (docs/approvals.md "Approvals"): their calls get their denied
// result even when nobody asks about them. It fails the approved calls
// abandoned by a replica that stopped too (approval.Keeper.SettleAbandoned).
func (s *Service) ExpireApprovals(ctx context.Context, every time.Duration) {
	ctx = s.log.WithContext(ctx)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.approvals.ExpireDue(ctx); err != nil {
				s.log.Warn().Err(err).Msg("expire approvals")
			}
			if _, err := s.approvals.SettleAbandoned(ctx); err != nil {
				s.log.Warn().Err(err).Msg("settle abandoned approvals")
			}
		}
	}
}

// WatchPins reads the pinned tool definitions every interval until ctx
// ends, so that reviews opened and decided on other replicas apply here.
func (s *Service) WatchPins(ctx context.Context, every time.Duration) {
	s.pins.Watch(s.log.WithContext(ctx), every)
}

// dbSystem is the db.system.name of the store a URL names.
func dbSystem(url string) string {
	if k := StoreKind(url); k != "postgres" {
		return k
	}
	return "postgresql"
}

// StoreKind is the scheme of a store URL, for logs (never its password).
func StoreKind(url string) string {
	for i := 0; i+2 < len(url); i++ {
		if url[i:i+3] == "://" {
			return url[:i]
		}
	}
	return url
}

// syncMCP brings /mcp and the MCP servers of the virtual servers in step
// with the registry in force; their sessions hear of changes.
func (s *Service) syncMCP() {
	s.MCP.Sync()
	s.vmcp.each((*mcpserver.Handler).Sync)
}

// CloseMCP ends the sessions of /mcp and of every /mcp/{name}
// (http.Server.RegisterOnShutdown).
func (s *Service) CloseMCP() {
	s.MCP.Close()
	s.vmcp.each((*mcpserver.Handler).Close)
}
