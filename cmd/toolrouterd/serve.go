package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/toolrouterd/toolrouterd/api"
	"github.com/toolrouterd/toolrouterd/internal/agent"
	"github.com/toolrouterd/toolrouterd/internal/config"
	"github.com/toolrouterd/toolrouterd/internal/httpapi"
	"github.com/toolrouterd/toolrouterd/internal/mcpclient"
	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/metrics"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/router"
	"github.com/toolrouterd/toolrouterd/internal/store"
)

func newLogger(c config.Config, w io.Writer) zerolog.Logger {
	level, _ := zerolog.ParseLevel(c.LogLevel)
	if c.LogFormat == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Str("service", "toolrouterd").Logger()
}

// serve wires config → logger → store → registry → router → httpapi and
// serves until ctx is cancelled, then drains in-flight requests.
func serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "toolrouterd: config:", err)
		return exitError(2)
	}
	log := newLogger(cfg, stderr)

	// Start-up failures name the variable at fault, like config errors.
	st, err := store.Open(ctx, cfg.Store)
	if err != nil {
		log.Error().Err(err).Str("store", storeKind(cfg.Store)).Msg("TOOLROUTER_STORE: cannot open the store")
		return exitError(1)
	}
	defer st.Close()

	reg := registry.Empty()
	if cfg.Registry == "" {
		log.Warn().Msg("TOOLROUTER_REGISTRY is not set: starting with no tools")
	} else if reg, err = registry.Load(cfg.Registry, getenv); err != nil {
		var probs registry.Problems
		if errors.As(err, &probs) {
			fmt.Fprintf(stderr, "toolrouterd: TOOLROUTER_REGISTRY: %s has %d problem(s):\n%v\n", cfg.Registry, len(probs), err)
		} else {
			fmt.Fprintf(stderr, "toolrouterd: TOOLROUTER_REGISTRY: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		return exitError(1)
	}
	holder := registry.NewHolder(cfg.Registry, getenv, reg)
	if len(cfg.APIKeys) == 0 {
		log.Warn().Msg("TOOLROUTER_API_KEYS is empty: requests are not authenticated")
	}

	m := metrics.New()
	exec := remote.New(remote.Options{})
	defer exec.CloseIdle()
	mcpm := mcpclient.New(log, m.Registerer())
	defer mcpm.Close()
	mcpm.OnChange(func() {
		if err := holder.SetExtra(mcpm.Tools()); err != nil {
			log.Warn().Err(err).Msg("MCP tools left out of the registry")
		}
	})
	mcpm.Sync(ctx, reg.MCPServers())
	rt := &router.Router{
		Tools:            func() router.Tools { return holder.Current() },
		Exec:             &mcpclient.Executor{HTTP: exec, MCP: mcpm},
		Seq:              st,
		Results:          st,
		Observer:         m,
		BatchConcurrency: cfg.BatchConcurrency,
	}
	runner := &agent.Runner{
		Router:    rt,
		Registry:  func() agent.Registry { return holder.Current() },
		Adapter:   adapters(getenv),
		Runs:      st,
		Owner:     instanceID(),
		Heartbeat: cfg.RunHeartbeat,
		// The tool calls of one model turn are a batch too.
		ToolConcurrency: cfg.BatchConcurrency,
	}
	mcpSrv := mcpserver.New(mcpserver.Deps{
		Router:       rt,
		Tools:        func() mcpserver.Tools { return holder.Current() },
		Logger:       log,
		MaxBodyBytes: cfg.MaxBodyBytes,
	})
	mcpm.OnChange(mcpSrv.Sync) // /mcp sessions hear of MCP tool changes
	handler, err := httpapi.NewServer(httpapi.Deps{
		Logger:       log,
		Router:       rt,
		Tools:        func() httpapi.Tools { return holder.Current() },
		Store:        st,
		Metrics:      m,
		Runs:         runner,
		Keys:         st,
		KeyTTL:       cfg.IdempotencyTTL,
		APIKeys:      cfg.APIKeys,
		MaxBodyBytes: cfg.MaxBodyBytes,
		Spec:         api.Spec,
		MCP:          mcpSrv,
	})
	if err != nil {
		return fmt.Errorf("build HTTP server: %w", err)
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		log.Error().Err(err).Str("addr", cfg.Addr).Msg("TOOLROUTER_ADDR: cannot listen")
		return exitError(1)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          nil,
	}
	srv.RegisterOnShutdown(mcpSrv.Close) // end MCP sessions' open streams, or Shutdown waits for them

	// SIGHUP is caught before the "listening" line: a reload asked for
	// once the service says it is up must not kill it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		// Whatever the level: it is how a caller of TOOLROUTER_ADDR=host:0
		// learns the port.
		startup := log.Level(zerolog.InfoLevel)
		startup.Info().Str("addr", ln.Addr().String()).Int("tools", len(holder.Current().Tools())).Str("store", storeKind(cfg.Store)).Msg("listening")
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		log.Info().Dur("timeout", cfg.ShutdownTimeout).Msg("shutting down: finishing in-flight requests")
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close() // cut what did not finish in time, so its runs end and are saved
			return fmt.Errorf("shutdown: %w", err)
		}
		if err := runner.Wait(sctx); err != nil {
			log.Warn().Msg("background runs still going at the shutdown timeout; other replicas will mark them interrupted")
		}
		return nil
	})
	if p, ok := st.(keyPurger); ok {
		g.Go(func() error { purgeKeys(gctx, p, log); return nil })
	}
	g.Go(func() error {
		return reloadOnHUP(gctx, hup, cfg.Registry, holder, m, log, mcpSrv.Sync, func() { mcpm.Sync(gctx, holder.Current().MCPServers()) })
	})
	if err := g.Wait(); err != nil {
		log.Error().Err(err).Msg("stopped")
		return exitError(1)
	}
	log.Info().Msg("stopped")
	return nil
}

// reloadOnHUP reloads the registry file on each SIGHUP from hup; a bad file
// is logged and the registry in force stays. After a reload it calls each of
// reloaded.
func reloadOnHUP(ctx context.Context, hup <-chan os.Signal, path string, h *registry.Holder, m *metrics.Metrics, log zerolog.Logger, reloaded ...func()) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			if path == "" {
				log.Warn().Msg("SIGHUP ignored: TOOLROUTER_REGISTRY is not set, there is no file to reload")
				continue
			}
			if err := h.Reload(); err != nil {
				m.Reload(false)
				log.Error().Err(err).Msg("registry reload rejected; keeping the registry in force")
				continue
			}
			m.Reload(true)
			log.Info().Int("tools", len(h.Current().Tools())).Msg("registry reloaded")
			for _, f := range reloaded {
				f()
			}
		}
	}
}

func storeKind(url string) string {
	for i := 0; i+2 < len(url); i++ {
		if url[i:i+3] == "://" {
			return url[:i]
		}
	}
	return url
}

// instanceID names this replica in the runs it owns.
func instanceID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%x", host, os.Getpid(), b)
}

// keyPurger is a store that can delete its expired idempotency keys.
type keyPurger interface {
	PurgeExpiredKeys(ctx context.Context) (int, error)
}

// purgeKeys deletes expired idempotency keys every 10 minutes, so the
// table does not grow without bound (ClaimKey already ignores them).
func purgeKeys(ctx context.Context, p keyPurger, log zerolog.Logger) {
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := p.PurgeExpiredKeys(ctx); err != nil {
				log.Warn().Err(err).Msg("purge expired idempotency keys")
			} else if n > 0 {
				log.Debug().Int("keys", n).Msg("purged expired idempotency keys")
			}
		}
	}
}
