package registry

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Guardrail is one entry of the guardrails: section (toolrouter.Guardrail).
type Guardrail = toolrouter.Guardrail

// SecretPattern is a secret shape of a redacting guardrail
// (toolrouter.SecretPattern).
type SecretPattern = toolrouter.SecretPattern

// Guardrail phases, error policies, modes and built-ins (toolrouter's).
const (
	PhaseBefore          = toolrouter.PhaseBefore
	PhaseAfter           = toolrouter.PhaseAfter
	PhaseBoth            = toolrouter.PhaseBoth
	OnErrorDeny          = toolrouter.OnErrorDeny
	OnErrorAllow         = toolrouter.OnErrorAllow
	ModeEnforce          = toolrouter.ModeEnforce
	ModeAudit            = toolrouter.ModeAudit
	BuiltinRedactSecrets = toolrouter.BuiltinRedactSecrets

	defaultHookTimeout = 5 * time.Second
)

var patternName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Guardrails returns the guardrails in file order (the order they run).
func (r *Registry) Guardrails() []Guardrail {
	out := make([]Guardrail, len(r.guardrails))
	for i, g := range r.guardrails {
		g.Tools, g.Clients, g.Patterns = slices.Clone(g.Tools), slices.Clone(g.Clients), slices.Clone(g.Patterns)
		g.Headers = maps.Clone(g.Headers)
		out[i] = g
	}
	return out
}

func (p *parser) guardrails(e entry) []Guardrail {
	var out []Guardrail
	names := map[string]int{}
	for i, item := range p.list(e, where{}, "guardrails") {
		n := deref(item)
		if n == nil || n.Kind != yaml.MappingNode {
			p.addAt(item, where{}, fmt.Sprintf("guardrails[%d]", i), "must be a mapping")
			continue
		}
		w := where{prefix: fmt.Sprintf("guardrails[%d].", i)}
		if name, ok := peekString(n, "name"); ok && name != "" {
			w = where{prefix: fmt.Sprintf("guardrail %q: ", name)}
		}
		f := p.fields(n, w, "name", "endpoint", "headers", "builtin", "tools", "clients", "phase", "timeout", "on_error", "mode", "patterns")
		g := Guardrail{Tools: []string{"*"}, Clients: []string{"*"}, Timeout: defaultHookTimeout, OnError: OnErrorDeny, Mode: ModeEnforce}
		ok := true
		if p.required(f["name"], n, w, "name") {
			g.Name, _ = p.str(f["name"], w, "name")
			switch line, dup := names[g.Name]; {
			case dup:
				p.addAt(f["name"].val, w, "name", fmt.Sprintf("duplicate name (first at line %d)", line))
			case !clientName.MatchString(g.Name):
				p.addAt(f["name"].val, w, "name", "must be 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit")
			default:
				names[g.Name] = f["name"].val.Line
			}
		} else {
			ok = false
		}
		switch {
		case f["endpoint"].val == nil && f["builtin"].val == nil:
			p.addAt(n, w, "endpoint", "required (a webhook URL), or builtin: "+BuiltinRedactSecrets)
		case f["endpoint"].val != nil && f["builtin"].val != nil:
			p.addAt(f["builtin"].val, w, "builtin", "endpoint and builtin exclude each other: a guardrail is a webhook or a built-in")
		case f["endpoint"].val != nil:
			g.Endpoint, _ = p.endpoint(f["endpoint"], w, "endpoint")
			g.Headers = p.headers(f["headers"], w, "headers")
			if f["patterns"].val != nil {
				p.addAt(f["patterns"].val, w, "patterns", "only for builtin: "+BuiltinRedactSecrets)
			}
		default:
			if s, has := p.str(f["builtin"], w, "builtin"); has {
				if s != BuiltinRedactSecrets {
					p.addAt(f["builtin"].val, w, "builtin", fmt.Sprintf("must be %s, got %q", BuiltinRedactSecrets, s))
				}
				g.Builtin = s
			}
			for _, k := range []string{"headers", "timeout", "on_error"} {
				if f[k].val != nil {
					p.addAt(f[k].val, w, k, "only for a webhook (endpoint)")
				}
			}
			g.Patterns = p.secretPatterns(f["patterns"], w)
		}
		if f["tools"].val != nil {
			g.Tools = p.patterns(f["tools"], w, "tools")
		}
		if f["clients"].val != nil {
			g.Clients = p.clientPatterns(f["clients"], w)
		}
		g.Phase = PhaseBefore
		if g.Builtin != "" {
			g.Phase = PhaseAfter
		}
		if s, has := p.str(f["phase"], w, "phase"); has {
			switch {
			case s != PhaseBefore && s != PhaseAfter && s != PhaseBoth:
				p.addAt(f["phase"].val, w, "phase", fmt.Sprintf("must be before, after or both, got %q", s))
			case g.Builtin != "" && s != PhaseAfter:
				p.addAt(f["phase"].val, w, "phase", "builtin "+BuiltinRedactSecrets+" looks at outputs: its phase is after")
			default:
				g.Phase = s
			}
		}
		if d, has := p.duration(f["timeout"], w, "timeout"); has {
			g.Timeout = d
		}
		if s, has := p.str(f["on_error"], w, "on_error"); has {
			if s != OnErrorDeny && s != OnErrorAllow {
				p.addAt(f["on_error"].val, w, "on_error", fmt.Sprintf("must be deny or allow, got %q", s))
			}
			g.OnError = s
		}
		if s, has := p.str(f["mode"], w, "mode"); has {
			if s != ModeEnforce && s != ModeAudit {
				p.addAt(f["mode"].val, w, "mode", fmt.Sprintf("must be enforce or audit, got %q", s))
			}
			g.Mode = s
		}
		if ok {
			out = append(out, g)
		}
	}
	return out
}

