package registry

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// WithTools returns a registry holding r's tools followed by extra (tools
// discovered elsewhere, such as on MCP servers), and every other section of
// r (providers, MCP servers, clients, views, guardrails…). r is not
// modified. Lookup finds the extra tools by canonical name and by their
// provider aliases, like file tools.
//
// A file tool always wins: an extra tool whose canonical name or one of
// whose aliases is already taken (by a file tool, or by an earlier extra
// tool), or whose name is not a valid tool name, is left out. The registry
// returned is always usable; the error, when not nil, lists every tool left
// out and why (errors.Join of one error per tool), for the caller to log.
func (r *Registry) WithTools(extra []*toolrouter.Tool) (*Registry, error) {
	out := &Registry{
		tools:           slices.Clone(r.tools),
		quarantined:     slices.Clone(r.quarantined),
		byName:          make(map[string]*toolrouter.Tool, len(r.byName)+len(extra)*2),
		providers:       r.providers,
		apiKeyEnvLines:  r.apiKeyEnvLines,
		defaultProvider: r.defaultProvider,
		mcpServers:      r.mcpServers,
		clients:         r.clients,
		virtualServers:  r.virtualServers,
		discovery:       r.discovery,
		guardrails:      r.guardrails,
	}
	maps.Copy(out.byName, r.byName)
	var errs []error
	for _, t := range extra {
		if t == nil {
			continue
		}
		if err := out.addExtra(t); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// addExtra adds one extra tool, or explains why it cannot be added.
func (r *Registry) addExtra(t *toolrouter.Tool) error {
	if !validToolName(t.Name) {
		return fmt.Errorf("tool %q left out: a name must be 1-128 characters of A-Z a-z 0-9 / . _ -", t.Name)
	}
	if other, taken := r.byName[t.Name]; taken {
		if other.Name == t.Name {
			return fmt.Errorf("tool %q left out: %s", t.Name, describeOwner(other, "has the same name"))
		}
		return fmt.Errorf("tool %q left out: its name is an alias of tool %q", t.Name, other.Name)
	}
	var aliases []string
	for _, f := range aliasFormats {
		a := toolrouter.ExportName(f, t.Name)
		if a == t.Name || slices.Contains(aliases, a) {
			continue
		}
		if other, taken := r.byName[a]; taken {
			return fmt.Errorf("tool %q left out: its %s alias %q is taken by tool %q", t.Name, f, a, other.Name)
		}
		aliases = append(aliases, a)
	}
	if t.Quarantine == "" { // a quarantined tool is found by name, never listed
		r.tools = append(r.tools, t)
	} else {
		r.quarantined = append(r.quarantined, t)
	}
	r.byName[t.Name] = t
	for _, a := range aliases {
		r.byName[a] = t
	}
	return nil
}

func describeOwner(other *toolrouter.Tool, what string) string {
	if other.MCPServer != "" {
		return fmt.Sprintf("%s as a tool of MCP server %q", what, other.MCPServer)
	}
	return what + " as a tool of the registry file"
}
