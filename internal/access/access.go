// Package access says who is calling and what they may do (docs/security.md
// "Clients"): it resolves a request's bearer key or JWT to a Client of the
// registry, carries that Client in the request context, matches tool
// names against the client's scope, and counts its tool calls against its
// rate limit.
package access

import (
	"context"
	"slices"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Client is an authenticated caller. A nil *Client is the caller of an
// open service (no keys, no clients, no JWT): it may call every tool.
type Client struct {
	Name     string
	Admin    bool
	Approver bool
	Rate     toolrouter.Rate
	// ModelTurns bounds the client's model requests in /runs (the zero
	// Rate: no limit).
	ModelTurns toolrouter.Rate
	tools      Scope
	// models are globs over "provider/model": what the client may run.
	models   Scope
	approval Scope
	// servers are the virtual servers the client is limited to; nil: not
	// limited (docs/mcp.md "Virtual servers and tool search").
	servers []string
}

// Bound reports whether the client reaches tools only through its
// virtual servers: on every other path it has no tool at all.
func (c *Client) Bound() bool { return c != nil && c.servers != nil }

// MayUse reports whether the client may use the virtual server name.
func (c *Client) MayUse(name string) bool {
	return c == nil || c.servers == nil || slices.Contains(c.servers, name)
}

// Allows reports whether the client may see and call the tool with this
// canonical name. Every place a tool is reachable asks it, and treats a
// tool it refuses exactly like a tool that does not exist.
func (c *Client) Allows(tool string) bool {
	return c == nil || c.tools.Match(tool)
}

// AllowsModel reports whether the client may have a run ask model of the
// registry's provider: "provider/model" matches its models patterns. The
// caller of an open service may use every model.
func (c *Client) AllowsModel(provider, model string) bool {
	return c == nil || c.models.Match(provider+"/"+model)
}

// MayApprove reports whether the client may decide approvals: an admin,
// an approver, or the caller of an open service (docs/approvals.md "Approvals").
func (c *Client) MayApprove() bool {
	return c == nil || c.Admin || c.Approver
}

// NeedsApproval reports whether this client's calls of the tool wait for
// an approver: the client's approval patterns match it (a tool's own
// approval: required is the registry's, asked separately).
func (c *Client) NeedsApproval(tool string) bool {
	return c != nil && c.approval.Match(tool)
}

// IsAdmin reports whether the client sees everything: an admin, or the
// caller of an open service.
func (c *Client) IsAdmin() bool { return c == nil || c.Admin }

// LabelName is the client's name for logs and metrics: "" for the caller
// of an open service.
func (c *Client) LabelName() string {
	if c == nil {
		return ""
	}
	return c.Name
}

type clientKey struct{}

// NewContext returns ctx carrying c.
func NewContext(ctx context.Context, c *Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// FromContext returns the client ctx carries; nil (every tool) when none.
func FromContext(ctx context.Context) *Client {
	c, _ := ctx.Value(clientKey{}).(*Client)
	return c
}

// Scope is a compiled list of tool-name globs (docs/security.md "Clients"): "*"
// matches any run of characters, "/" included, and "?" any one character;
// every other character matches itself. So "*" is every tool and
// "billing/*" every tool whose name starts with "billing/". No patterns
// match nothing.
type Scope struct {
	all      bool
	exact    map[string]bool
	prefixes []string // patterns "p*" with no other wildcard
	globs    []string
}

// NewScope compiles patterns (the registry checked them).
func NewScope(patterns []string) Scope {
	var s Scope
	for _, p := range patterns {
		switch i := strings.IndexAny(p, "*?"); {
		case p == "*":
			s.all = true
		case i < 0:
			if s.exact == nil {
				s.exact = map[string]bool{}
			}
			s.exact[p] = true
		case i == len(p)-1 && p[i] == '*':
			s.prefixes = append(s.prefixes, p[:i])
		default:
			s.globs = append(s.globs, p)
		}
	}
	return s
}

// Match reports whether name matches one of the patterns.
func (s Scope) Match(name string) bool {
	if s.all || s.exact[name] {
		return true
	}
	for _, p := range s.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	for _, g := range s.globs {
		if toolrouter.Glob(g, name) {
			return true
		}
	}
	return false
}

// CouldMatch reports whether pattern could match a tool whose name starts
// with prefix (a tool of an MCP server, not known before it is asked):
// the pattern's literal start and prefix agree as far as both go.
func CouldMatch(pattern, prefix string) bool {
	lit := pattern
	if i := strings.IndexAny(pattern, "*?"); i >= 0 {
		lit = pattern[:i]
	}
	return strings.HasPrefix(lit, prefix) || strings.HasPrefix(prefix, lit)
}