// clientPatterns reads a list of client name globs.
func (p *parser) clientPatterns(e entry, w where) []string {
	var out []string
	for j, it := range p.list(e, w, "clients") {
		d := deref(it)
		if d == nil || d.Kind != yaml.ScalarNode || d.ShortTag() == "!!null" || !ValidPattern(d.Value) {
			p.addAt(it, w, fmt.Sprintf("clients[%d]", j), "must be a client name pattern: characters of A-Z a-z 0-9 . _ - and the wildcards * and ?")
			continue
		}
		out = append(out, d.Value)
	}
	return out
}

// secretPatterns reads patterns: a list of {name, regex}.
func (p *parser) secretPatterns(e entry, w where) []SecretPattern {
	var out []SecretPattern
	seen := map[string]bool{}
	for j, it := range p.list(e, w, "patterns") {
		field := fmt.Sprintf("patterns[%d]", j)
		n := deref(it)
		if n == nil || n.Kind != yaml.MappingNode {
			p.addAt(it, w, field, "must be a mapping with name and regex")
			continue
		}
		f := p.fields(n, where{prefix: w.prefix + field + "."}, "name", "regex")
		var sp SecretPattern
		if p.required(f["name"], n, w, field+".name") {
			sp.Name, _ = p.str(f["name"], w, field+".name")
			switch {
			case !patternName.MatchString(sp.Name):
				p.addAt(f["name"].val, w, field+".name", "must be 1-64 characters of a-z 0-9 _ - (it is shown as [REDACTED:name])")
			case seen[sp.Name]:
				p.addAt(f["name"].val, w, field+".name", "duplicate name")
			}
			seen[sp.Name] = true
		}
		if p.required(f["regex"], n, w, field+".regex") {
			sp.Regex, _ = p.str(f["regex"], w, field+".regex")
			re, err := regexp.Compile(sp.Regex)
			switch {
			case err != nil:
				p.addAt(f["regex"].val, w, field+".regex", "not a valid RE2 regular expression: "+err.Error())
			case re.MatchString(""):
				p.addAt(f["regex"].val, w, field+".regex", "matches the empty string: it would redact nothing and everything")
			}
		}
		out = append(out, sp)
	}
	return out
}
