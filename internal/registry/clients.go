package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Client is a client as the file declares it (toolrouter.ClientSpec), the
// type access builds its clients from.
type Client = toolrouter.ClientSpec

// Rate is N calls per window (toolrouter.Rate).
type Rate = toolrouter.Rate

var rateSyntax = regexp.MustCompile(`^([0-9]{1,9})/([smh])$`)

// Clients returns the clients in file order.
func (r *Registry) Clients() []Client {
	out := make([]Client, len(r.clients))
	for i, c := range r.clients {
		c.Tools, c.Approval, c.KeySHA256 = slices.Clone(c.Tools), slices.Clone(c.Approval), slices.Clone(c.KeySHA256)
		c.Models = slices.Clone(c.Models)
		c.VirtualServers = slices.Clone(c.VirtualServers)
		c.Credentials = maps.Clone(c.Credentials)
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

func (p *parser) clients() []Client {
	var out []Client
	names, subjects := map[string]int{}, map[string]int{}
	keys := map[string]string{} // digest → client
	for _, ptr := range p.items("/clients") {
		c := Client{Name: p.str(ptr + "/name"), Line: p.line(ptr), Admin: p.flag(ptr + "/admin"), Approver: p.flag(ptr + "/approver"),
			Tools: p.globs(ptr + "/tools"), Approval: p.globs(ptr + "/approval"), VirtualServers: p.strs(ptr + "/virtual_servers"),
			Models: p.globs(ptr + "/models"), Credentials: p.credentials(ptr + "/credentials"), MayAssertUser: p.flag(ptr + "/may_assert_user"),
			ToolsLine: p.lines[ptr+"/tools"], ServersLine: p.lines[ptr+"/virtual_servers"], SpendLimit: p.spendLimit(ptr + "/spend_limit")}
		p.dup(names, ptr+"/name")
		c.KeySHA256 = p.clientKey(ptr)
		if c.KeySHA256 != nil {
			field := "/key_env"
			if p.has(ptr + "/key_sha256") {
				field = "/key_sha256"
			}
			if other, dup := keys[string(c.KeySHA256)]; dup {
				p.at(ptr+field, fmt.Sprintf("the same key as client %q; one key is one client", other))
			} else {
				keys[string(c.KeySHA256)] = c.Name
			}
		}
		if !p.dup(subjects, ptr+"/jwt_subject") {
			c.JWTSubject = p.str(ptr + "/jwt_subject")
		}
		if s := p.str(ptr + "/rate_limit"); s != "" {
			r, err := ParseRate(s)
			if err != nil {
				p.at(ptr+"/rate_limit", err.Error())
			}
			c.RateLimit = r
		}
		if s := p.str(ptr + "/model_turns"); s != "" {
			r, err := ParseRate(s)
			if err != nil {
				p.at(ptr+"/model_turns", strings.Replace(err.Error(), "1 call", "1 model turn", 1))
			}
			c.ModelTurns = r
		}
		if c.Name != "" {
			out = append(out, c)
		}
	}
	return out
}

// clientKey reads key_env (the variable holding the key) or key_sha256 (its
// digest) and returns the key's SHA-256. A problem never shows a key.
func (p *parser) clientKey(ptr string) []byte {
	if name := p.str(ptr + "/key_env"); name != "" {
		switch v := strings.TrimSpace(p.getenv(name)); {
		case v == "":
			p.pending = append(p.pending, pending{line: p.line(ptr + "/key_env"), ptr: ptr + "/key_env",
				why: fmt.Sprintf("environment variable %s is unset or empty", name), unsetEnv: name})
		case !visibleASCII(v):
			p.at(ptr+"/key_env", fmt.Sprintf("environment variable %s holds a character that is not visible ASCII (a bearer token cannot carry it)", name))
		default:
			sum := sha256.Sum256([]byte(v))
			return sum[:]
		}
	} else if h := p.str(ptr + "/key_sha256"); h != "" {
		b, _ := hex.DecodeString(h)
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
