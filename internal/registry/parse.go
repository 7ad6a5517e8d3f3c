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

	"github.com/toolrouterd/toolrouterd/internal/inputschema"
	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/suggest"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

const (
	defaultTimeout = 30 * time.Second
	maxTimeout     = 10 * time.Minute
)

// Default base URLs of the provider kinds, as their official SDKs take them.
// Bedrock has none: the AWS SDK finds the endpoint of the region.
var defaultBaseURL = map[string]string{
	"openai":           "https://api.openai.com/v1",
	"openai-responses": "https://api.openai.com/v1",
	"anthropic":        "https://api.anthropic.com",
	"gemini":           "https://generativelanguage.googleapis.com",
	"ollama":           "http://localhost:11434",
}

// The names of environment variables and of HTTP headers (RFC 9110
// tokens), as the schema's propertyNames of env and headers say.
var (
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
)

// Parse parses and validates a registry file. filename only labels
// problems. getenv expands ${VAR} in headers; nil means an empty
// environment. A bad file yields Problems listing everything wrong with it:
// what the schema (registry.schema.json) says, and what only the checks
// across keys and sections can.
func Parse(filename string, data []byte, getenv func(string) string) (*Registry, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	rs, err := loadSchema()
	if err != nil {
		return nil, err
	}
	p := newParser(filename, getenv, rs)
	if root := p.document(data); !isNull(root) {
		p.val = p.toJSON(root, "", 0, false)
		p.checkSchema()
	}
	reg := p.registry()
	if probs := p.problems(); len(probs) > 0 {
		return nil, probs
	}
	return reg, nil
}

// The values the schema let through, by pointer: the zero value when
// absent (the schema checked the types).
func (p *parser) get(ptr string) any    { v, _ := lookup(p.val, ptr); return v }
func (p *parser) str(ptr string) string { s, _ := p.get(ptr).(string); return s }
func (p *parser) num(ptr string) int    { f, _ := p.get(ptr).(float64); return int(f) }
func (p *parser) flag(ptr string) bool  { b, _ := p.get(ptr).(bool); return b }
func (p *parser) obj(ptr string) map[string]any {
	m, _ := p.get(ptr).(map[string]any)
	return m
}

// items are the pointers of the (valid) items of the list at ptr.
func (p *parser) items(ptr string) []string {
	list, _ := p.get(ptr).([]any)
	var out []string
	for i, v := range list {
		if v != nil {
			out = append(out, ptr+"/"+strconv.Itoa(i))
		}
	}
	return out
}

// strs is the list of strings at ptr: nil when absent.
func (p *parser) strs(ptr string) []string {
	if _, ok := p.get(ptr).([]any); !ok {
		return nil
	}
	out := []string{}
	for _, ip := range p.items(ptr) {
		out = append(out, p.str(ip))
	}
	return out
}

// globs is the list of strings at ptr, nil when absent or empty.
func (p *parser) globs(ptr string) []string {
	if s := p.strs(ptr); len(s) > 0 {
		return s
	}
	return nil
}

// keys are the pointers of the (valid) entries of the mapping at ptr, in
// file order.
func (p *parser) keys(ptr string) []string {
	var out []string
	for _, k := range p.order[ptr] {
		if kp := ptr + "/" + escapePtr(k); p.exists(kp) {
			out = append(out, kp)
		}
	}
	return out
}

func lastTok(ptr string) string { return unescapePtr(ptr[strings.LastIndexByte(ptr, '/')+1:]) }

func (p *parser) registry() *Registry {
	reg := Empty()
	reg.tools = append(p.tools(), p.localSkills()...)
	reg.providers, reg.apiKeyEnvLines = p.providers()
	reg.defaultProvider = p.defaultProvider(reg.providers)
	reg.mcpServers = p.mcpServers()
	reg.clients = p.clients()
	p.checkCredentials(reg)
	reg.guardrails = p.guardrails()
	for _, t := range reg.tools {
		reg.byName[t.Name] = t
	}
	reg.discovery = p.str("/discovery")
	reg.virtualServers = p.virtualServers(reg)
	p.clientServers(reg.virtualServers)
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
	ptr      string
}

