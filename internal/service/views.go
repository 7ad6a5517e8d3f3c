package service

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/mcpclient"
	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// viewMCP is the MCP side of the views (docs/mcp.md "Virtual servers and tool
// search"): the Deps of /mcp made to list and route within the view of
// each request, and one MCP server per virtual server, /mcp/{name},
// made when first asked for.
type viewMCP struct {
	views *vserver.Catalog
	base  mcpserver.Deps // the Deps of /mcp

	mu       sync.Mutex
	handlers map[string]*mcpserver.Handler
}

// deps are the Deps of the MCP server of the virtual server name ("" is
// plain /mcp: the registry, or the registry-wide view in search mode).
func (m *viewMCP) deps(name string) mcpserver.Deps {
	d := m.base
	d.Router = viewRouter{m.base.Router, m.views, name}
	if m.base.Tasks != nil {
		d.Tasks = viewTasks{m.base.Tasks, m.views, name}
	}
	if m.base.Limiter != nil {
		d.Limiter = viewLimiter{m.base.Limiter, m.views, name}
	}
	d.Tools = func() mcpserver.Tools {
		set := m.views.Current()
		if name == "" {
			if v, _ := set.For(nil, ""); v != nil {
				return toolList(v.All())
			}
			return set.Registry()
		}
		if v := set.View(name); v != nil {
			return toolList(v.All())
		}
		return toolList(nil)
	}
	d.Instructions = func() string {
		if v := m.views.Current().View(name); v != nil && name != "" {
			return v.Instructions
		}
		return ""
	}
	d.Visible = func(c *access.Client, tool string) bool {
		v, err := m.views.Current().For(c, name)
		switch {
		case err != nil:
			return false
		case v == nil:
			return c.Allows(tool)
		}
		return v.Visible(c, tool)
	}
	d.Covers = func(c *access.Client, item string) bool {
		v, err := m.views.Current().For(c, name)
		switch {
		case err != nil:
			return false
		case v == nil:
			return c.Allows(item)
		}
		return v.Covers(c, item)
	}
	return d
}

// handler is the MCP server of the virtual server name.
func (m *viewMCP) handler(name string) http.Handler {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.handlers[name]
	if !ok {
		h = mcpserver.New(m.deps(name))
		m.handlers[name] = h
	}
	return h
}

// each calls f with every virtual server's MCP server made so far.
func (m *viewMCP) each(f func(*mcpserver.Handler)) {
	m.mu.Lock()
	hs := make([]*mcpserver.Handler, 0, len(m.handlers))
	for _, h := range m.handlers {
		hs = append(hs, h)
	}
	m.mu.Unlock()
	for _, h := range hs {
		f(h)
	}
}

type toolList []*toolrouter.Tool

func (l toolList) Tools() []*toolrouter.Tool { return l }

// viewRouter routes the calls of an MCP server within its view: the
// virtual server's, when the client may use it (else the empty view: no
// tool); for plain /mcp, the empty view of a bound client or the
// registry-wide view in search mode.
type viewRouter struct {
	next  mcpserver.Router
	views *vserver.Catalog
	name  string
}

func (r viewRouter) Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
	req.View = viewOf(r.views, access.FromContext(ctx), r.name)
	return r.next.Do(ctx, req)
}

// viewTasks starts the tasks of an MCP server's calls within its view, as
// viewRouter routes them.
type viewTasks struct {
	mcpserver.Tasks
	views *vserver.Catalog
	name  string
}

func (t viewTasks) Start(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Task, <-chan struct{}, error) {
	req.View = viewOf(t.views, access.FromContext(ctx), t.name)
	return t.Tasks.Start(ctx, req)
}

// viewOf is the view of the MCP server name for client c (see
// viewRouter); nil: the registry as it is.
func viewOf(views *vserver.Catalog, c *access.Client, name string) toolrouter.View {
	v, err := views.Current().For(c, name)
	if err != nil {
		v = vserver.Empty()
	}
	if v == nil {
		return nil
	}
	return v
}

// viewLimiter counts the calls of an MCP server within its view, as
// viewRouter routes them: a refusal's audit record names the tools the
// calls reach there (audit.Limiter).
type viewLimiter struct {
	next  mcpserver.Limiter
	views *vserver.Catalog
	name  string
}

