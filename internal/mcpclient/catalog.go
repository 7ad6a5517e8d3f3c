package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// What an MCP server lists besides its tools (docs/mcp.md "Resources and
// prompts"): its resources, resource templates and prompts, listed with
// its tools (every page, within the discovery limits: Pages pages, Tools
// items per list, the same byte budget), kept as last listed, and read
// and got on its sessions, as the caller's user (usersession.go). Unlike
// tools they are not registry tools: a listing that fails or passes a
// limit keeps the server's last good one and never holds back its tools.

// Catalog is one server's resources, resource templates and prompts that
// its allowlist lets in ("*", or "resources/" + a URI or URI template,
// "prompts/" + a name), with the server's name and prefix.
type Catalog struct {
	Server, Prefix string
	Resources      []*mcp.Resource
	Templates      []*mcp.ResourceTemplate
	Prompts        []*mcp.Prompt
}

// catalog is what a server listed (before its allowlist).
type catalog struct {
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
}

// listCatalog lists what cs's server declared it serves: resources (and
// their templates) and prompts.
func (s *server) listCatalog(ctx context.Context, cs *mcp.ClientSession) (*catalog, error) {
	ir := cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return &catalog{}, nil
	}
	lim := s.m.limits()
	var c catalog
	var err error
	if ir.Capabilities.Resources != nil {
		c.resources, err = listPages(lim, "resources/list", func(cursor string) ([]*mcp.Resource, string, error) {
			res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.Resources, res.NextCursor, nil
		})
		if err != nil {
			return nil, err
		}
		c.templates, err = listPages(lim, "resources/templates/list", func(cursor string) ([]*mcp.ResourceTemplate, string, error) {
			res, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.ResourceTemplates, res.NextCursor, nil
		})
		if err != nil && serverError(err) == nil {
			return nil, err
		} // a server without templates may refuse the method
	}
	if ir.Capabilities.Prompts != nil {
		c.prompts, err = listPages(lim, "prompts/list", func(cursor string) ([]*mcp.Prompt, string, error) {
			res, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.Prompts, res.NextCursor, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// listPages follows a list's nextCursor within the limits: at most
// lim.Pages pages and lim.Tools items.
func listPages[T any](lim DiscoveryLimits, method string, page func(cursor string) ([]T, string, error)) ([]T, error) {
	var out []T
	cursor := ""
	for n := 0; ; n++ {
		if n == lim.Pages {
			return nil, &limitError{limit: "pages", max: int64(lim.Pages)}
		}
		items, next, err := page(cursor)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if len(out)+len(items) > lim.Tools {
			return nil, &limitError{limit: "items", max: int64(lim.Tools)}
		}
		out = append(out, items...)
		if next == "" {
			return out, nil
		}
		if next == cursor {
			return nil, fmt.Errorf("%s: the server repeats cursor %q", method, next)
		}
		cursor = next
	}
}

// refreshCatalog lists the catalog of cs's server and keeps it; a
// failure keeps the last good one, with a warning.
func (s *server) refreshCatalog(ctx context.Context, cs *mcp.ClientSession) {
	c, err := s.listCatalog(ctx, cs)
	if err != nil {
		if le := limited(err); le != nil {
			s.m.limitedDiscoveries.WithLabelValues(s.name, le.limit).Inc()
		}
		if !errors.Is(err, context.Canceled) {
			s.m.log.Warn().Str("mcp_server", s.name).Str("error", s.scrub(err)).
				Msg("MCP resource or prompt discovery failed; the server's last good listing is kept")
		}
		return
	}
	s.mu.Lock()
	s.catalog = c
	s.mu.Unlock()
}

// Catalogs is every server's catalog, in registry order.
func (m *Manager) Catalogs() []Catalog {
	m.mu.Lock()
	servers := slices.Clone(m.servers)
	m.mu.Unlock()
	out := make([]Catalog, 0, len(servers))
	for _, s := range servers {
		s.mu.Lock()
		c, cfg := s.catalog, s.cfg
		s.mu.Unlock()
		if c == nil {
			continue
		}
		k := Catalog{Server: cfg.Name, Prefix: cfg.Prefix}
		for _, r := range c.resources {
			if r != nil && allowed(cfg.Tools, "resources/"+r.URI) {
				k.Resources = append(k.Resources, r)
			}
		}
		for _, t := range c.templates {
			if t != nil && allowed(cfg.Tools, "resources/"+t.URITemplate) {
				k.Templates = append(k.Templates, t)
			}
		}
		for _, p := range c.prompts {
			if p != nil && allowed(cfg.Tools, "prompts/"+p.Name) {
				k.Prompts = append(k.Prompts, p)
			}
		}
		out = append(out, k)
	}
	return out
}

// GetPromptAs relays prompts/get of prompt name (the server's own) to MCP
// server, made for the user of cred as ReadResourceAs is.
func (m *Manager) GetPromptAs(ctx context.Context, server, name string, args map[string]string, cred *toolrouter.Credential) (*mcp.GetPromptResult, error) {
	s := m.server(server)
	if s == nil {
		return nil, fmt.Errorf("MCP server %q is not configured", server)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	var res *mcp.GetPromptResult
	err := s.onSession(ctx, cred, func(ctx context.Context, cs *mcp.ClientSession) error {
		var err error
		res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("prompts/get of %s on %q: %w", name, server, err)
	}
	return res, nil
}
