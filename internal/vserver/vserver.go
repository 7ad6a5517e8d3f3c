// Package vserver builds what a caller is shown of the registry (docs/mcp.md
// "Virtual servers and tool search"): the curated views of the registry's
// virtual servers (which tools, under which names, descriptions and
// schemas, with which fixed arguments) and, in search mode, the two
// meta-tools search_tools and call_tool over a BM25 index of a view's
// tools. Every entry point (/mcp/{name}, /schemas, /route, /runs) puts the
// request's View in its context; the router resolves names within it.
package vserver

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/codemode"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// aliasFormats are the formats whose name rules may give an exported name
// an alias (as for registry tools).
var aliasFormats = []toolrouter.Format{toolrouter.FormatOpenAI, toolrouter.FormatGemini, toolrouter.FormatMCP}

// Entry is one tool of a view: its exported definition and the registry
// tool it stands for.
type Entry struct {
	Exported *toolrouter.Tool // Name, Description, Title, Hints, InputSchema as the view shows them
	Real     *toolrouter.Tool
	Defaults map[string]any
	Hidden   map[string]bool
}

// View is a curated view of the registry: a virtual server's, the
// registry-wide one in search mode, or the empty one of a client bound to
// virtual servers on a path that names none.
type View struct {
	Name   string // "" for the registry-wide and the empty view
	Search bool
	// Code is discovery: code (docs/code-mode.md): the view lists
	// search_tools and execute_code.
	Code bool
	// MaxOutputBytes and MaxOutputTokens are the server's output budgets
	// (0: none), for the output budgets to apply.
	MaxOutputBytes, MaxOutputTokens int
	// Instructions are the server's instructions (returned at initialize).
	Instructions string

	entries []*Entry
	byName  map[string]*Entry // exported names and their aliases
	// patterns are the server's tools patterns (["*"] for the
	// registry-wide view), for the names that are no tools (Covers).
	patterns []string
	index    *index
}

// Registry is the registry in force (*registry.Registry): its tools and
// the virtual servers its file declares. A new value is a reload.
type Registry interface {
	Tools() []*toolrouter.Tool
	// Quarantined is the tools Lookup finds but Tools does not list.
	Quarantined() []*toolrouter.Tool
	Lookup(name string) (*toolrouter.Tool, bool)
	VirtualServers() []toolrouter.VirtualServer
	Search() bool
	Code() bool
}

// Set is the views of one registry.
type Set struct {
	reg   Registry
	views map[string]*View
	// all is the registry-wide view: nil unless the registry sets
	// discovery: search.
	all *View
	// Warnings are the overrides left unapplied (tools of MCP servers that
	// are missing or do not fit them), for the log.
	Warnings []string
}

var empty = &View{byName: map[string]*Entry{}, index: newIndex(nil)}

// Empty is the view with no tool.
func Empty() *View { return empty }

// Build makes the views of reg.
func Build(reg Registry) *Set {
	s := &Set{reg: reg, views: map[string]*View{}}
	for _, vs := range reg.VirtualServers() {
		s.views[vs.Name] = s.build(vs)
	}
	if reg.Search() || reg.Code() {
		all := &View{Search: reg.Search(), Code: reg.Code(), byName: map[string]*Entry{}, patterns: []string{"*"}}
		for _, t := range append(reg.Tools(), reg.Quarantined()...) {
			all.add(&Entry{Exported: t, Real: t}, t.Quarantine == "") // quarantined: found by name only, as below
		}
		all.index = newIndex(all.entries)
		s.all = all
	}
	return s
}

