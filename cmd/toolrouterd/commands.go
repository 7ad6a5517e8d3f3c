package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/registry"
)

// runCheck validates a registry file: exit 0, or 1 with every problem.
func runCheck(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: toolrouterd check FILE")
		return exitError(2)
	}
	reg, err := registry.Load(args[0], getenv)
	if err != nil {
		var probs registry.Problems
		if errors.As(err, &probs) {
			fmt.Fprintln(stderr, probs.Error())
			fmt.Fprintf(stderr, "%s: %d problem(s)\n", args[0], len(probs))
			return exitError(1)
		}
		fmt.Fprintln(stderr, err)
		return exitError(1)
	}
	fmt.Fprintf(stdout, "%s: ok, %d tool(s), %d provider(s), %d MCP server(s)\n", args[0], len(reg.Tools()), len(reg.Providers()), len(reg.MCPServers()))
	return nil
}

// runHealthcheck asks the local server's /healthz (for container health
// checks, where no curl exists).
func runHealthcheck(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	addr := getenv("TOOLROUTER_ADDR")
	if addr == "" {
		addr = ":8080"
	}
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		fmt.Fprintln(stderr, "healthcheck:", err)
		return exitError(1)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "healthcheck:", err)
		return exitError(1)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(stderr, "healthcheck: status", resp.Status)
		return exitError(1)
	}
	return nil
}
