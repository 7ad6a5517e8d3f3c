package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Client is a client as the file declares it (toolrouter.ClientSpec), the
// type access builds its clients from.
type Client = toolrouter.ClientSpec

// Rate is N calls per window (toolrouter.Rate).
type Rate = toolrouter.Rate

var (
	clientName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	// reservedName are the names of the clients made of TOOLROUTER_API_KEYS.
	reservedName = regexp.MustCompile(`^key-[0-9]+$`)
	rateSyntax   = regexp.MustCompile(`^([0-9]{1,9})/([smh])$`)
	sha256Hex    = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
)

// Clients returns the clients in file order.
func (r *Registry) Clients() []Client {
	out := make([]Client, len(r.clients))
	for i, c := range r.clients {
		c.Tools, c.Approval, c.KeySHA256 = slices.Clone(c.Tools), slices.Clone(c.Approval), slices.Clone(c.KeySHA256)
		c.Models = slices.Clone(c.Models)
		c.VirtualServers = slices.Clone(c.VirtualServers)
		out[i] = c
	}
	return out
}

// ParseRate reads a rate limit: N/s, N/m or N/h with N ≥ 1.
func ParseRate(s string) (Rate, error) {
	m := rateSyntax.FindStringSubmatch(s)
	if m == nil {
		return Rate{}, fmt.Errorf("must be N/s, N/m or N/h (e.g. 600/m), got %q", s)
	}
	n, _ := strconv.Atoi(m[1])
	if n < 1 {
		return Rate{}, fmt.Errorf("must allow at least 1 call, got %q", s)
	}
	w := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[m[2]]
	return Rate{N: n, Window: w}, nil
}

// ValidPattern reports whether s is a tool glob: tool-name characters and
// the wildcards * and ?.
func ValidPattern(s string) bool {
	return s != "" && len(s) <= maxNameLen && validToolName(strings.NewReplacer("*", "a", "?", "a").Replace(s))
}

func (p *parser) clients(e entry) []Client {
	var out []Client
	names, subjects := map[string]int{}, map[string]int{}
	keys := map[string]string{} // digest → client
	for i, item := range p.list(e, where{}, "clients") {
		n := deref(item)
		if n == nil || n.Kind != yaml.MappingNode {
			p.addAt(item, where{}, fmt.Sprintf("clients[%d]", i), "must be a mapping")
			continue
		}
		w := where{prefix: fmt.Sprintf("clients[%d].", i)}
		if name, ok := peekString(n, "name"); ok && name != "" {
			w = where{prefix: fmt.Sprintf("client %q: ", name)}
		}
		f := p.fields(n, w, "name", "key_env", "key_sha256", "jwt_subject", "tools", "rate_limit", "admin", "approver", "approval", "virtual_servers", "models", "model_turns")
		c := Client{Line: n.Line}
		ok := true
		if p.required(f["name"], n, w, "name") {
			c.Name, _ = p.str(f["name"], w, "name")
			switch line, dup := names[c.Name]; {
			case dup:
				p.addAt(f["name"].val, w, "name", fmt.Sprintf("duplicate name (first at line %d)", line))
			case !clientName.MatchString(c.Name):
				p.addAt(f["name"].val, w, "name", "must be 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit")
			case reservedName.MatchString(c.Name):
				p.addAt(f["name"].val, w, "name", "names key-1, key-2, … are reserved for the keys of TOOLROUTER_API_KEYS")
			default:
				names[c.Name] = f["name"].val.Line
			}
		} else {
			ok = false
		}
		c.KeySHA256 = p.clientKey(f, w)
		if c.KeySHA256 != nil {
			d := string(c.KeySHA256)
			if other, dup := keys[d]; dup {
				field := "key_env"
				if f["key_sha256"].val != nil {
					field = "key_sha256"
				}
				p.addAt(f[field].val, w, field, fmt.Sprintf("the same key as client %q; one key is one client", other))
			} else {
				keys[d] = c.Name
			}
		}
		if s, has := p.str(f["jwt_subject"], w, "jwt_subject"); has {
			if line, dup := subjects[s]; dup {
				p.addAt(f["jwt_subject"].val, w, "jwt_subject", fmt.Sprintf("duplicate jwt_subject (first at line %d)", line))
			} else if s != "" {
				subjects[s] = f["jwt_subject"].val.Line
				c.JWTSubject = s
			}
		}
		if f["key_env"].val == nil && f["key_sha256"].val == nil && f["jwt_subject"].val == nil {
			p.addAt(n, w, "key_env", "a client needs key_env, key_sha256 or jwt_subject to be identified by")
		}
		c.Tools = p.patterns(f["tools"], w, "tools")
		if f["tools"].val != nil {
			c.ToolsLine = f["tools"].val.Line
		}
		c.Approval = p.patterns(f["approval"], w, "approval")
		if e := f["virtual_servers"]; e.val != nil {
			c.ServersLine = e.val.Line
			c.VirtualServers = []string{}
			for j, it := range p.list(e, w, "virtual_servers") {
				d := deref(it)
				if d == nil || d.Kind != yaml.ScalarNode || d.ShortTag() == "!!null" || d.Value == "" {
					p.addAt(it, w, fmt.Sprintf("virtual_servers[%d]", j), "must be a virtual server's name")
					continue
				}
				c.VirtualServers = append(c.VirtualServers, d.Value)
			}
		}
		if s, has := p.str(f["rate_limit"], w, "rate_limit"); has {
			r, err := ParseRate(s)
			if err != nil {
				p.addAt(f["rate_limit"].val, w, "rate_limit", err.Error())
			}
			c.RateLimit = r
		}
		c.Models = p.modelPatterns(f["models"], w)
		if s, has := p.str(f["model_turns"], w, "model_turns"); has {
			r, err := ParseRate(s)
			if err != nil {
				p.addAt(f["model_turns"].val, w, "model_turns", strings.Replace(err.Error(), "1 call", "1 model turn", 1))
			}
			c.ModelTurns = r
		}
		c.Admin, _ = p.boolean(f["admin"], w, "admin")
		c.Approver, _ = p.boolean(f["approver"], w, "approver")
		if ok {
			out = append(out, c)
		}
	}
	return out
}