func (s *Set) build(vs toolrouter.VirtualServer) *View {
	v := &View{Name: vs.Name, Search: vs.Search, Code: vs.Code, MaxOutputBytes: vs.MaxOutputBytes, MaxOutputTokens: vs.MaxOutputTokens, Instructions: vs.Instructions, byName: map[string]*Entry{}, patterns: vs.Tools}
	overrides := map[string]toolrouter.Override{}
	for _, ov := range vs.Overrides {
		overrides[ov.Tool] = ov
		if _, ok := s.reg.Lookup(ov.Tool); !ok {
			s.warn(vs.Name, "override of tool %q not applied: no such tool (is its MCP server up?)", ov.Tool)
		}
	}
	// A quarantined tool of the view is found by its exported name but
	// never listed nor indexed, as in the registry: a call of it is then
	// refused as quarantined (permission, with the reason), not "not
	// found". Listed tools come first, so they keep their names.
	for _, t := range append(s.reg.Tools(), s.reg.Quarantined()...) {
		if !slices.ContainsFunc(vs.Tools, func(p string) bool { return toolrouter.Glob(p, t.Name) }) {
			continue
		}
		listed := t.Quarantine == ""
		ov, has := overrides[t.Name]
		if has {
			if probs := CheckOverride(t, ov); len(probs) > 0 {
				if listed {
					s.warn(vs.Name, "tool %q left out: overrides.%s.%s: %s", t.Name, t.Name, probs[0].Field, probs[0].Why)
				}
				continue
			}
		}
		e := entry(t, ov, v.budget())
		if v.Search && (e.Exported.Name == toolrouter.SearchToolsName || e.Exported.Name == toolrouter.CallToolName) ||
			v.Code && (e.Exported.Name == toolrouter.SearchToolsName || e.Exported.Name == toolrouter.ExecuteCodeName) {
			if listed {
				s.warn(vs.Name, "tool %q left out: its exported name is a meta-tool's", t.Name)
			}
			continue
		}
		if err := v.add(e, listed); err != nil && listed {
			s.warn(vs.Name, "tool %q left out: %v", t.Name, err)
		}
	}
	v.index = newIndex(v.entries)
	return v
}

func (s *Set) warn(server, format string, args ...any) {
	s.Warnings = append(s.Warnings, fmt.Sprintf("virtual server %q: ", server)+fmt.Sprintf(format, args...))
}

// add adds an entry under its exported name and aliases, unless one of
// them is taken; listed, also to the view's list (and search index).
func (v *View) add(e *Entry, listed bool) error {
	name := e.Exported.Name
	names := []string{name}
	for _, f := range aliasFormats {
		if a := toolrouter.ExportName(f, name); !slices.Contains(names, a) {
			names = append(names, a)
		}
	}
	for _, n := range names {
		if other, taken := v.byName[n]; taken {
			return fmt.Errorf("its exported name (or alias) %q is taken by tool %q", n, other.Real.Name)
		}
	}
	for _, n := range names {
		v.byName[n] = e
	}
	if listed {
		v.entries = append(v.entries, e)
	}
	return nil
}

// entry exports t with its override, its budget tightened by the view's
// (what its listing tells clients: a tool whose outputs may be cut
// advertises no output schema).
func entry(t *toolrouter.Tool, ov toolrouter.Override, budget toolrouter.OutputBudget) *Entry {
	x := *t
	x.Endpoint, x.Headers, x.ValidateArgs = "", nil, nil
	x.Budget = t.Budget.Tighter(budget)
	if ov.Name != "" {
		x.Name = ov.Name
	}
	if ov.Description != "" {
		x.Description = ov.Description
	}
	x.Title, x.Hints = ov.Title, ov.Hints
	e := &Entry{Exported: &x, Real: t, Defaults: ov.Defaults, Hidden: map[string]bool{}}
	for _, h := range ov.Hidden {
		e.Hidden[h] = true
	}
	for k := range ov.Defaults {
		e.Hidden[k] = true
	}
	if len(e.Hidden) > 0 {
		x.InputSchema = curated(t.InputSchema, e.Hidden)
	}
	return e
}

// curated is schema without the hidden properties (nor their required).
func curated(schema map[string]any, hidden map[string]bool) map[string]any {
	out := maps.Clone(schema)
	if props, ok := schema["properties"].(map[string]any); ok {
		p := maps.Clone(props)
		for h := range hidden {
			delete(p, h)
		}
		out["properties"] = p
	}
	if req, ok := schema["required"].([]any); ok {
		r := slices.DeleteFunc(slices.Clone(req), func(x any) bool { s, _ := x.(string); return hidden[s] })
		if len(r) == 0 {
			delete(out, "required")
		} else {
			out["required"] = r
		}
	}
	return out
}

// For is the view of a request for client c naming server ("" when it
// names none): the server's, if it exists and c may use it (else an
// ENOTFOUND naming the field "server"); with no server, the empty view
// for a client bound to virtual servers, the registry-wide view in search
// mode, or nil (the registry as it is).
func (s *Set) For(c *access.Client, server string) (*View, error) {
	if server != "" {
		v := s.views[server]
		if v == nil || !c.MayUse(server) {
			return nil, &toolrouter.Error{Code: toolrouter.ENOTFOUND, Field: "server",
				Message: fmt.Sprintf("server: unknown virtual server %q", server)}
		}
		return v, nil
	}
	if c.Bound() {
		return empty, nil
	}
	return s.all, nil
}

