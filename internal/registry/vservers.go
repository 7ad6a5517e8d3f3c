package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// Names of the meta-tools of search mode (toolrouter's).
const (
	SearchToolsName = toolrouter.SearchToolsName
	CallToolName    = toolrouter.CallToolName
)

// VirtualServer is a virtual server as the file declares it
// (toolrouter.VirtualServer).
type VirtualServer = toolrouter.VirtualServer

// Override is how a virtual server exports one tool (toolrouter.Override).
type Override = toolrouter.Override

// VirtualServers returns the virtual servers in file order.
func (r *Registry) VirtualServers() []VirtualServer { return slices.Clone(r.virtualServers) }

// Search reports the registry-wide discovery: search (plain /mcp,
// /schemas and /runs list the meta-tools).
func (r *Registry) Search() bool { return r.search }

var serverName = clientName

// discovery reads a discovery field: full (false) or search (true).
func (p *parser) discovery(e entry, w where) bool {
	s, ok := p.str(e, w, "discovery")
	if !ok {
		return false
	}
	switch s {
	case "full":
		return false
	case "search":
		return true
	}
	p.addAt(e.val, w, "discovery", fmt.Sprintf("must be full or search, got %q", s))
	return false
}

func (p *parser) virtualServers(e entry, reg *Registry) []VirtualServer {
	var out []VirtualServer
	first := map[string]int{}
	for i, item := range p.list(e, where{}, "virtual_servers") {
		n := deref(item)
		if n == nil || n.Kind != yaml.MappingNode {
			p.addAt(item, where{}, fmt.Sprintf("virtual_servers[%d]", i), "must be a mapping")
			continue
		}
		w := where{prefix: fmt.Sprintf("virtual_servers[%d].", i)}
		if name, ok := peekString(n, "name"); ok && name != "" {
			w = where{prefix: fmt.Sprintf("virtual server %q: ", name)}
		}
		f := p.fields(n, w, "name", "tools", "overrides", "discovery", "max_output_bytes", "max_output_tokens")
		vs := VirtualServer{Line: n.Line}
		ok := p.required(f["name"], n, w, "name")
		if ok {
			vs.Name, _ = p.str(f["name"], w, "name")
			switch line, dup := first[vs.Name]; {
			case dup:
				p.addAt(f["name"].val, w, "name", fmt.Sprintf("duplicate name (first at line %d)", line))
				ok = false
			case !serverName.MatchString(vs.Name):
				p.addAt(f["name"].val, w, "name", "must be 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit")
				ok = false
			default:
				first[vs.Name] = f["name"].val.Line
			}
		}
		if p.required(f["tools"], n, w, "tools") {
			vs.Tools = p.patterns(f["tools"], w, "tools")
		}
		vs.Search = p.discovery(f["discovery"], w)
		for _, k := range []string{"max_output_bytes", "max_output_tokens"} {
			if v, has := p.integer(f[k], w, k); has {
				if min := map[string]int{"max_output_bytes": 256, "max_output_tokens": 1}[k]; v < min {
					p.addAt(f[k].val, w, k, fmt.Sprintf("must be at least %d", min))
					continue
				}
				if k == "max_output_bytes" {
					vs.MaxOutputBytes = v
				} else {
					vs.MaxOutputTokens = v
				}
			}
		}
		vs.Overrides = p.overrides(f["overrides"], w, vs, reg)
		p.exportedNames(vs, reg, w)
		if ok {
			out = append(out, vs)
		}
	}
	return out
}

