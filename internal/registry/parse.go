package registry

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolrouterd/toolrouterd/internal/inputschema"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

const (
	defaultTimeout = 30 * time.Second
	maxTimeout     = 10 * time.Minute
	maxRetries     = 10
	maxNameLen     = 128
)

// Default base URLs of the provider kinds, as their official SDKs take them.
// Bedrock has none: the AWS SDK finds the endpoint of the region.
var defaultBaseURL = map[string]string{
	"openai":           "https://api.openai.com/v1",
	"openai-responses": "https://api.openai.com/v1",
	"anthropic":        "https://api.anthropic.com",
	"gemini":           "https://generativelanguage.googleapis.com",
	"bedrock":          "",
	"ollama":           "http://localhost:11434",
}

// providerKinds lists the provider kinds, for errors.
const providerKinds = "openai, openai-responses, anthropic, gemini, bedrock or ollama"

var awsRegion = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Parse parses and validates a registry file. filename only labels
// problems. getenv expands ${VAR} in headers; nil means an empty
// environment. A bad file yields Problems listing everything wrong with it.
func Parse(filename string, data []byte, getenv func(string) string) (*Registry, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	p := &parser{file: filename, getenv: getenv, seen: map[Problem]bool{}, budget: maxNodes}
	reg := p.registry(p.document(data))
	if len(p.probs) > 0 {
		p.probs.sortByLine()
		return nil, p.probs
	}
	return reg, nil
}

func (p *parser) registry(root *yaml.Node) *Registry {
	reg := Empty()
	if isNull(root) {
		return reg
	}
	root = deref(root)
	if root.Kind != yaml.MappingNode {
		p.addAt(root, where{}, "", "the registry must be a mapping with keys tools, providers, default_provider, mcp_servers, clients, virtual_servers, discovery, guardrails")
		return reg
	}
	f := p.fields(root, where{}, "tools", "providers", "default_provider", "mcp_servers", "clients", "virtual_servers", "discovery", "guardrails")
	reg.tools = p.tools(f["tools"])
	reg.providers = p.providers(f["providers"])
	reg.defaultProvider = p.defaultProvider(f["default_provider"], reg.providers)
	reg.mcpServers = p.mcpServers(f["mcp_servers"])
	reg.clients = p.clients(f["clients"])
	reg.guardrails = p.guardrails(f["guardrails"])
	for _, t := range reg.tools {
		reg.byName[t.Name] = t
	}
	reg.search = p.discovery(f["discovery"], where{})
	reg.virtualServers = p.virtualServers(f["virtual_servers"], reg)
	p.clientServers(reg.clients, reg.virtualServers)
	for _, t := range reg.tools {
		for _, f := range aliasFormats {
			if a := toolrouter.ExportName(f, t.Name); reg.byName[a] == nil {
				reg.byName[a] = t
			}
		}
	}
	return reg
}

// parsedTool is a tool and where its name is, for the checks across tools.
type parsedTool struct {
	tool     *toolrouter.Tool
	nameLine int
}

func (p *parser) tools(e entry) []*toolrouter.Tool {
	var parsed []parsedTool
	first := map[string]int{} // name → line
	for i, item := range p.list(e, where{}, "tools") {
		pt, ok := p.tool(item, i)
		if !ok {
			continue
		}
		if line, dup := first[pt.tool.Name]; dup {
			p.add(pt.nameLine, where{tool: pt.tool.Name}, "name", fmt.Sprintf("duplicate name (first at line %d)", line))
			continue
		}
		first[pt.tool.Name] = pt.nameLine
		parsed = append(parsed, pt)
	}
	p.aliasCollisions(parsed)
	tools := make([]*toolrouter.Tool, len(parsed))
	for i, pt := range parsed {
		tools[i] = pt.tool
	}
	return tools
}