// Reaches reports whether c may call the registry tool named tool in
// one of the virtual servers it may use.
func (s *Set) Reaches(c *access.Client, tool string) bool {
	for name, v := range s.views {
		if c.MayUse(name) && c.Allows(tool) && slices.ContainsFunc(v.entries, func(e *Entry) bool { return e.Real.Name == tool }) {
			return true
		}
	}
	return false
}

// View is the virtual server name (nil when there is none), whoever
// asks.
func (s *Set) View(name string) *View { return s.views[name] }

// Registry is the registry the views were built of.
func (s *Set) Registry() Registry { return s.reg }

// Catalog keeps the views of the registry in force, rebuilt when it
// changes (a reload, tools discovered on MCP servers).
type Catalog struct {
	registry func() Registry
	warn     func(string)
	mu       sync.Mutex
	cur      atomic.Pointer[Set]
}

// NewCatalog returns a catalog over the registry in force; warn (may be
// nil) hears each warning of a rebuild.
func NewCatalog[R Registry](reg func() R, warn func(string)) *Catalog {
	return &Catalog{registry: func() Registry { return reg() }, warn: warn}
}

// Current returns the views of the registry in force.
func (c *Catalog) Current() *Set {
	reg := c.registry()
	if s := c.cur.Load(); s != nil && s.reg == reg {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.cur.Load(); s != nil && s.reg == reg {
		return s
	}
	s := Build(reg)
	if c.warn != nil {
		for _, w := range s.Warnings {
			c.warn(w)
		}
	}
	c.cur.Store(s)
	return s
}

// ViewName is the virtual server's name ("" for the registry-wide view):
// whose spend limit its calls count against (docs/costs.md).
func (v *View) ViewName() string {
	if v == nil {
		return ""
	}
	return v.Name
}

// Tools is the tools the view lists to c: the meta-tools in search mode,
// else the exported tools c may use.
func (v *View) Tools(c *access.Client) []*toolrouter.Tool {
	if v.Search {
		return metaTools
	}
	if v.Code {
		return codeTools
	}
	var out []*toolrouter.Tool
	for _, e := range v.entries {
		if c.Allows(e.Real.Name) {
			out = append(out, e.Exported)
		}
	}
	return out
}

// All is every tool the view lists, whoever asks (Visible filters it).
func (v *View) All() []*toolrouter.Tool {
	if v.Search {
		return metaTools
	}
	if v.Code {
		return codeTools
	}
	out := make([]*toolrouter.Tool, len(v.entries))
	for i, e := range v.entries {
		out[i] = e.Exported
	}
	return out
}

// Visible reports whether c sees the listed tool name.
func (v *View) Visible(c *access.Client, name string) bool {
	if v.Search {
		return name == toolrouter.SearchToolsName || name == toolrouter.CallToolName
	}
	if v.Code {
		return name == toolrouter.SearchToolsName || name == toolrouter.ExecuteCodeName
	}
	e, ok := v.byName[name]
	return ok && c.Allows(e.Real.Name)
}

// Covers reports whether c reaches name through the view: a name of
// the registry's namespace that is no tool (an MCP server's prompt or
// resource, docs/mcp.md "Resources and prompts") that the view's tools
// patterns match and c's scope allows. The empty view covers nothing.
func (v *View) Covers(c *access.Client, name string) bool {
	return slices.ContainsFunc(v.patterns, func(p string) bool { return toolrouter.Glob(p, name) }) && c.Allows(name)
}

// Lookup finds an entry by exported name or alias.
func (v *View) Lookup(name string) (*Entry, bool) {
	e, ok := v.byName[name]
	return e, ok
}

// Fixes reports whether the view fixes argument arg of the tool it calls
// name (hidden, or given a default): no caller sets it.
func (v *View) Fixes(name, arg string) bool {
	e, ok := v.byName[name]
	return ok && e.hides(arg)
}

// hides reports whether the argument named k is one of e's hidden ones,
// whatever its case: decoders such as Go's encoding/json match object
// keys to fields case-insensitively (Unicode simple folding).
func (e *Entry) hides(k string) bool {
	if e.Hidden[k] {
		return true
	}
	for h := range e.Hidden {
		if strings.EqualFold(h, k) {
			return true
		}
	}
	return false
}

// Resolve finds the registry tool a call names within the view, for the
// client c: call_tool is unwrapped into the call it carries, and the
// call's arguments become what the tool gets (hidden ones dropped,
// defaults filled in). search_tools is answered here: local is its
// outcome (or a call_tool that cannot be read). ok is false for a name
// the view does not have.
func (v *View) Resolve(c *access.Client, call *toolrouter.Call) (tool *toolrouter.Tool, local *toolrouter.Outcome, ok bool) {
	if v.Search {
		switch call.ToolName {
		case toolrouter.SearchToolsName:
			out := v.search(c, call.Arguments)
			return nil, &out, true
		case toolrouter.CallToolName:
			name, args, err := unwrap(call.Arguments)
			if err != nil {
				out := toolrouter.Failure(toolrouter.CategorySchema, "%v", err)
				return nil, &out, true
			}
			call.ToolName, call.Arguments = name, args
		}
	}
	if v.Code {
		switch call.ToolName {
		case toolrouter.SearchToolsName:
			out := v.search(c, call.Arguments)
			return nil, &out, true
		case toolrouter.ExecuteCodeName:
			return v.executeCode(), nil, true
		}
	}
	e, ok := v.byName[call.ToolName]
	if !ok {
		return nil, nil, false
	}
	if len(e.Hidden) > 0 {
		args := make(map[string]any, len(call.Arguments)+len(e.Defaults))
		for k, val := range call.Arguments {
			if !e.hides(k) {
				args[k] = val
			}
		}
		maps.Copy(args, e.Defaults)
		call.Arguments = args
	}
	return e.Real, nil, true
}

// unwrap reads call_tool's arguments: the name of the tool and its
// arguments.
func unwrap(in map[string]any) (string, map[string]any, error) {
	name, _ := in["name"].(string)
	if name == "" {
		return "", nil, fmt.Errorf("call_tool: name must be the non-empty name of a tool search_tools found")
	}
	var args map[string]any
	switch a := in["arguments"].(type) {
	case nil:
		args = map[string]any{}
	case map[string]any:
		args = a
	case string: // some models send arguments as JSON text
		if json.Unmarshal([]byte(a), &args) != nil || args == nil {
			return "", nil, fmt.Errorf("call_tool: arguments must be an object")
		}
	default:
		return "", nil, fmt.Errorf("call_tool: arguments must be an object, got %s", toolrouter.JSONKind(a))
	}
	return name, args, nil
}

// Found is one tool search_tools answers with.
type Found struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Signature is the tool's TypeScript-style signature as a program
	// calls it (docs/code-mode.md); InputSchema its schema, in search
	// mode only (in code mode the signature says it in fewer tokens).
	Signature   string         `json:"signature"`
	InputSchema map[string]any `json:"input_schema,omitempty"`
}

