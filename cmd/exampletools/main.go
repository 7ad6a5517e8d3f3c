// Command exampletools serves the example tools of examples/registry.yaml (see package
// internal/exampletools) on one address, 127.0.0.1:9001 unless -addr or EXAMPLETOOLS_ADDR
// says otherwise. `make run` starts it next to toolrouterd.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/exampletools"
)

const (
	defaultAddr = "127.0.0.1:9001"
	addrEnv     = "EXAMPLETOOLS_ADDR"

	// shutdownTimeout bounds how long in-flight calls may finish after SIGINT/SIGTERM.
	shutdownTimeout = 10 * time.Second
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "exampletools: %v\n", err)
		os.Exit(1)
	}
}

// errUsage marks a command-line error, already reported by the flag package.
var errUsage = errors.New("usage error")

// run serves the example tools until ctx is done, then shuts down gracefully.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	addrDefault := defaultAddr
	if v := getenv(addrEnv); v != "" {
		addrDefault = v
	}
	fs := flag.NewFlagSet("exampletools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", addrDefault, "listen address (default from "+addrEnv+" when set)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "exampletools: unexpected arguments: %v\n", fs.Args())
		fs.Usage()
		return fmt.Errorf("%w: unexpected arguments", errUsage)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           exampletools.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// No WriteTimeout: /slow sleeps up to a minute and /big streams large replies;
		// both stop when the client goes away.
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 1 << 20,
	}
	fmt.Fprintf(stderr, "exampletools: listening on http://%s\n", ln.Addr())

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: in-flight calls did not finish within %v: %w", shutdownTimeout, err)
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
