package registry

import (
	"maps"
	"regexp"
	"slices"
	"time"

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

func (p *parser) guardrails() []Guardrail {
	var out []Guardrail
	names := map[string]int{}
	for _, ptr := range p.items("/guardrails") {
		g := Guardrail{Name: p.str(ptr + "/name"), Tools: []string{"*"}, Clients: []string{"*"}, Timeout: p.duration(ptr+"/timeout", defaultHookTimeout),
			OnError: OnErrorDeny, Mode: ModeEnforce, Phase: PhaseBefore, Headers: p.headers(ptr + "/headers")}
		p.dup(names, ptr+"/name")
		if p.exists(ptr + "/endpoint") {
			g.Endpoint, _ = p.endpoint(ptr + "/endpoint")
		} else if p.has(ptr + "/builtin") {
			g.Builtin, g.Phase = BuiltinRedactSecrets, PhaseAfter
			g.Patterns = p.secretPatterns(ptr + "/patterns")
		}
		if p.exists(ptr + "/tools") {
			g.Tools = p.globs(ptr + "/tools")
		}
		if p.exists(ptr + "/clients") {
			g.Clients = p.globs(ptr + "/clients")
		}
		for _, k := range []struct {
			key string
			to  *string
		}{{"/phase", &g.Phase}, {"/on_error", &g.OnError}, {"/mode", &g.Mode}} {
			if s := p.str(ptr + k.key); s != "" {
				*k.to = s
			}
		}
		if g.Name != "" {
			out = append(out, g)
		}
	}
	return out
}

// secretPatterns checks the patterns of a redacting guardrail.
func (p *parser) secretPatterns(ptr string) []SecretPattern {
	var out []SecretPattern
	seen := map[string]int{}
	for _, pp := range p.items(ptr) {
		sp := SecretPattern{Name: p.str(pp + "/name"), Regex: p.str(pp + "/regex")}
		p.dup(seen, pp+"/name")
		if p.exists(pp + "/regex") {
			switch re, err := regexp.Compile(sp.Regex); {
			case err != nil:
				p.at(pp+"/regex", "not a valid RE2 regular expression: "+err.Error())
			case re.MatchString(""):
				p.at(pp+"/regex", "matches the empty string: it would redact nothing and everything")
			}
		}
		out = append(out, sp)
	}
	return out
}
