package mcpserver

import (
	"context"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Resources and prompts of MCP servers through /mcp (docs/mcp.md
// "Resources and prompts"): resources/list, resources/templates/list and
// prompts/list are each one list across every server, sorted, paged
// with one opaque cursor as tools/list is (page.go); resources/read of a
// listed resource (or of a URI one of its server's templates matches)
// and prompts/get reach the item's server, made for the caller's user.
//
// Names: a resource's URI scheme://rest is served as
// scheme://{server}/rest (scheme:rest as scheme:{server}/rest), as ui://
// and skill:// ones are, so two servers' equal URIs stay apart and a read
// finds its server; a prompt is served under prefix + its name, as the
// server's tools are. Scope: a client (and a virtual server's `tools`)
// reaches a resource as prefix + "resources/" + its server's URI (or URI
// template), a prompt as prefix + "prompts/" + its name. ui:// and
// skill:// resources are left to their own paths (apps.go, skills.go).

// Catalog is one MCP server's resources, resource templates and prompts
// (mcpclient.Catalog), as the server names them.
type Catalog struct {
	Server, Prefix string
	Resources      []*mcp.Resource
	Templates      []*mcp.ResourceTemplate
	Prompts        []*mcp.Prompt
}

// Catalogs is what the MCP servers list besides tools, and gets their
// prompts for the caller's user (in ctx).
type Catalogs interface {
	Catalogs() []Catalog
	GetPrompt(ctx context.Context, server, name string, args map[string]string) (*mcp.GetPromptResult, error)
}

// covers reports whether client c reaches name, a name of the registry's
// namespace that is no tool (Deps.Covers; else c's scope).
func (h *Handler) covers(c *access.Client, name string) bool {
	if h.d.Covers != nil {
		return h.d.Covers(c, name)
	}
	return c.Allows(name)
}

// GatewayURI is the name /mcp serves resource uri of MCP server under;
// false for a URI without a scheme.
func GatewayURI(server, uri string) (string, bool) {
	scheme, rest, ok := strings.Cut(uri, ":")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/{") {
		return "", false
	}
	if r, ok := strings.CutPrefix(rest, "//"); ok {
		return scheme + "://" + server + "/" + r, true
	}
	return scheme + ":" + server + "/" + rest, true
}

// ParseGatewayURI is the server and server's URI of a GatewayURI name.
func ParseGatewayURI(uri string) (server, backend string, ok bool) {
	scheme, rest, ok := strings.Cut(uri, ":")
	if !ok || scheme == "" {
		return "", "", false
	}
	sep := ":"
	if r, ok := strings.CutPrefix(rest, "//"); ok {
		rest, sep = r, "://"
	}
	server, tail, ok := strings.Cut(rest, "/")
	if !ok || server == "" {
		return "", "", false
	}
	return server, scheme + sep + tail, true
}

// ownPath reports whether uri's scheme has its own path through /mcp.
func ownPath(uri string) bool {
	return strings.HasPrefix(uri, toolrouter.UIScheme) || strings.HasPrefix(uri, toolrouter.SkillScheme)
}

// catalogs is the servers' catalogs (none without Deps.Catalogs).
func (h *Handler) catalogs() []Catalog {
	if h.d.Catalogs == nil {
		return nil
	}
	return h.d.Catalogs.Catalogs()
}

// listed answers a list method: the SDK's own (empty) result, which
// carries the fields of the caller's revision, asked without the
// caller's cursor, filled with page.
func listed[R mcp.Result](ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (R, string, error) {
	var zero R
	cursor := ""
	switch r := req.(type) {
	case *mcp.ListResourcesRequest:
		if r.Params != nil {
			cursor = r.Params.Cursor
			p := *r.Params
			p.Cursor = ""
			req = &mcp.ListResourcesRequest{Session: r.Session, Params: &p, Extra: r.Extra}
		}
	case *mcp.ListResourceTemplatesRequest:
		if r.Params != nil {
			cursor = r.Params.Cursor
			p := *r.Params
			p.Cursor = ""
			req = &mcp.ListResourceTemplatesRequest{Session: r.Session, Params: &p, Extra: r.Extra}
		}
	case *mcp.ListPromptsRequest:
		if r.Params != nil {
			cursor = r.Params.Cursor
			p := *r.Params
			p.Cursor = ""
			req = &mcp.ListPromptsRequest{Session: r.Session, Params: &p, Extra: r.Extra}
		}
	}
	res, err := next(ctx, method, req)
	if err != nil {
		return zero, "", err
	}
	out, ok := res.(R)
	if !ok {
		return zero, "", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: method + ": unexpected result"}
	}
	return out, cursor, nil
}

// listResources answers resources/list.
func (h *Handler) listResources(ctx context.Context, next mcp.MethodHandler, req mcp.Request, c *access.Client) (mcp.Result, error) {
	res, cursor, err := listed[*mcp.ListResourcesResult](ctx, next, "resources/list", req)
	if err != nil {
		return nil, err
	}
	all := []*mcp.Resource{} // an empty list is [], never null
	for _, k := range h.catalogs() {
		for _, r := range k.Resources {
			g, ok := GatewayURI(k.Server, r.URI)
			if !ok || ownPath(r.URI) || !h.covers(c, k.Prefix+"resources/"+r.URI) {
				continue
			}
			x := *r
			x.URI = g
			all = append(all, &x)
		}
	}
	all = sortedUnique(all, func(r *mcp.Resource) string { return r.URI })
	if res.Resources, res.NextCursor, err = pageOfList("resources", all, func(r *mcp.Resource) string { return r.URI }, cursor, h.d.PageSize); err != nil {
		return nil, err
	}
	return res, nil
}

// listTemplates answers resources/templates/list.
func (h *Handler) listTemplates(ctx context.Context, next mcp.MethodHandler, req mcp.Request, c *access.Client) (mcp.Result, error) {
	res, cursor, err := listed[*mcp.ListResourceTemplatesResult](ctx, next, "resources/templates/list", req)
	if err != nil {
		return nil, err
	}
	all := []*mcp.ResourceTemplate{}
	for _, k := range h.catalogs() {
		for _, t := range k.Templates {
			g, ok := GatewayURI(k.Server, t.URITemplate)
			if !ok || ownPath(t.URITemplate) || !h.covers(c, k.Prefix+"resources/"+t.URITemplate) {
				continue
			}
			x := *t
			x.URITemplate = g
			all = append(all, &x)
		}
	}
	all = sortedUnique(all, func(t *mcp.ResourceTemplate) string { return t.URITemplate })
	if res.ResourceTemplates, res.NextCursor, err = pageOfList("resources/templates", all, func(t *mcp.ResourceTemplate) string { return t.URITemplate }, cursor, h.d.PageSize); err != nil {
		return nil, err
	}
	return res, nil
}

// listPrompts answers prompts/list. Two servers' prompts of one name
// (their prefixes equal) are served as the first server's, in registry
// order.
func (h *Handler) listPrompts(ctx context.Context, next mcp.MethodHandler, req mcp.Request, c *access.Client) (mcp.Result, error) {
	res, cursor, err := listed[*mcp.ListPromptsResult](ctx, next, "prompts/list", req)
	if err != nil {
		return nil, err
	}
	all := []*mcp.Prompt{}
	seen := map[string]bool{}
	for _, k := range h.catalogs() {
		for _, p := range k.Prompts {
			name := k.Prefix + p.Name
			if seen[name] || !h.covers(c, k.Prefix+"prompts/"+p.Name) {
				continue
			}
			seen[name] = true
			x := *p
			x.Name = name
			all = append(all, &x)
		}
	}
	all = sortedUnique(all, func(p *mcp.Prompt) string { return p.Name })
	if res.Prompts, res.NextCursor, err = pageOfList("prompts", all, func(p *mcp.Prompt) string { return p.Name }, cursor, h.d.PageSize); err != nil {
		return nil, err
	}
	return res, nil
}

// sortedUnique sorts items by key and drops repeated keys.
func sortedUnique[T any](items []T, key func(T) string) []T {
	slices.SortStableFunc(items, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	return slices.CompactFunc(items, func(a, b T) bool { return key(a) == key(b) })
}

// getPrompt answers prompts/get of a listed prompt the client reaches;
// any other name is -32602, as the specification answers an unknown
// prompt.
func (h *Handler) getPrompt(ctx context.Context, req mcp.Request, c *access.Client) (mcp.Result, error) {
	r, ok := req.(*mcp.GetPromptRequest)
	if !ok || r.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get: params required"}
	}
	for _, k := range h.catalogs() {
		for _, p := range k.Prompts {
			if k.Prefix+p.Name != r.Params.Name || !h.covers(c, k.Prefix+"prompts/"+p.Name) {
				continue
			}
			res, err := h.d.Catalogs.GetPrompt(ctx, k.Server, p.Name, r.Params.Arguments)
			if err != nil {
				return nil, readError(req, err)
			}
			return res, nil
		}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown prompt: " + r.Params.Name}
}

// readListed is next behind the reads of servers' resources: a
// resources/read of a listed resource (or of a URI a template of its
// server matches) that the client reaches is read on its server; any
// other goes on to next.
func (h *Handler) readListed(next mcp.MethodHandler, c *access.Client) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.ReadResourceRequest)
		if !ok || r.Params == nil || h.d.Resources == nil || ownPath(r.Params.URI) {
			return next(ctx, method, req)
		}
		server, backend, ok := ParseGatewayURI(r.Params.URI)
		if !ok || !h.listedResource(server, backend, c) {
			return next(ctx, method, req)
		}
		res, _, err := h.d.Resources.ReadResource(ctx, server, backend)
		if err != nil {
			return nil, readError(req, err)
		}
		for _, ct := range res.Contents {
			if ct == nil {
				continue
			}
			if g, ok := GatewayURI(server, ct.URI); ok && ct.URI == backend {
				ct.URI = g
			}
		}
		return h.readResult(req, res), nil
	}
}