// tool reads one tool; ok is false when it has no valid name (the other
// problems of a tool are collected but do not stop the checks across
// tools).
func (p *parser) tool(item *yaml.Node, i int) (pt parsedTool, ok bool) {
	n := deref(item)
	if n == nil || n.Kind != yaml.MappingNode {
		p.addAt(item, where{}, fmt.Sprintf("tools[%d]", i), "must be a mapping")
		return pt, false
	}
	w := where{prefix: fmt.Sprintf("tools[%d].", i)}
	if name, ok := peekString(n, "name"); ok && name != "" {
		w = where{tool: name}
	}
	f := p.fields(n, w, "name", "description", "endpoint", "kind", "input_schema", "output_schema",
		"timeout", "headers", "idempotent", "retries", "approval", "circuit", "max_output_bytes", "max_output_tokens", "keep")

	t := &toolrouter.Tool{Kind: toolrouter.KindTool, Timeout: defaultTimeout, Circuit: p.circuit(f["circuit"], w)}
	nameOK := false
	if p.required(f["name"], n, w, "name") {
		if name, ok := p.str(f["name"], w, "name"); ok {
			t.Name = name
			pt.nameLine = f["name"].val.Line
			if validToolName(name) {
				nameOK = true
			} else {
				p.addAt(f["name"].val, w, "name", "must be 1-128 characters of A-Z a-z 0-9 / . _ -")
			}
		}
	}
	t.Description, _ = p.str(f["description"], w, "description")
	if p.required(f["endpoint"], n, w, "endpoint") {
		if s, ok := p.endpoint(f["endpoint"], w, "endpoint"); ok {
			t.Endpoint = s
		}
	}
	if s, ok := p.str(f["kind"], w, "kind"); ok {
		switch k := toolrouter.ToolKind(s); k {
		case toolrouter.KindTool, toolrouter.KindValidation:
			t.Kind = k
		default:
			p.addAt(f["kind"].val, w, "kind", fmt.Sprintf("must be tool or validation, got %q", s))
		}
	}
	t.InputSchema, t.ValidateArgs = p.inputSchema(f["input_schema"], w)
	t.OutputSchema, t.ValidateOutput = p.outputSchema(f["output_schema"], w)
	if d, ok := p.duration(f["timeout"], w, "timeout"); ok {
		t.Timeout = d
	}
	t.Headers = p.headers(f["headers"], w, "headers")
	t.Idempotent, _ = p.boolean(f["idempotent"], w, "idempotent")
	if r, ok := p.integer(f["retries"], w, "retries"); ok {
		switch {
		case r < 0 || r > maxRetries:
			p.addAt(f["retries"].val, w, "retries", fmt.Sprintf("must be between 0 and %d", maxRetries))
		case r > 0 && !t.Idempotent:
			p.addAt(f["retries"].val, w, "retries", "retries require idempotent: true")
		default:
			t.Retries = r
		}
	}
	if s, ok := p.str(f["approval"], w, "approval"); ok {
		switch s {
		case "required":
			t.Approval = true
		case "none":
		default:
			p.addAt(f["approval"].val, w, "approval", fmt.Sprintf("must be required or none, got %q", s))
		}
	}
	t.Budget = p.outputBudget(f, w)
	pt.tool = t
	return pt, nameOK
}

// peekString finds a string key of a mapping before the mapping is read,
// so that the problems of a tool can name it.
func peekString(n *yaml.Node, key string) (string, bool) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k != nil && k.Kind == yaml.ScalarNode && k.Value == key && v != nil && v.Kind == yaml.ScalarNode && v.ShortTag() != "!!null" {
			return v.Value, true
		}
	}
	return "", false
}

