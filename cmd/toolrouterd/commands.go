package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/suggest"
)

// runCheck validates a registry file: exit 0, or 1 with every problem.
func runCheck(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: toolrouterd check FILE")
		return exitError(2)
	}
	reg, err := registry.Load(args[0], getenv)
	// A client key's variable that is unset is a warning here (CI checks
	// a registry without its secrets; start-up refuses it): check the rest
	// with a stand-in key per such variable.
	warnings, unset := unsetKeys(err)
	if len(unset) > 0 {
		reg, err = registry.Load(args[0], func(name string) string {
			if unset[name] {
				return "unset-" + name
			}
			return getenv(name)
		})
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
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
	for _, w := range append(clientWarnings(args[0], reg), providerKeyWarnings(args[0], reg, getenv)...) {
		fmt.Fprintln(stderr, "warning:", w)
	}
	fmt.Fprintf(stdout, "%s: ok, %d tool(s), %d provider(s), %d MCP server(s), %d client(s)\n", args[0], len(reg.Tools()), len(reg.Providers()), len(reg.MCPServers()), len(reg.Clients()))
	return nil
}

// runSchema prints the JSON Schema of the registry file, for editors and
// the YAML language server (docs/registry.md "Editors").
func runSchema(args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 || args[0] != "registry" {
		fmt.Fprintln(stderr, "usage: toolrouterd schema registry")
		return exitError(2)
	}
	if _, err := stdout.Write(registry.Schema()); err != nil {
		return fmt.Errorf("write the registry schema: %w", err)
	}
	return nil
}

// unsetKeys picks from err, Load's error, the problems of clients whose
// key_env variable is unset, and the set of those variables.
func unsetKeys(err error) ([]registry.Problem, map[string]bool) {
	var probs registry.Problems
	if !errors.As(err, &probs) {
		return nil, nil
	}
	var warn []registry.Problem
	names := map[string]bool{}
	for _, p := range probs {
		if p.UnsetKeyEnv != "" {
			p.Why += " (the service refuses to start without it)"
			warn = append(warn, p)
			names[p.UnsetKeyEnv] = true
		}
	}
	return warn, names
}

// clientWarnings lists the tool patterns of clients and virtual servers
// that match no tool of the file and could match no tool of its MCP
// servers (whose tools are known only when the service asks them): likely
// typos, but not errors. A pattern that is a plain name close to a tool's
// says which.
func clientWarnings(file string, reg *registry.Registry) []registry.Problem {
	var names []string
	for _, t := range reg.Tools() {
		names = append(names, t.Name)
	}
	unused := func(patterns []string, line int, field string) (out []registry.Problem) {
		for _, p := range patterns {
			if patternUsed(p, reg) {
				continue
			}
			why := fmt.Sprintf("pattern %q matches no tool", p)
			if s, ok := suggest.Closest(p, names); ok && !strings.ContainsAny(p, "*?[") {
				why += fmt.Sprintf("; did you mean %q?", s)
			}
			out = append(out, registry.Problem{File: file, Line: line, Field: field, Why: why})
		}
		return out
	}
	var out []registry.Problem
	for _, c := range reg.Clients() {
		out = append(out, unused(c.Tools, c.ToolsLine, fmt.Sprintf("client %q: tools", c.Name))...)
	}
	for _, vs := range reg.VirtualServers() {
		out = append(out, unused(vs.Tools, vs.ToolsLine, fmt.Sprintf("virtual server %q: tools", vs.Name))...)
	}
	return out
}

// providerKeyWarnings lists the providers whose api_key_env variable is
// unset or empty: a warning, as for a client's key_env (a registry is
// checked in CI without its secrets), where the service starts but every
// call to the provider fails.
func providerKeyWarnings(file string, reg *registry.Registry, getenv func(string) string) []registry.Problem {
	var out []registry.Problem
	for _, p := range reg.Providers() {
		if p.APIKeyEnv == "" || getenv(p.APIKeyEnv) != "" {
			continue
		}
		out = append(out, registry.Problem{File: file, Line: reg.APIKeyEnvLine(p.Name), Field: fmt.Sprintf("provider %q: api_key_env", p.Name),
			Why: fmt.Sprintf("environment variable %s is unset or empty (every run with this provider fails without it)", p.APIKeyEnv)})
	}
	return out
}

func patternUsed(p string, reg *registry.Registry) bool {
	scope := access.NewScope([]string{p})
	for _, t := range reg.Tools() {
		if scope.Match(t.Name) {
			return true
		}
	}
	for _, s := range reg.MCPServers() {
		if access.CouldMatch(p, s.Prefix) {
			return true
		}
	}
	return false
}

// runHealthcheck asks the local server's /healthz (for container health
// checks, where no curl exists).
func runHealthcheck(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	addr := getenv("TOOLROUTER_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080" // TOOLROUTER_ADDR's default
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