func (l viewLimiter) Take(ctx context.Context, c *access.Client, calls toolrouter.Calls) (access.Verdict, error) {
	calls.View = viewOf(l.views, c, l.name)
	return l.next.Take(ctx, c, calls)
}

// skillFiles reads the resources /mcp relays: the files of the skills
// toolrouterd serves itself (registry `skills:`) from disk, everything
// else on its MCP server, made for the caller (in ctx) with the
// credential a call of that server's tools would carry
// (docs/backend-auth.md).
type skillFiles struct {
	reg   func() *registry.Registry
	next  userReader
	creds serverCredentials
}

// userReader reads a resource (or a directory) of an MCP server with a
// user's credential (mcpclient.Manager).
type userReader interface {
	ReadResourceAs(ctx context.Context, server, uri string, cred *toolrouter.Credential) (*mcp.ReadResourceResult, string, error)
	DirectoryRead(server string) bool
	ReadDirectoryAs(ctx context.Context, server, uri, cursor string, cred *toolrouter.Credential) (*mcpclient.DirectoryReadResult, error)
}

// DirectoryRead reports whether MCP server declared directoryRead (the
// skills toolrouterd serves itself list their files: never relayed).
func (f skillFiles) DirectoryRead(server string) bool {
	return server != registry.LocalSkillServer && f.next.DirectoryRead(server)
}

// ReadDirectory relays resources/directory/read to MCP server, made for
// the caller as ReadResource is.
func (f skillFiles) ReadDirectory(ctx context.Context, server, uri, cursor string) (*mcpserver.DirectoryReadResult, error) {
	cred, err := f.credential(ctx, server)
	if err != nil {
		return nil, err
	}
	res, err := f.next.ReadDirectoryAs(ctx, server, uri, cursor, cred)
	if err != nil {
		return nil, err
	}
	return &mcpserver.DirectoryReadResult{Resources: res.Resources, NextCursor: res.NextCursor}, nil
}

// catalogReader lists MCP servers' resources and prompts and gets their
// prompts with a user's credential (mcpclient.Manager).
type catalogReader interface {
	Catalogs() []mcpclient.Catalog
	GetPromptAs(ctx context.Context, server, name string, args map[string]string, cred *toolrouter.Credential) (*mcp.GetPromptResult, error)
}

// serverCatalogs are the MCP servers' resources and prompts for /mcp
// (mcpserver.Catalogs), their prompts got for the caller as skillFiles
// reads.
type serverCatalogs struct {
	files skillFiles
	next  catalogReader
}

func (s serverCatalogs) Catalogs() []mcpserver.Catalog {
	in := s.next.Catalogs()
	out := make([]mcpserver.Catalog, len(in))
	for i, k := range in {
		out[i] = mcpserver.Catalog{Server: k.Server, Prefix: k.Prefix, Resources: k.Resources, Templates: k.Templates, Prompts: k.Prompts}
	}
	return out
}

func (s serverCatalogs) GetPrompt(ctx context.Context, server, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	cred, err := s.files.credential(ctx, server)
	if err != nil {
		return nil, err
	}
	return s.next.GetPromptAs(ctx, server, name, args, cred)
}

// credential is the credential of a request to MCP server made for the
// caller in ctx (nil: the server's own headers).
func (f skillFiles) credential(ctx context.Context, server string) (*toolrouter.Credential, error) {
	if f.creds == nil {
		return nil, nil
	}
	return f.creds.ForServer(ctx, server)
}

// serverCredentials finds the credential of a request to an MCP server
// (credential.Decorator).
type serverCredentials interface {
	ForServer(ctx context.Context, server string) (*toolrouter.Credential, error)
}

func (f skillFiles) ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, string, error) {
	if server != registry.LocalSkillServer {
		cred, err := f.credential(ctx, server)
		if err != nil {
			return nil, "", err
		}
		return f.next.ReadResourceAs(ctx, server, uri, cred)
	}
	path, ok := f.reg().SkillFile(uri)
	if !ok {
		return nil, "", fmt.Errorf("no skill file %s", uri)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("read skill file %s: %w", uri, err)
	}
	mime := "text/markdown"
	if !strings.HasSuffix(path, ".md") {
		mime = "text/plain"
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: mime, Text: string(b)}
	if !utf8.Valid(b) {
		c = &mcp.ResourceContents{URI: uri, MIMEType: "application/octet-stream", Blob: b}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, "", nil
}