func (p *parser) tools() []*toolrouter.Tool {
	var parsed []parsedTool
	first := map[string]int{} // name → line
	for _, ptr := range p.items("/tools") {
		t := p.tool(ptr)
		if t.Name == "" {
			continue
		}
		pt := parsedTool{t, p.line(ptr + "/name"), ptr}
		if p.dup(first, ptr+"/name") {
			continue
		}
		parsed = append(parsed, pt)
	}
	p.aliasCollisions(parsed)
	tools := make([]*toolrouter.Tool, len(parsed))
	for i, pt := range parsed {
		tools[i] = pt.tool
	}
	return tools
}

// tool builds one tool from its checked keys.
func (p *parser) tool(ptr string) *toolrouter.Tool {
	t := &toolrouter.Tool{Name: p.str(ptr + "/name"), Description: p.str(ptr + "/description"), Kind: toolrouter.KindTool,
		Timeout: p.duration(ptr+"/timeout", defaultTimeout), Idempotent: p.flag(ptr + "/idempotent"), Retries: p.num(ptr + "/retries"),
		Approval: p.str(ptr+"/approval") == "required", Task: toolrouter.TaskMode(p.str(ptr + "/task")), Circuit: p.circuit(ptr + "/circuit"), Headers: p.headers(ptr + "/headers"),
		Budget: p.outputBudget(ptr), Auth: p.auth(ptr+"/auth", false), Price: p.price(ptr + "/cost")}
	if k := p.str(ptr + "/kind"); k != "" {
		t.Kind = toolrouter.ToolKind(k)
	}
	if p.exists(ptr + "/endpoint") {
		t.Endpoint, _ = p.endpoint(ptr + "/endpoint")
	}
	if t.Auth != nil && t.Auth.Mode == toolrouter.AuthOAuth && t.Auth.Resource == "" {
		t.Auth.Resource = t.Endpoint // the protected resource: the backend itself
	}
	t.InputSchema, t.ValidateArgs = p.inputSchema(ptr + "/input_schema")
	t.OutputSchema, t.ValidateOutput = p.outputSchema(ptr + "/output_schema")
	return t
}

// toolName is the schema's $defs/toolName, for the tools of MCP servers.
var toolName = regexp.MustCompile(`^[A-Za-z0-9/._-]{1,128}$`)

func validToolName(name string) bool { return toolName.MatchString(name) }

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
	nameOf := func(i int) string { return tools[i].ptr + "/name" }
	for i, pt := range tools {
		name := pt.tool.Name
		for _, f := range aliasFormats {
			a := toolrouter.ExportName(f, name)
			if a == name {
				continue
			}
			if o, ok := aliases[a]; ok {
				if o.i != i {
					p.atLine(pt.nameLine, nameOf(i), fmt.Sprintf("its %s alias %q is also the %s alias of tool %q", f, a, o.f, tools[o.i].tool.Name))
				}
				continue
			}
			aliases[a] = owner{i, f}
			j, ok := canonical[a]
			switch {
			case !ok:
			case j < i:
				p.atLine(pt.nameLine, nameOf(i), fmt.Sprintf("its %s alias %q is the name of another tool", f, a))
			default:
				p.atLine(tools[j].nameLine, nameOf(j), fmt.Sprintf("is the %s alias of tool %q", f, name))
			}
		}
	}
}

// httpURL checks an absolute http or https URL with a host and, when it
// has one, a port in 1..65535. A problem never shows the URL, which may
// hold an expanded secret.
func (p *parser) httpURL(s, ptr string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		p.at(ptr, "must be an absolute http or https URL with a host")
		return false
	}
	if port := u.Port(); port != "" {
		if n2, err := strconv.Atoi(port); err != nil || n2 < 1 || n2 > 65535 {
			p.at(ptr, fmt.Sprintf("port %s is outside 1..65535", port))
			return false
		}
	}
	return true
}