func validToolName(name string) bool {
	if name == "" || len(name) > maxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// aliasCollisions reports tools reachable under another tool's name: an
// alias equal to another tool's canonical name or alias. The later tool in
// the file gets the problem.
func (p *parser) aliasCollisions(tools []parsedTool) {
	canonical := map[string]int{}
	for i, pt := range tools {
		canonical[pt.tool.Name] = i
	}
	type owner struct {
		i int
		f toolrouter.Format
	}
	aliases := map[string]owner{}
	for i, pt := range tools {
		name := pt.tool.Name
		for _, f := range aliasFormats {
			a := toolrouter.ExportName(f, name)
			if a == name {
				continue
			}
			if o, ok := aliases[a]; ok {
				if o.i != i {
					p.add(pt.nameLine, where{tool: name}, "name",
						fmt.Sprintf("its %s alias %q is also the %s alias of tool %q", f, a, o.f, tools[o.i].tool.Name))
				}
				continue
			}
			aliases[a] = owner{i, f}
			j, ok := canonical[a]
			switch {
			case !ok:
			case j < i:
				p.add(pt.nameLine, where{tool: name}, "name", fmt.Sprintf("its %s alias %q is the name of another tool", f, a))
			default:
				p.add(tools[j].nameLine, where{tool: a}, "name", fmt.Sprintf("is the %s alias of tool %q", f, name))
			}
		}
	}
}

// httpURL checks an absolute http or https URL with a host and, when it
// has one, a port in 1..65535. A problem never shows the URL, which may
// hold an expanded secret.
func (p *parser) httpURL(n *yaml.Node, s string, w where, field string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		p.addAt(n, w, field, "must be an absolute http or https URL with a host")
		return false
	}
	if port := u.Port(); port != "" {
		if n2, err := strconv.Atoi(port); err != nil || n2 < 1 || n2 > 65535 {
			p.addAt(n, w, field, fmt.Sprintf("port %s is outside 1..65535", port))
			return false
		}
	}
	return true
}

// endpoint reads a tool's or MCP server's URL: ${VAR} expands from the
// environment as in headers, and credentials must come from a variable,
// never be written in the file (http://user:${TOKEN}@host is fine,
// http://user:secret@host is not).
func (p *parser) endpoint(e entry, w where, field string) (string, bool) {
	raw, ok := p.str(e, w, field)
	if !ok {
		return "", false
	}
	if literalCredentials(raw) {
		p.addAt(e.val, w, field, "has credentials written in the URL; take them from the environment (user:${TOKEN}@host) or send them in headers")
		return "", false
	}
	s, ok := p.expand(raw, e.val, w, field)
	if !ok || !p.httpURL(e.val, s, w, field) {
		return "", false
	}
	return s, true
}

// literalCredentials reports a URL whose userinfo holds a secret written
// out: a password, or a lone user name (a token), that is not made of
// ${VAR} references only.
func literalCredentials(raw string) bool {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return false
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return false
	}
	userinfo := rest[:at]
	secret := userinfo
	if _, pass, hasPass := strings.Cut(userinfo, ":"); hasPass {
		secret = pass
	}
	return envRefs.ReplaceAllString(secret, "") != ""
}

var envRefs = regexp.MustCompile(`\$\{[^}]*\}`)

func (p *parser) duration(e entry, w where, field string) (time.Duration, bool) {
	if e.val == nil {
		return 0, false
	}
	if e.val.Kind != yaml.ScalarNode {
		p.addAt(e.val, w, field, "must be a duration string")
		return 0, false
	}
	d, err := time.ParseDuration(e.val.Value)
	switch {
	case err != nil:
		p.addAt(e.val, w, field, fmt.Sprintf("must be a duration string like 30s, got %q", e.val.Value))
	case d <= 0:
		p.addAt(e.val, w, field, "must be greater than 0")
	case d > maxTimeout:
		p.addAt(e.val, w, field, "must be at most 10m")
	default:
		return d, true
	}
	return 0, false
}

// circuit reads a circuit breaker setting, {failures: N, cooldown: D};
// what it leaves out takes the global defaults (toolrouter.Circuit).
func (p *parser) circuit(e entry, w where) toolrouter.Circuit {
	var c toolrouter.Circuit
	if e.val == nil {
		return c
	}
	if e.val.Kind != yaml.MappingNode {
		p.addAt(e.val, w, "circuit", "must be a mapping like {failures: 5, cooldown: 30s}")
		return c
	}
	cw := where{tool: w.tool, prefix: w.prefix + "circuit."}
	f := p.fields(e.val, cw, "failures", "cooldown")
	if n, ok := p.integer(f["failures"], cw, "failures"); ok {
		if n < 0 || n > maxCircuitFailures {
			p.addAt(f["failures"].val, cw, "failures", fmt.Sprintf("must be between 0 (off) and %d", maxCircuitFailures))
		} else {
			c.Failures, c.Off = n, n == 0
		}
	}
	if d, ok := p.duration(f["cooldown"], cw, "cooldown"); ok {
		c.Cooldown = d
	}
	return c
}

