package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/toolrouterd/toolrouterd/internal/config"
	"github.com/toolrouterd/toolrouterd/internal/randid"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/service"
	"github.com/toolrouterd/toolrouterd/internal/telemetry"
)

func newLogger(c config.Config, w io.Writer) zerolog.Logger {
	level, _ := zerolog.ParseLevel(c.LogLevel)
	if c.LogFormat == "console" {
		// Colours only on a terminal: a log file or pipe gets plain text.
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !isTerminal(w)}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Str("service", "toolrouterd").Logger()
}

// isTerminal reports whether w is a character device (a terminal), not a
// file or a pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// serve reads the configuration, wires the service (internal/service) and
// serves it until ctx is cancelled, then drains in-flight requests. It logs
// "listening" with the bound address (TOOLROUTER_ADDR may ask for port 0).
func serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		// A misspelt variable may be why: say so next to the error (only
		// those close to a setting; the registry's names are not known).
		for _, u := range config.UnknownVars(os.Environ()) {
			if u.Closest != "" {
				fmt.Fprintln(stderr, "toolrouterd: warning:", u)
			}
		}
		fmt.Fprintln(stderr, "toolrouterd: config:", err)
		return exitError(2)
	}
	log := newLogger(cfg, stderr)
	if limit := setMemoryLimit(getenv, os.ReadFile); limit > 0 {
		log.Info().Int64("bytes", limit).Msg("memory limit set to 90% of the container's (GOMEMLIMIT is unset)")
	}
	setGCPercent(getenv)
	envRead := &readNames{getenv: getenv}
	tel, err := telemetry.Setup(ctx, envRead.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "toolrouterd: tracing:", err)
		return exitError(2)
	}
	defer flushTraces(tel, log)

	reg := registry.Empty()
	if cfg.Registry == "" {
		log.Warn().Msg("TOOLROUTER_REGISTRY is not set: starting with no tools")
	} else if reg, err = registry.Load(cfg.Registry, envRead.Getenv); err != nil {
		// A misspelt variable (of a ${VAR} the file reads, say) may be
		// why: the warnings first, with what the file read so far.
		warnUnknownVars(log, os.Environ(), envRead, registry.Empty())
		var probs registry.Problems
		if errors.As(err, &probs) {
			fmt.Fprintf(stderr, "toolrouterd: TOOLROUTER_REGISTRY: %s has %d problem(s):\n%v\n", cfg.Registry, len(probs), err)
		} else {
			fmt.Fprintf(stderr, "toolrouterd: TOOLROUTER_REGISTRY: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		return exitError(1)
	}
	warnUnknownVars(log, os.Environ(), envRead, reg)
	svc, err := service.New(ctx, service.Options{Config: cfg, Registry: reg, Getenv: getenv, Logger: log, Owner: instanceID(), Telemetry: tel, Version: currentVersion().String()})
	if err != nil {
		// Start-up failures name the variable at fault, like config errors.
		log.Error().Err(err).Str("store", service.StoreKind(cfg.Store)).Msg("cannot start")
		return exitError(1)
	}
	defer svc.Close()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		log.Error().Err(err).Str("addr", cfg.Addr).Msg("TOOLROUTER_ADDR: cannot listen")
		return exitError(1)
	}
	// Who can reach the listener: with no authentication, loopback only
	// unless TOOLROUTER_ALLOW_UNAUTHENTICATED says otherwise.
	exp, err := checkExposure(ln.Addr(), cfg.Addr, !svc.Unauthenticated(), cfg.AllowUnauthenticated)
	if err != nil {
		ln.Close()
		fmt.Fprintln(stderr, "toolrouterd:", err)
		return exitError(2)
	}
	if exp.Auth && !exp.Loopback && !cfg.AllowUnauthenticated {
		svc.RequireAuth() // a reload must not open it up
	}
	if !exp.Auth && !exp.Loopback {
		log.Warn().Str("addr", ln.Addr().String()).Msg("TOOLROUTER_ALLOW_UNAUTHENTICATED=true: serving a non-loopback address with no authentication; anyone who can reach it can call every tool")
	}
	srv := &http.Server{
		Handler:           svc.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20,
	}
	srv.RegisterOnShutdown(svc.CloseMCP) // end MCP sessions' open streams, or Shutdown waits for them

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
		startup.Info().Str("addr", ln.Addr().String()).Bool("loopback_only", exp.Loopback).Bool("auth", exp.Auth).Str("reach", exp.Why).
			Int("tools", svc.Tools()).Str("store", service.StoreKind(cfg.Store)).Msg("listening")
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
		if err := svc.Runner.Wait(sctx); err != nil {
			log.Warn().Msg("background runs still going at the shutdown timeout; other replicas will mark them interrupted")
		}
		if err := svc.Tasks.Wait(sctx); err != nil {
			log.Warn().Msg("tasks still running at the shutdown timeout; other replicas will fail them (their replica stopped)")
		}
		return nil
	})
	if cfg.DebugAddr != "" {
		dln, err := net.Listen("tcp", cfg.DebugAddr)
		if err != nil {
			log.Error().Err(err).Str("addr", cfg.DebugAddr).Msg("TOOLROUTER_DEBUG_ADDR: cannot listen")
			srv.Close()
			return exitError(1)
		}
		dbg := &http.Server{Handler: profiler(), ReadHeaderTimeout: 10 * time.Second}
		log.Info().Str("addr", dln.Addr().String()).Msg("profiler listening (TOOLROUTER_DEBUG_ADDR)")
		if a, ok := dln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
			log.Warn().Str("addr", dln.Addr().String()).Msg("TOOLROUTER_DEBUG_ADDR is not a loopback address: anyone who reaches it can profile the process (no auth)")
		}
		g.Go(func() error { _ = dbg.Serve(dln); return nil })
		g.Go(func() error { <-gctx.Done(); return dbg.Close() })
	}
	g.Go(func() error { svc.PurgeKeys(gctx, 10*time.Minute); return nil })
	g.Go(func() error { svc.ExpireApprovals(gctx, min(cfg.ApprovalTTL/10, 10*time.Second)); return nil })
	g.Go(func() error { svc.SweepAudit(gctx, time.Minute); return nil })
	g.Go(func() error { svc.WatchPins(gctx, 2*time.Second); return nil })
	g.Go(func() error { svc.Sweep(gctx); return nil })
	g.Go(func() error { reloadOnHUP(gctx, hup, svc, log); return nil })
	if err := g.Wait(); err != nil {
		log.Error().Err(err).Msg("stopped")
		return exitError(1)
	}
	log.Info().Msg("stopped")
	return nil
}