// endpoint reads a tool's, hook's or MCP server's URL: ${VAR} expands from
// the environment as in headers, and credentials must come from a
// variable, never be written in the file (http://user:${TOKEN}@host is
// fine, http://user:secret@host is not).
func (p *parser) endpoint(ptr string) (string, bool) {
	raw := p.str(ptr)
	if literalCredentials(raw) {
		p.at(ptr, "has credentials written in the URL; take them from the environment (user:${TOKEN}@host) or send them in headers")
		return "", false
	}
	s, ok := p.expand(raw, ptr)
	if !ok || !p.httpURL(s, ptr) {
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

// duration reads a duration whose syntax the schema checked: it must be
// greater than 0 and at most 10m; def when absent or bad.
func (p *parser) duration(ptr string, def time.Duration) time.Duration {
	s := p.str(ptr)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		p.at(ptr, fmt.Sprintf("must be a duration string like 30s, got %q", s))
	case d <= 0:
		p.at(ptr, "must be greater than 0")
	case d > maxTimeout:
		p.at(ptr, "must be at most 10m")
	default:
		return d
	}
	return def
}

// circuit reads a circuit breaker setting, {failures: N, cooldown: D};
// what it leaves out takes the global defaults (toolrouter.Circuit).
func (p *parser) circuit(ptr string) toolrouter.Circuit {
	c := toolrouter.Circuit{Failures: p.num(ptr + "/failures"), Cooldown: p.duration(ptr+"/cooldown", 0)}
	c.Off = p.exists(ptr+"/failures") && c.Failures == 0
	return c
}

// headers expands a mapping of header names (checked by the schema) to
// values, in file order. A problem never shows a header's value.
func (p *parser) headers(ptr string) map[string]string {
	if p.obj(ptr) == nil {
		return nil
	}
	out := map[string]string{}
	lines := map[string]int{}
	for _, hp := range p.keys(ptr) {
		canon := http.CanonicalHeaderKey(lastTok(hp))
		if !headerName.MatchString(lastTok(hp)) {
			p.atKey(hp, "invalid header name")
			continue
		}
		if line, dup := lines[canon]; dup {
			p.atKey(hp, fmt.Sprintf("duplicate header (first at line %d)", line))
			continue
		}
		lines[canon] = p.keyLines[hp]
		val, ok := p.expand(p.str(hp), hp)
		if !ok {
			continue
		}
		if !validHeaderValue(val) {
			p.at(hp, "value must not contain control characters")
			continue
		}
		out[canon] = val
	}
	return out
}

// expand replaces every ${VAR} in s by the variable's value; a variable
// that is unset or empty is a problem naming it.
func (p *parser) expand(s, ptr string) (string, bool) {
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
			p.at(ptr, "unterminated ${")
			return "", false
		}
		name := rest[:j]
		switch v := p.getenv(name); {
		case !envName.MatchString(name):
			p.at(ptr, fmt.Sprintf("invalid variable name %s", strconv.Quote(name)))
			ok = false
		case v == "":
			p.at(ptr, fmt.Sprintf("environment variable %s is unset or empty", name))
			ok = false
		default:
			b.WriteString(v)
		}
		s = rest[j+1:]
	}
	return b.String(), ok
}

func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// inputSchema checks and compiles a tool's input schema.
func (p *parser) inputSchema(ptr string) (map[string]any, func(map[string]any) error) {
	schema := p.obj(ptr)
	if p.brokenUnder(ptr) {
		return nil, nil
	}
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	ok := true
	if t, has := schema["type"]; has && t != "object" {
		p.at(ptr+"/type", `must be "object"`)
		ok = false
	}
	validate, problems := inputschema.Compile(schema)
	if !ok { // "type" has its problem already: one message a place
		problems = slices.DeleteFunc(problems, func(sp inputschema.Problem) bool { return sp.Ptr == "/type" })
	}
	p.schemaProblems(problems, ptr)
	if len(problems) > 0 || !ok {
		return nil, nil
	}
	return schema, validate
}