// maxCircuitFailures bounds a circuit's failures setting.
const maxCircuitFailures = 1000

// headers reads a mapping of header names to values, expanding ${VAR}.
// A problem never shows a header's value.
func (p *parser) headers(e entry, w where, field string) map[string]string {
	if e.val == nil {
		return nil
	}
	if e.val.Kind != yaml.MappingNode {
		p.addAt(e.val, w, field, "must be a mapping of header names to strings")
		return nil
	}
	out := map[string]string{}
	lines := map[string]int{}
	for _, kv := range p.pairs(e.val, w, field+".") {
		name := kv.key.Value
		hf := field + "." + name
		if !validHeaderName(name) {
			p.addAt(kv.key, w, hf, "invalid header name")
			continue
		}
		canon := http.CanonicalHeaderKey(name)
		if line, dup := lines[canon]; dup {
			p.addAt(kv.key, w, hf, fmt.Sprintf("duplicate header (first at line %d)", line))
			continue
		}
		lines[canon] = kv.key.Line
		v := deref(kv.val)
		if v == nil || v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
			p.addAt(kv.val, w, hf, "must be a string")
			continue
		}
		val, ok := p.expand(v.Value, kv.val, w, hf)
		if !ok {
			continue
		}
		if !validHeaderValue(val) {
			p.addAt(kv.val, w, hf, "value must not contain control characters")
			continue
		}
		out[canon] = val
	}
	return out
}

// expand replaces every ${VAR} in s by the variable's value; a variable
// that is unset or empty is a problem naming it.
func (p *parser) expand(s string, n *yaml.Node, w where, field string) (string, bool) {
	var b strings.Builder
	ok := true
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			p.addAt(n, w, field, "unterminated ${")
			return "", false
		}
		name := rest[:j]
		switch v := p.getenv(name); {
		case !envName.MatchString(name):
			p.addAt(n, w, field, fmt.Sprintf("invalid variable name %s", strconv.Quote(name)))
			ok = false
		case v == "":
			p.addAt(n, w, field, fmt.Sprintf("environment variable %s is unset or empty", name))
			ok = false
		default:
			b.WriteString(v)
		}
		s = rest[j+1:]
	}
	return b.String(), ok
}

// validHeaderName reports whether s is an HTTP token (RFC 9110).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// object reads an optional mapping field as JSON values.
func (p *parser) object(e entry, w where, field string) map[string]any {
	m, _, _ := p.objectLines(e, w, field)
	return m
}

func (p *parser) objectLines(e entry, w where, field string) (map[string]any, map[string]int, bool) {
	if e.val == nil {
		return nil, nil, true
	}
	if e.val.Kind != yaml.MappingNode {
		p.addAt(e.val, w, field, "must be a mapping")
		return nil, nil, false
	}
	lines := map[string]int{}
	v, ok := p.toJSON(e.val, "", 0, lines, w, field)
	m, _ := v.(map[string]any)
	return m, lines, ok
}

// inputSchema reads, checks and compiles a tool's input schema.
func (p *parser) inputSchema(e entry, w where) (map[string]any, func(map[string]any) error) {
	const field = "input_schema"
	schema, lines, ok := p.objectLines(e, w, field)
	if !ok {
		return nil, nil
	}
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	if t, has := schema["type"]; has && t != "object" {
		p.add(lines["/type"], w, field+"/type", `must be "object"`)
		ok = false
	}
	validate, problems := inputschema.Compile(schema)
	for _, sp := range problems {
		p.add(lineFor(lines, sp.Ptr, lineOf(e.val)), w, field+sp.Ptr, "invalid JSON Schema: "+sp.Why)
	}
	if problems != nil || !ok {
		return nil, nil
	}
	return schema, validate
}