const (
	defaultLimit = 5
	maxLimit     = 50
	maxQuery     = 1000 // bytes: the search's cost grows with the query's terms
)

func (v *View) search(c *access.Client, args map[string]any) toolrouter.Outcome {
	q, _ := args["query"].(string)
	if strings.TrimSpace(q) == "" || len(q) > maxQuery {
		return toolrouter.Failure(toolrouter.CategorySchema, "search_tools: query must be a non-empty string of at most %d bytes", maxQuery)
	}
	limit := defaultLimit
	if l, has := args["limit"]; has && l != nil {
		f, ok := l.(float64)
		if !ok || f != float64(int(f)) || f < 1 || f > maxLimit {
			return toolrouter.Failure(toolrouter.CategorySchema, "search_tools: limit must be an integer in 1..%d", maxLimit)
		}
		limit = int(f)
	}
	found := []Found{}
	for _, e := range v.index.search(q, limit, func(e *Entry) bool { return c.Allows(e.Real.Name) }) {
		f := Found{Name: e.Exported.Name, Description: e.Exported.Description,
			Signature: codemode.Signature(e.Exported.Name, e.Exported.InputSchema, e.Exported.OutputSchema)}
		if !v.Code {
			f.InputSchema = schemaOf(e.Exported)
		}
		found = append(found, f)
	}
	b, err := codemode.Marshal(map[string]any{"tools": found})
	if err != nil {
		return toolrouter.Failure(toolrouter.CategoryExecution, "search_tools: %v", err)
	}
	return toolrouter.Outcome{Output: b, Answered: true}
}