// listedResource reports whether uri is a resource of server that c may
// read: listed, or matched by one of the server's templates, and in c's
// reach.
func (h *Handler) listedResource(server, uri string, c *access.Client) bool {
	for _, k := range h.catalogs() {
		if k.Server != server {
			continue
		}
		if !h.covers(c, k.Prefix+"resources/"+uri) {
			return false
		}
		if slices.ContainsFunc(k.Resources, func(r *mcp.Resource) bool { return r.URI == uri }) {
			return true
		}
		if hasDotSegment(uri) {
			// Only a listed resource is read as named: a template's URI
			// climbing out of the path the client's scope names would be
			// read outside it by a backend that resolves it.
			return false
		}
		for _, t := range k.Templates {
			if tmpl, err := uritemplate.New(t.URITemplate); err == nil && tmpl.Regexp().MatchString(uri) {
				return true
			}
		}
	}
	return false
}

// dotDecoder decodes what may hide a dot segment of a URI's path: an
// encoded dot, slash, backslash or percent sign, and a backslash.
var dotDecoder = strings.NewReplacer("%2e", ".", "%2E", ".", "%2f", "/", "%2F", "/", "%5c", "/", "%5C", "/", "%25", "%", "\\", "/")

// hasDotSegment reports whether uri's path (before any query or fragment)
// has a "." or ".." segment, percent-encoded or not (encoded twice too).
func hasDotSegment(uri string) bool {
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		uri = uri[:i]
	}
	for range 4 { // an encoding nested deeper is decoded by no backend
		d := dotDecoder.Replace(uri)
		if d == uri {
			break
		}
		uri = d
	}
	for seg := range strings.SplitSeq(uri, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}