// outputSchema reads, checks and compiles a tool's output schema: every
// output of the tool is checked against it (docs/trusting-tools.md "Typed
// outputs"). A
// validation tool's {mode: strict} compiles too (mode is no keyword) and
// accepts any output.
func (p *parser) outputSchema(e entry, w where) (map[string]any, func(any) error) {
	const field = "output_schema"
	schema, lines, ok := p.objectLines(e, w, field)
	if !ok || schema == nil {
		return nil, nil
	}
	validate, problems := inputschema.CompileValue(schema)
	for _, sp := range problems {
		p.add(lineFor(lines, sp.Ptr, lineOf(e.val)), w, field+sp.Ptr, "invalid JSON Schema: "+sp.Why)
	}
	return schema, validate
}

// lineFor is the line of the value at ptr, or of its nearest ancestor.
func lineFor(lines map[string]int, ptr string, fallback int) int {
	for {
		if l, ok := lines[ptr]; ok && l > 0 {
			return l
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return fallback
		}
		ptr = ptr[:i]
	}
}

func (p *parser) providers(e entry) []toolrouter.Provider {
	var out []toolrouter.Provider
	first := map[string]int{}
	for i, item := range p.list(e, where{}, "providers") {
		n := deref(item)
		if n == nil || n.Kind != yaml.MappingNode {
			p.addAt(item, where{}, fmt.Sprintf("providers[%d]", i), "must be a mapping")
			continue
		}
		w := where{prefix: fmt.Sprintf("providers[%d].", i)}
		f := p.fields(n, w, "name", "kind", "base_url", "model", "api_key_env", "region", "search_mode", "context_window")
		var pr toolrouter.Provider
		ok := true
		if p.required(f["name"], n, w, "name") {
			pr.Name, _ = p.str(f["name"], w, "name")
			if line, dup := first[pr.Name]; dup {
				p.addAt(f["name"].val, w, "name", fmt.Sprintf("duplicate name (first at line %d)", line))
				ok = false
			} else if pr.Name != "" {
				first[pr.Name] = f["name"].val.Line
			}
		}
		if pr.Name == "" {
			ok = false
		}
		if p.required(f["kind"], n, w, "kind") {
			pr.Kind, _ = p.str(f["kind"], w, "kind")
			if _, known := defaultBaseURL[pr.Kind]; !known && f["kind"].val.Kind == yaml.ScalarNode {
				p.addAt(f["kind"].val, w, "kind", fmt.Sprintf("must be %s, got %q", providerKinds, pr.Kind))
			}
		}
		if s, has := p.str(f["base_url"], w, "base_url"); has {
			if p.httpURL(f["base_url"].val, s, w, "base_url") {
				pr.BaseURL = s
			}
		} else if f["base_url"].val == nil {
			pr.BaseURL = defaultBaseURL[pr.Kind]
		}
		if p.required(f["model"], n, w, "model") {
			pr.Model, _ = p.str(f["model"], w, "model")
		}
		if s, has := p.str(f["region"], w, "region"); has {
			switch {
			case pr.Kind != "bedrock":
				p.addAt(f["region"].val, w, "region", "only kind bedrock takes a region")
			case !awsRegion.MatchString(s):
				p.addAt(f["region"].val, w, "region", fmt.Sprintf("must be an AWS region such as us-east-1, got %q", s))
			default:
				pr.Region = s
			}
		} else if pr.Kind == "bedrock" && f["region"].val == nil {
			p.addAt(n, w, "region", "required for kind bedrock: the AWS region of the model, such as us-east-1")
		}
		if s, has := p.str(f["api_key_env"], w, "api_key_env"); has && pr.Kind == "bedrock" {
			p.addAt(f["api_key_env"].val, w, "api_key_env", "kind bedrock takes AWS credentials from the SDK's default chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, web identity, ECS or EC2 roles), not api_key_env")
		} else if has {
			if envName.MatchString(s) {
				pr.APIKeyEnv = s
			} else {
				p.addAt(f["api_key_env"].val, w, "api_key_env", "must be the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not the key itself")
			}
		}
		if s, has := p.str(f["search_mode"], w, "search_mode"); has {
			if s == "inject" || s == "call" {
				pr.SearchMode = s
			} else {
				p.addAt(f["search_mode"].val, w, "search_mode", fmt.Sprintf("must be call or inject, got %q", s))
			}
		}
		if v, has := p.integer(f["context_window"], w, "context_window"); has {
			if v < 1024 {
				p.addAt(f["context_window"].val, w, "context_window", "must be at least 1024 (tokens)")
			} else {
				pr.ContextWindow = v
			}
		}
		if ok {
			out = append(out, pr)
		}
	}
	return out
}