func schemaOf(t *toolrouter.Tool) map[string]any {
	if t.InputSchema == nil {
		return map[string]any{"type": "object"}
	}
	return t.InputSchema
}

var yes, no = true, false

// The meta-tools of search mode.
var metaTools = []*toolrouter.Tool{
	{
		Name: toolrouter.SearchToolsName, Kind: toolrouter.KindTool, Hints: &toolrouter.Hints{ReadOnly: &yes, OpenWorld: &no},
		Description: "Search the tools available to you by what you want to do. Returns the best matching tools' names, descriptions and input schemas; call one with call_tool.",
		InputSchema: map[string]any{"type": "object", "required": []any{"query"}, "properties": map[string]any{
			"query": map[string]any{"type": "string", "description": "What you want to do, in a few words"},
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": maxLimit, "description": "How many tools to return (default 5)"},
		}},
	},
	{
		Name: toolrouter.CallToolName, Kind: toolrouter.KindTool,
		Description: "Call a tool that search_tools found, by its name, with arguments matching its input schema.",
		InputSchema: map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{
			"name":      map[string]any{"type": "string", "description": "The tool's name, as search_tools returned it"},
			"arguments": map[string]any{"type": "object", "description": "The tool's arguments"},
		}},
	},
}

// codeTools are the meta-tools of code mode (docs/code-mode.md).
var codeTools = []*toolrouter.Tool{
	{
		Name: toolrouter.SearchToolsName, Kind: toolrouter.KindTool, Hints: &toolrouter.Hints{ReadOnly: &yes, OpenWorld: &no},
		Description: "Search the tools available to you by what you want to do. Returns the best matching tools' names, descriptions and TypeScript signatures, to call from execute_code.",
		InputSchema: metaTools[0].InputSchema,
	},
	executeCode,
}

// executeCode is execute_code as a view lists it.
var executeCode = &toolrouter.Tool{
	Name: toolrouter.ExecuteCodeName, Kind: toolrouter.KindTool,
	Description: "Run a short JavaScript program that calls the tools search_tools found and returns one answer. " +
		"The program is the body of an async function: it sees `tools`, with an async function per tool " +
		"(`const r = await tools.name({...})`, signatures as search_tools gives them), and `console.log`; " +
		"nothing else (no network, files, timers, require or import). `return` the answer: only it and the " +
		"logs come back, so filter and summarise the tools' outputs in the program. A failed tool call throws " +
		"(catch it); a call that waits for approval stops the program (run it again once approved).",
	InputSchema: map[string]any{"type": "object", "required": []any{"code"}, "properties": map[string]any{
		"code": map[string]any{"type": "string", "description": "The program: JavaScript, the body of an async function"},
	}},
}

// executeCode is the tool an execute_code call of the view resolves to:
// run by the router's code runner, with the view's output budget.
func (v *View) executeCode() *toolrouter.Tool {
	t := *executeCode
	t.Code, t.Budget = true, v.budget()
	return &t
}

// budget is the view's own output budget (none for a nil view).
func (v *View) budget() toolrouter.OutputBudget {
	if v == nil {
		return toolrouter.OutputBudget{}
	}
	return toolrouter.OutputBudget{Bytes: v.MaxOutputBytes, Tokens: v.MaxOutputTokens}
}

// ResolveCall is Resolve for the client in ctx (toolrouter.View).
func (v *View) ResolveCall(ctx context.Context, call *toolrouter.Call) (*toolrouter.Tool, *toolrouter.Outcome, bool) {
	return v.Resolve(access.FromContext(ctx), call)
}

// Callable is the exported names the client in ctx may call through the
// view, in search mode too (call_tool reaches them), as
// toolrouter.View: what Resolve would find for it.
func (v *View) Callable(ctx context.Context) []string {
	c := access.FromContext(ctx)
	var out []string
	for _, e := range v.entries {
		if c.Allows(e.Real.Name) {
			out = append(out, e.Exported.Name)
		}
	}
	return out
}

// OutputBudget is the view's own output budget (toolrouter.View): it
// tightens its tools' own (docs/output-budgets.md "Output budgets").
func (v *View) OutputBudget() toolrouter.OutputBudget { return v.budget() }

// CodeTools are the meta-tools a view in code mode lists (for
// bench/context to count them as listed).
func CodeTools() []*toolrouter.Tool { return slices.Clone(codeTools) }
