package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"

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
func (r *Registry) Search() bool { return r.discovery == "search" }

// Code reports the registry-wide discovery: code (plain /mcp, /schemas
// and /runs list search_tools and execute_code, docs/code-mode.md).
func (r *Registry) Code() bool { return r.discovery == "code" }

func (p *parser) virtualServers(reg *Registry) []VirtualServer {
	var out []VirtualServer
	first := map[string]int{}
	for _, ptr := range p.items("/virtual_servers") {
		vs := VirtualServer{Name: p.str(ptr + "/name"), Line: p.line(ptr), ToolsLine: p.lines[ptr+"/tools"], Tools: p.globs(ptr + "/tools"), Search: p.str(ptr+"/discovery") == "search",
			Code:           p.str(ptr+"/discovery") == "code",
			MaxOutputBytes: p.num(ptr + "/max_output_bytes"), MaxOutputTokens: p.num(ptr + "/max_output_tokens"),
			Instructions: p.str(ptr + "/instructions"), SpendLimit: p.spendLimit(ptr + "/spend_limit")}
		ok := !p.dup(first, ptr+"/name") && vs.Name != ""
		vs.Overrides = p.overrides(ptr, vs, reg)
		p.exportedNames(vs, reg, ptr)
		if ok {
			out = append(out, vs)
		}
	}
	return out
}

// overrides builds a view's overrides in file order and checks each
// against the tool it names.
func (p *parser) overrides(ptr string, vs VirtualServer, reg *Registry) []Override {
	var out []Override
	for _, op := range p.keys(ptr + "/overrides") {
		tool := lastTok(op)
		ov := Override{Tool: tool, Line: p.keyLines[op], Name: p.str(op + "/name"), Description: p.str(op + "/description"),
			Title: p.str(op + "/title"), Defaults: p.obj(op + "/defaults")}
		if hidden := p.strs(op + "/hidden"); len(hidden) > 0 {
			ov.Hidden = hidden
		}
		if ap := op + "/annotations"; p.obj(ap) != nil {
			ov.Hints = &toolrouter.Hints{}
			for k, dst := range map[string]**bool{"readOnlyHint": &ov.Hints.ReadOnly, "destructiveHint": &ov.Hints.Destructive,
				"idempotentHint": &ov.Hints.Idempotent, "openWorldHint": &ov.Hints.OpenWorld} {
				if v, ok := p.get(ap + "/" + k).(bool); ok {
					*dst = &v
				}
			}
		}
		out = append(out, ov)
		// Which tool it is for: a file tool is checked now; a tool of an
		// MCP server is known only once the server lists it.
		if !matchesAny(vs.Tools, tool) {
			p.atKey(op, "names a tool outside this server's tools"+didYouMean(tool, viewTools(vs, reg)))
			continue
		}
		if t, found := reg.byName[tool]; found && t.Name == tool {
			for _, pr := range vserver.CheckOverride(t, ov) {
				p.pending = append(p.pending, pending{line: ov.Line, ptr: op, suffix: "." + pr.Field, why: pr.Why})
			}
			continue
		}
		if !underMCPServer(reg, tool) {
			p.atKey(op, "names no tool of the registry (nor of an MCP server, by its prefix)"+didYouMean(tool, viewTools(vs, reg)))
		}
	}
	return out
}

// viewTools is the names of the file's tools that vs offers: those an
// override may name (a misspelt one's "did you mean").
func viewTools(vs VirtualServer, reg *Registry) []string {
	var out []string
	for _, t := range reg.tools {
		if matchesAny(vs.Tools, t.Name) {
			out = append(out, t.Name)
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

// exportedNames reports two file tools of a server exported under one
// name, and, in search mode, a tool exported as a meta-tool.
func (p *parser) exportedNames(vs VirtualServer, reg *Registry, ptr string) {
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
		np := ptr + "/overrides/" + escapePtr(t.Name) + "/name"
		if other, dup := seen[name]; dup {
			p.atLine(line, np, fmt.Sprintf("exported name %q is also that of tool %q", name, other))
			continue
		}
		seen[name] = t.Name
		if vs.Search && (name == SearchToolsName || name == CallToolName) {
			p.atLine(line, np, fmt.Sprintf("exported name %q is a meta-tool's in discovery: search", name))
		}
		if vs.Code && (name == SearchToolsName || name == toolrouter.ExecuteCodeName) {
			p.atLine(line, np, fmt.Sprintf("exported name %q is a meta-tool's in discovery: code", name))
		}
	}
}

// clientServers checks the virtual_servers of clients against the
// servers defined.
func (p *parser) clientServers(servers []VirtualServer) {
	known := map[string]bool{}
	for _, s := range servers {
		known[s.Name] = true
	}
	for _, cp := range p.items("/clients") {
		ptr := cp + "/virtual_servers"
		for _, sp := range p.items(ptr) {
			if name := p.str(sp); name != "" && !known[name] {
				defined := "none"
				if len(known) > 0 {
					defined = strings.Join(slices.Sorted(maps.Keys(known)), ", ")
				}
				p.atLine(p.line(ptr), sp, fmt.Sprintf("no virtual server named %q (defined: %s)", name, defined))
			}
		}
	}
}