// outputSchema checks and compiles a tool's output schema: every output
// of the tool is checked against it (docs/trusting-tools.md "Typed
// outputs"). A validation tool's {mode: strict} compiles too (mode is no
// keyword) and accepts any output.
func (p *parser) outputSchema(ptr string) (map[string]any, func(any) error) {
	schema := p.obj(ptr)
	if schema == nil || p.brokenUnder(ptr) {
		return nil, nil
	}
	validate, problems := inputschema.CompileValue(schema)
	p.schemaProblems(problems, ptr)
	return schema, validate
}

func (p *parser) schemaProblems(problems []inputschema.Problem, ptr string) {
	for _, sp := range problems {
		why := "invalid JSON Schema: " + sp.Why
		if v, ok := lookup(p.val, ptr+sp.Ptr); ok && v == nil {
			// A key with nothing after it: in YAML, most often because
			// the lines meant under it are indented as far as it.
			why += " (it is empty: are the lines meant under it indented too little?)"
		}
		p.at(ptr+sp.Ptr, why)
	}
}

// brokenUnder reports a value at or below ptr that the conversion from
// YAML could not make (its problem is reported).
func (p *parser) brokenUnder(ptr string) bool {
	for b := range p.broken {
		if b == ptr || strings.HasPrefix(b, ptr+"/") {
			return true
		}
	}
	return false
}

// outputBudget reads the output budget keys of the mapping at ptr.
func (p *parser) outputBudget(ptr string) toolrouter.OutputBudget {
	b := toolrouter.OutputBudget{Bytes: p.num(ptr + "/max_output_bytes"), Tokens: p.num(ptr + "/max_output_tokens")}
	for _, kp := range p.items(ptr + "/keep") {
		if err := shape.CheckKeep(p.str(kp)); err != nil {
			p.at(kp, fmt.Sprintf("not a JSONPath query (RFC 9535): %v", err))
			continue
		}
		b.Keep = append(b.Keep, p.str(kp))
	}
	if len(b.Keep) > 0 && b.IsZero() {
		p.at(ptr+"/keep", "needs max_output_bytes or max_output_tokens")
	}
	return b
}

func (p *parser) providers() ([]toolrouter.Provider, map[string]int) {
	var out []toolrouter.Provider
	keyLines := map[string]int{}
	first := map[string]int{}
	for _, ptr := range p.items("/providers") {
		pr := toolrouter.Provider{Name: p.str(ptr + "/name"), Kind: p.str(ptr + "/kind"), Model: p.str(ptr + "/model"),
			APIKeyEnv: p.str(ptr + "/api_key_env"), Region: p.str(ptr + "/region"), SearchMode: p.str(ptr + "/search_mode"),
			ContextWindow: p.num(ptr + "/context_window"), BaseURL: p.str(ptr + "/base_url"), Prices: p.modelPrices(ptr + "/prices")}
		if !p.has(ptr + "/base_url") {
			pr.BaseURL = defaultBaseURL[pr.Kind]
		} else if pr.BaseURL != "" && !p.httpURL(pr.BaseURL, ptr+"/base_url") {
			pr.BaseURL = ""
		}
		if !p.dup(first, ptr+"/name") && pr.Name != "" {
			out = append(out, pr)
			if pr.APIKeyEnv != "" {
				keyLines[pr.Name] = p.line(ptr + "/api_key_env")
			}
		}
	}
	return out, keyLines
}

