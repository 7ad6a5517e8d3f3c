// Command toolrouterd routes LLM tool calls of any provider's shape to tools
// that are remote HTTP endpoints.
//
//	toolrouterd               serve (configuration from TOOLROUTER_* variables)
//	toolrouterd check FILE    validate a registry file and list every problem
//	toolrouterd schema registry  print the registry file's JSON Schema (for editors)
//	toolrouterd healthcheck   exit 0 when the local server answers /healthz
//	toolrouterd version       print the version and VCS commit
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(int(ee))
		}
		fmt.Fprintln(os.Stderr, "toolrouterd:", err)
		os.Exit(1)
	}
}

// exitError is an exit status whose message was already printed.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// run is the whole program; ctx is cancelled on SIGINT/SIGTERM. getenv
// (os.Getenv) serves the registry's ${VAR}s, the tracing and memory
// settings and healthcheck's address; the TOOLROUTER_* configuration is
// read from the process environment by config.Load (envconfig, which
// tells a variable set but empty from an unset one).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 {
		switch args[1] {
		case "check":
			return runCheck(args[2:], getenv, stdout, stderr)
		case "schema":
			return runSchema(args[2:], stdout, stderr)
		case "healthcheck":
			return runHealthcheck(ctx, getenv, stderr)
		case "version", "--version":
			return runVersion(stdout)
		case "serve":
		case "-h", "--help", "help":
			fmt.Fprintln(stdout, "usage: toolrouterd [serve] | toolrouterd check FILE | toolrouterd schema registry | toolrouterd healthcheck | toolrouterd version")
			return nil
		default:
			fmt.Fprintf(stderr, "toolrouterd: unknown command %q (want serve, check FILE, schema registry, healthcheck or version)\n", args[1])
			return exitError(2)
		}
	}
	return serve(ctx, getenv, stderr)
}