func (p *parser) defaultProvider(e entry, providers []toolrouter.Provider) string {
	if e.val == nil {
		if len(providers) > 0 {
			return providers[0].Name
		}
		return ""
	}
	name, ok := p.str(e, where{}, "default_provider")
	if !ok {
		return ""
	}
	for _, pr := range providers {
		if pr.Name == name {
			return name
		}
	}
	p.addAt(e.val, where{}, "default_provider", fmt.Sprintf("no provider named %q", name))
	return ""
}

func (p *parser) mcpServers(e entry) []toolrouter.MCPServer {
	var out []toolrouter.MCPServer
	first := map[string]int{}
	for i, item := range p.list(e, where{}, "mcp_servers") {
		n := deref(item)
		if n == nil || n.Kind != yaml.MappingNode {
			p.addAt(item, where{}, fmt.Sprintf("mcp_servers[%d]", i), "must be a mapping")
			continue
		}
		w := where{prefix: fmt.Sprintf("mcp_servers[%d].", i)}
		f := p.fields(n, w, "name", "url", "command", "env", "cwd", "prefix", "tools", "headers", "timeout", "roots",
			"pin", "pin_new", "on_change", "circuit", "tool_budgets", "max_output_bytes", "max_output_tokens", "keep")
		s := toolrouter.MCPServer{Timeout: defaultTimeout, Circuit: p.circuit(f["circuit"], w)}
		if p.required(f["name"], n, w, "name") {
			if name, ok := p.str(f["name"], w, "name"); ok {
				s.Name = name
				switch line, dup := first[name]; {
				case dup:
					p.addAt(f["name"].val, w, "name", fmt.Sprintf("duplicate name (first at line %d)", line))
				case !validToolName(name):
					p.addAt(f["name"].val, w, "name", "must be 1-128 characters of A-Z a-z 0-9 / . _ -")
				default:
					first[name] = f["name"].val.Line
				}
			}
		}
		switch {
		case f["url"].val == nil && f["command"].val == nil:
			p.addAt(n, w, "url", "required (or command, for a stdio server)")
		case f["url"].val != nil && f["command"].val != nil:
			p.addAt(f["command"].val, w, "command", "url and command exclude each other: a server is either remote (url) or a stdio process (command)")
		case f["url"].val != nil:
			if u, ok := p.endpoint(f["url"], w, "url"); ok {
				s.URL = u
			}
			for _, k := range []string{"env", "cwd"} {
				if f[k].val != nil {
					p.addAt(f[k].val, w, k, "only for a stdio server (command)")
				}
			}
		default:
			s.Command, s.Env, s.Dir = p.stdio(f, w)
		}
		s.Prefix = s.Name + "/"
		if prefix, ok := p.str(f["prefix"], w, "prefix"); ok {
			s.Prefix = prefix
			if prefix != "" && !validToolName(prefix) {
				p.addAt(f["prefix"].val, w, "prefix", "must be characters of A-Z a-z 0-9 / . _ -")
			}
		}
		s.Tools = []string{"*"}
		if f["tools"].val != nil {
			s.Tools = []string{}
			for j, it := range p.list(f["tools"], w, "tools") {
				d := deref(it)
				if d == nil || d.Kind != yaml.ScalarNode || d.ShortTag() == "!!null" || d.Value == "" {
					p.addAt(it, w, fmt.Sprintf("tools[%d]", j), "must be a non-empty string")
					continue
				}
				s.Tools = append(s.Tools, d.Value)
			}
		}
		s.Headers = p.headers(f["headers"], w, "headers")
		if d, ok := p.duration(f["timeout"], w, "timeout"); ok {
			s.Timeout = d
		}
		for j, it := range p.list(f["roots"], w, "roots") {
			d := deref(it)
			if d == nil {
				p.addAt(it, w, fmt.Sprintf("roots[%d]", j), "must be a file:// URI")
				continue
			}
			u, err := url.Parse(d.Value)
			if d.Kind != yaml.ScalarNode || err != nil || u.Scheme != "file" || d.Value == "file://" {
				p.addAt(it, w, fmt.Sprintf("roots[%d]", j), "must be a file:// URI")
				continue
			}
			s.Roots = append(s.Roots, d.Value)
		}
		p.pinning(f, w, &s)
		s.Budget = p.outputBudget(f, w)
		s.ToolBudgets = p.toolBudgets(f["tool_budgets"], w)
		out = append(out, s)
	}
	return out
}