// has reports a key in the file at ptr, whether or not the schema
// accepted its value.
func (p *parser) has(ptr string) bool {
	_, ok := p.lines[ptr]
	return ok
}

func (p *parser) defaultProvider(providers []toolrouter.Provider) string {
	if !p.has("/default_provider") {
		if len(providers) > 0 {
			return providers[0].Name
		}
		return ""
	}
	name := p.str("/default_provider")
	names := make([]string, 0, len(providers))
	for _, pr := range providers {
		if pr.Name == name {
			return name
		}
		names = append(names, pr.Name)
	}
	if p.exists("/default_provider") {
		p.at("/default_provider", fmt.Sprintf("no provider named %q", name)+didYouMean(name, names))
	}
	return ""
}

// didYouMean is "; did you mean "x"?" for the name of names closest to a
// misspelt one (suggest.Closest), "" when none is close.
func didYouMean(name string, names []string) string {
	if s, ok := suggest.Closest(name, names); ok {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

func (p *parser) mcpServers() []toolrouter.MCPServer {
	var out []toolrouter.MCPServer
	first := map[string]int{}
	for _, ptr := range p.items("/mcp_servers") {
		s := toolrouter.MCPServer{Name: p.str(ptr + "/name"), Timeout: p.duration(ptr+"/timeout", defaultTimeout),
			Circuit: p.circuit(ptr + "/circuit"), Prefix: p.str(ptr + "/prefix"), Tools: p.strs(ptr + "/tools"),
			Headers: p.headers(ptr + "/headers"), Roots: p.globs(ptr + "/roots"), Unpinned: p.has(ptr+"/pin") && !p.flag(ptr+"/pin"),
			PinNew: p.str(ptr + "/pin_new"), OnChange: p.str(ptr + "/on_change"), Budget: p.outputBudget(ptr),
			Task:  toolrouter.TaskMode(p.str(ptr + "/task")),
			Price: p.price(ptr + "/cost"), ToolPrices: p.toolPrices(ptr + "/tool_costs")}
		p.dup(first, ptr+"/name")
		if p.exists(ptr + "/url") {
			s.URL, _ = p.endpoint(ptr + "/url")
		} else if p.exists(ptr + "/command") {
			s.Command, s.Env, s.Dir = p.stdio(ptr)
		}
		s.Auth = p.auth(ptr+"/auth", p.exists(ptr+"/command"))
		if s.Auth != nil && s.Auth.Mode == toolrouter.AuthOAuth && s.Auth.Resource == "" {
			s.Auth.Resource = s.URL // the protected resource: the backend itself
		}
		if !p.has(ptr + "/prefix") {
			s.Prefix = s.Name + "/"
		}
		if s.Tools == nil {
			s.Tools = []string{"*"}
		}
		if p.obj(ptr+"/tool_budgets") != nil {
			s.ToolBudgets = map[string]toolrouter.OutputBudget{}
			for _, bp := range p.keys(ptr + "/tool_budgets") {
				s.ToolBudgets[lastTok(bp)] = p.outputBudget(bp)
			}
		}
		out = append(out, s)
	}
	return out
}

// stdio reads the command, env and cwd of a stdio MCP server. command is
// taken literally (no shell, no expansion); env maps variable names to
// strings with ${VAR} expanded like headers.
func (p *parser) stdio(ptr string) (command []string, env map[string]string, dir string) {
	command = p.globs(ptr + "/command")
	if p.obj(ptr+"/env") != nil {
		env = map[string]string{}
		for _, ep := range p.keys(ptr + "/env") {
			if !envName.MatchString(lastTok(ep)) {
				p.atKey(ep, "invalid variable name")
			} else if val, ok := p.expand(p.str(ep), ep); !ok {
				continue
			} else if strings.ContainsRune(val, 0) {
				p.at(ep, "must not contain NUL")
			} else {
				env[lastTok(ep)] = val
			}
		}
	}
	return command, env, p.str(ptr + "/cwd")
}