// reloadOnHUP reloads the registry file on each SIGHUP from hup; a bad
// file is logged and the registry in force stays.
func reloadOnHUP(ctx context.Context, hup <-chan os.Signal, svc *service.Service, log zerolog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := svc.Reload(ctx); err != nil {
				log.Error().Err(err).Msg("registry reload rejected; keeping the registry in force")
				continue
			}
			log.Info().Int("tools", svc.Tools()).Msg("registry reloaded")
		}
	}
}

// profiler is Go's profiler (net/http/pprof) under /debug/pprof/, for
// the TOOLROUTER_DEBUG_ADDR listener only.
func profiler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// instanceID names this replica in the runs it owns.
func instanceID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randid.Hex(4))
}

// flushTraces exports the spans still buffered before the process exits.
func flushTraces(tel *telemetry.Telemetry, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		log.Warn().Err(err).Msg("flush traces")
	}
}

// readNames is a getenv that records the names asked for: what the
// tracing setup and the registry (its ${VAR}s and key_env) read at start.
type readNames struct {
	getenv func(string) string
	mu     sync.Mutex
	names  []string
}

func (r *readNames) Getenv(name string) string {
	r.mu.Lock()
	r.names = append(r.names, name)
	r.mu.Unlock()
	return r.getenv(name)
}

func (r *readNames) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.names)
}

// warnUnknownVars logs a warning for each TOOLROUTER_* variable of environ
// (or one whose prefix is misspelt, config.UnknownVars) that nothing reads (a setting, a variable read at start, a provider's
// api_key_env), with the setting it is probably meant to be: a misspelt
// setting otherwise passes silently. The value is never logged (it may be
// a secret). A warning, not a refusal: a variable set for another tool
// of the same name prefix must not stop the server.
func warnUnknownVars(log zerolog.Logger, environ []string, read *readNames, reg *registry.Registry) {
	also := read.Names()
	for _, p := range reg.Providers() {
		if p.APIKeyEnv != "" {
			also = append(also, p.APIKeyEnv)
		}
	}
	for _, u := range config.UnknownVars(environ, also...) {
		ev := log.Warn().Str("variable", u.Name)
		if u.Closest != "" {
			ev = ev.Str("did_you_mean", u.Closest)
		}
		ev.Msg(u.String())
	}
}