// pinning reads how a server's tool definitions are pinned (docs/trusting-tools.md
// "Pinned definitions"): pin (default true), pin_new (quarantine | allow)
// and on_change (quarantine | keep_old).
func (p *parser) pinning(f map[string]entry, w where, s *toolrouter.MCPServer) {
	if pin, ok := p.boolean(f["pin"], w, "pin"); ok {
		s.Unpinned = !pin
	}
	for _, k := range []struct {
		key  string
		to   *string
		want []string
	}{{"pin_new", &s.PinNew, []string{"quarantine", "allow"}}, {"on_change", &s.OnChange, []string{"quarantine", "keep_old"}}} {
		v, ok := p.str(f[k.key], w, k.key)
		if !ok {
			continue
		}
		if !slices.Contains(k.want, v) {
			p.addAt(f[k.key].val, w, k.key, fmt.Sprintf("must be %s or %s, got %q", k.want[0], k.want[1], v))
			continue
		}
		if s.Unpinned {
			p.addAt(f[k.key].val, w, k.key, "only for a pinned server (pin: true)")
			continue
		}
		*k.to = v
	}
}

// stdio reads the command, env and cwd of a stdio MCP server. command is
// a non-empty list of non-empty strings taken literally (no shell, no
// expansion); env maps variable names to strings with ${VAR} expanded
// like headers; cwd is a directory.
func (p *parser) stdio(f map[string]entry, w where) (command []string, env map[string]string, dir string) {
	items := p.list(f["command"], w, "command")
	if c := f["command"].val; c != nil && c.Kind == yaml.SequenceNode && len(items) == 0 {
		p.addAt(f["command"].val, w, "command", "must list the program and its arguments, e.g. [npx, -y, \"@modelcontextprotocol/server-memory\"]")
	}
	for j, it := range items {
		d := deref(it)
		if d == nil || d.Kind != yaml.ScalarNode || d.ShortTag() == "!!null" || (j == 0 && d.Value == "") || strings.ContainsRune(d.Value, 0) {
			p.addAt(it, w, fmt.Sprintf("command[%d]", j), "must be a non-empty string")
			continue
		}
		command = append(command, d.Value)
	}
	if e := f["env"]; e.val != nil {
		if e.val.Kind != yaml.MappingNode {
			p.addAt(e.val, w, "env", "must be a mapping of variable names to strings")
		} else {
			env = map[string]string{}
			for _, kv := range p.pairs(e.val, w, "env.") {
				name := kv.key.Value
				ef := "env." + name
				if !envName.MatchString(name) {
					p.addAt(kv.key, w, ef, "invalid variable name")
					continue
				}
				v := deref(kv.val)
				if v == nil || v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
					p.addAt(kv.val, w, ef, "must be a string")
					continue
				}
				if val, ok := p.expand(v.Value, kv.val, w, ef); ok {
					if strings.ContainsRune(val, 0) {
						p.addAt(kv.val, w, ef, "must not contain NUL")
						continue
					}
					env[name] = val
				}
			}
		}
	}
	if d, ok := p.str(f["cwd"], w, "cwd"); ok {
		if d == "" {
			p.addAt(f["cwd"].val, w, "cwd", "must be a directory path")
		} else {
			dir = d
		}
	}
	return command, env, dir
}