// clientKey reads key_env (the variable holding the key) or key_sha256 (its
// digest) and returns the key's SHA-256. A problem never shows a key.
func (p *parser) clientKey(f map[string]entry, w where) []byte {
	env, hasEnv := p.str(f["key_env"], w, "key_env")
	hash, hasHash := p.str(f["key_sha256"], w, "key_sha256")
	switch {
	case hasEnv && hasHash:
		p.addAt(f["key_sha256"].val, w, "key_sha256", "give key_env or key_sha256, not both")
	case hasEnv:
		v := p.getenv(env)
		switch {
		case !envName.MatchString(env):
			p.addAt(f["key_env"].val, w, "key_env", "must be the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not the key itself")
		case strings.TrimSpace(v) == "":
			p.addProblem(Problem{File: p.file, Line: lineOf(f["key_env"].val), Field: w.prefix + "key_env",
				Why: fmt.Sprintf("environment variable %s is unset or empty", env), UnsetKeyEnv: env})
		case !visibleASCII(strings.TrimSpace(v)):
			p.addAt(f["key_env"].val, w, "key_env", fmt.Sprintf("environment variable %s holds a character that is not visible ASCII (a bearer token cannot carry it)", env))
		default:
			sum := sha256.Sum256([]byte(strings.TrimSpace(v)))
			return sum[:]
		}
	case hasHash:
		if !sha256Hex.MatchString(hash) {
			p.addAt(f["key_sha256"].val, w, "key_sha256", "must be the key's SHA-256 as 64 hex digits (sha256sum of the key)")
			return nil
		}
		b, _ := hex.DecodeString(hash)
		return b
	}
	return nil
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// maxModelPattern bounds a models pattern: a provider name and a model id.
const maxModelPattern = 256

// ValidModelPattern reports whether s is a models glob: "*", or
// "provider/model" with wildcards allowed on either side, of visible
// ASCII (model ids hold . : - _ / and more).
func ValidModelPattern(s string) bool {
	return s == "*" || len(s) <= maxModelPattern && strings.Contains(s, "/") && !strings.HasPrefix(s, "/") && visibleASCII(s)
}

// modelPatterns reads a client's models: globs over "provider/model".
func (p *parser) modelPatterns(e entry, w where) []string {
	var out []string
	for j, it := range p.list(e, w, "models") {
		d := deref(it)
		if d == nil || d.Kind != yaml.ScalarNode || d.ShortTag() == "!!null" || !ValidModelPattern(d.Value) {
			p.addAt(it, w, fmt.Sprintf("models[%d]", j), `must be a "provider/model" pattern (a provider of the registry, a model id; * and ? wildcards), e.g. "openai/gpt-4o*" or "*": 3-256 visible ASCII characters`)
			continue
		}
		out = append(out, d.Value)
	}
	return out
}

// patterns reads a list of tool globs.
func (p *parser) patterns(e entry, w where, field string) []string {
	var out []string
	for j, it := range p.list(e, w, field) {
		d := deref(it)
		if d == nil || d.Kind != yaml.ScalarNode || d.ShortTag() == "!!null" || !ValidPattern(d.Value) {
			p.addAt(it, w, fmt.Sprintf("%s[%d]", field, j), "must be a tool name pattern: 1-128 characters of A-Z a-z 0-9 / . _ - and the wildcards * and ?")
			continue
		}
		out = append(out, d.Value)
	}
	return out
}