func (p *parser) overrides(e entry, w where, vs VirtualServer, reg *Registry) []Override {
	if e.val == nil {
		return nil
	}
	if e.val.Kind != yaml.MappingNode {
		p.addAt(e.val, w, "overrides", "must be a mapping of tool names to overrides")
		return nil
	}
	var out []Override
	for _, kv := range p.pairs(e.val, w, "overrides.") {
		tool := kv.key.Value
		ow := where{prefix: w.prefix + "overrides." + tool + "."}
		n := deref(kv.val)
		if n == nil || n.Kind != yaml.MappingNode {
			p.addAt(kv.val, w, "overrides."+tool, "must be a mapping")
			continue
		}
		f := p.fields(n, ow, "name", "description", "title", "annotations", "defaults", "hidden")
		ov := Override{Tool: tool, Line: kv.key.Line}
		if s, has := p.str(f["name"], ow, "name"); has {
			if validToolName(s) {
				ov.Name = s
			} else {
				p.addAt(f["name"].val, ow, "name", "must be 1-128 characters of A-Z a-z 0-9 / . _ -")
			}
		}
		ov.Description, _ = p.str(f["description"], ow, "description")
		ov.Title, _ = p.str(f["title"], ow, "title")
		ov.Hints = p.hints(f["annotations"], ow)
		ov.Defaults = p.object(f["defaults"], ow, "defaults")
		for j, it := range p.list(f["hidden"], ow, "hidden") {
			d := deref(it)
			if d == nil || d.Kind != yaml.ScalarNode || d.ShortTag() == "!!null" || d.Value == "" {
				p.addAt(it, ow, fmt.Sprintf("hidden[%d]", j), "must be an argument name")
				continue
			}
			ov.Hidden = append(ov.Hidden, d.Value)
		}
		out = append(out, ov)
		// Which tool it is for: a file tool is checked now; a tool of an
		// MCP server is known only once the server lists it.
		if !matchesAny(vs.Tools, tool) {
			p.addAt(kv.key, w, "overrides."+tool, "names a tool outside this server's tools")
			continue
		}
		if t, found := reg.byName[tool]; found && t.Name == tool {
			for _, pr := range vserver.CheckOverride(t, ov) {
				p.addAt(kv.key, w, "overrides."+tool+"."+pr.Field, pr.Why)
			}
			continue
		}
		if !underMCPServer(reg, tool) {
			p.addAt(kv.key, w, "overrides."+tool, "names no tool of the registry (nor of an MCP server, by its prefix)")
		}
	}
	return out
}

func matchesAny(patterns []string, name string) bool {
	for _, pat := range patterns {
		if toolrouter.Glob(pat, name) {
			return true
		}
	}
	return false
}

func underMCPServer(reg *Registry, name string) bool {
	for _, s := range reg.mcpServers {
		if strings.HasPrefix(name, s.Prefix) {
			return true
		}
	}
	return false
}

// hints reads the annotations of an override.
func (p *parser) hints(e entry, w where) *toolrouter.Hints {
	if e.val == nil {
		return nil
	}
	if e.val.Kind != yaml.MappingNode {
		p.addAt(e.val, w, "annotations", "must be a mapping of readOnlyHint, destructiveHint, idempotentHint, openWorldHint to true or false")
		return nil
	}
	f := p.fields(e.val, where{prefix: w.prefix + "annotations."}, "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
	h := &toolrouter.Hints{}
	for k, dst := range map[string]**bool{"readOnlyHint": &h.ReadOnly, "destructiveHint": &h.Destructive, "idempotentHint": &h.Idempotent, "openWorldHint": &h.OpenWorld} {
		if v, ok := p.boolean(f[k], where{prefix: w.prefix + "annotations."}, k); ok {
			*dst = &v
		}
	}
	return h
}

// exportedNames reports two file tools of a server exported under one
// name, and, in search mode, a tool exported as a meta-tool.
func (p *parser) exportedNames(vs VirtualServer, reg *Registry, w where) {
	renamed := map[string]Override{}
	for _, ov := range vs.Overrides {
		renamed[ov.Tool] = ov
	}
	seen := map[string]string{}
	for _, t := range reg.tools {
		if !matchesAny(vs.Tools, t.Name) {
			continue
		}
		name, line := t.Name, vs.Line
		if ov, ok := renamed[t.Name]; ok && ov.Name != "" {
			name, line = ov.Name, ov.Line
		}
		if other, dup := seen[name]; dup {
			p.add(line, w, "overrides."+t.Name+".name", fmt.Sprintf("exported name %q is also that of tool %q", name, other))
			continue
		}
		seen[name] = t.Name
		if vs.Search && (name == SearchToolsName || name == CallToolName) {
			p.add(line, w, "overrides."+t.Name+".name", fmt.Sprintf("exported name %q is a meta-tool's in discovery: search", name))
		}
	}
}

// clientServers checks the virtual_servers of clients against the
// servers defined.
func (p *parser) clientServers(clients []Client, servers []VirtualServer) {
	known := map[string]bool{}
	for _, s := range servers {
		known[s.Name] = true
	}
	for _, c := range clients {
		for j, name := range c.VirtualServers {
			if !known[name] {
				defined := "none"
				if len(known) > 0 {
					defined = strings.Join(slices.Sorted(maps.Keys(known)), ", ")
				}
				p.add(c.ServersLine, where{prefix: fmt.Sprintf("client %q: ", c.Name)}, fmt.Sprintf("virtual_servers[%d]", j),
					fmt.Sprintf("no virtual server named %q (defined: %s)", name, defined))
			}
		}
	}
}
