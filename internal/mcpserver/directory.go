package mcpserver

import (
	"context"
	"mime"
	"path"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// resources/directory/read through /mcp (the Skills extension's optional
// method, specification/stable/skills.mdx of
// modelcontextprotocol/ext-skills, "Reading Directories"; docs/mcp.md
// "Skills"): the direct children of a directory resource, here a skill's
// root (skill://{server}/{skill path}) or a directory in it, under the
// gateway's names.
//
// A skill whose entry lists its files is answered from that list, the
// one in force (pinned and reviewed): it is exactly what toolrouterd
// serves of the skill (a read of an unlisted file is refused), whatever
// the server would list now. A "dynamic" skill, which lists no files, is
// relayed to its server when the server declared directoryRead, made for
// the caller's user as reads are. toolrouterd declares directoryRead
// while every skill in force can be answered so.

const directoryMIME = "inode/directory"

// DirectoryReadParams and DirectoryReadResult are the method's (the
// handler the SDK holds for it is never reached: intercept answers it).
type DirectoryReadParams struct {
	mcp.ParamsBase
	URI    string `json:"uri"`
	Cursor string `json:"cursor,omitempty"`
}

type DirectoryReadResult struct {
	mcp.ResultBase
	ResultType string          `json:"resultType,omitempty"`
	Resources  []*mcp.Resource `json:"resources"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

// Directories relays resources/directory/read to MCP servers
// (mcpclient.Manager, with the caller's credential).
type Directories interface {
	// DirectoryRead reports whether server declared directoryRead.
	DirectoryRead(server string) bool
	// ReadDirectory reads directory uri (the server's own URI) from
	// cursor (the server's own; "" for the first page).
	ReadDirectory(ctx context.Context, server, uri, cursor string) (*DirectoryReadResult, error)
}

// addDirectoryMethod makes the SDK accept the method.
func (h *Handler) addDirectoryMethod() {
	_ = mcp.AddReceivingCustomMethod(h.srv, "resources/directory/read", func(context.Context, *mcp.ServerSession, *DirectoryReadParams) (*DirectoryReadResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "resources/directory/read: not intercepted"}
	})
}

// directoryRead reports whether every skill in force can have its
// directories read: a skill that lists its files always, a dynamic one
// when its server declared directoryRead. False without skills.
func (h *Handler) directoryRead() bool {
	found := false
	for _, t := range h.d.Tools().Tools() {
		if t.Kind != toolrouter.KindSkill || t.Skill == nil {
			continue
		}
		if t.Skill.Files == nil && (h.d.Directories == nil || !h.d.Directories.DirectoryRead(t.MCPServer)) {
			return false
		}
		found = true
	}
	return found
}

// readDirectory answers resources/directory/read; a URI that is no
// directory of a skill the client sees is -32602, as the extension asks.
func (h *Handler) readDirectory(ctx context.Context, req mcp.Request, c *access.Client) (mcp.Result, error) {
	var p DirectoryReadParams
	if r, ok := req.(*mcp.ServerRequest[*DirectoryReadParams]); ok && r.Params != nil {
		p = *r.Params
	}
	notDir := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: p.URI + " is not a directory resource"}
	server, dir, ok := toolrouter.ParseGatewaySkillURI(p.URI)
	if !ok || strings.HasSuffix(dir, "/") || hasDotSegment(dir) {
		// A dot segment would climb out of the skill the client reaches
		// on a server that resolves it (catalog.go).
		return nil, notDir
	}
	for _, t := range h.skills(c) {
		root := strings.TrimSuffix(t.Skill.URI, "/SKILL.md")
		if t.MCPServer != server || dir != root && !strings.HasPrefix(dir, root+"/") {
			continue
		}
		if t.Skill.Files == nil {
			return h.relayDirectory(ctx, req, server, dir, p.Cursor, notDir)
		}
		children := listedChildren(t, server, dir)
		if len(children) == 0 {
			continue // not a directory of this skill (maybe of one nested in it)
		}
		page, next, err := pageOfList("directory "+dir, children, func(r *mcp.Resource) string { return r.URI }, p.Cursor, h.d.PageSize)
		if err != nil {
			return nil, err
		}
		return &DirectoryReadResult{ResultType: "complete", Resources: page, NextCursor: next}, nil
	}
	return nil, notDir
}

// listedChildren are the direct children of directory dir (the server's
// URI) in skill t's listed files, under the gateway's names, sorted: a
// file, or a directory (inode/directory) holding some.
func listedChildren(t *toolrouter.Tool, server, dir string) []*mcp.Resource {
	seen := map[string]bool{}
	var out []*mcp.Resource
	for f := range t.Skill.Files {
		rest, ok := strings.CutPrefix(f, dir+"/")
		if !ok || rest == "" {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		r := &mcp.Resource{URI: toolrouter.GatewaySkillURI(server, dir+"/"+name), Name: name, MIMEType: directoryMIME}
		if !isDir {
			r.MIMEType = fileMIME(name)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *mcp.Resource) int { return strings.Compare(a.URI, b.URI) })
	return out
}

// fileMIME is a listed file's MIME type by its extension: Markdown (what
// a skill mostly holds), or Go's built-in table; "" when unknown.
func fileMIME(name string) string {
	ext := path.Ext(name)
	if ext == ".md" {
		return "text/markdown"
	}
	return mime.TypeByExtension(ext)
}

// relayDirectory relays the read of a dynamic skill's directory to its
// server, whose children come back under the gateway's names (any that
// is not in the directory is left out).
func (h *Handler) relayDirectory(ctx context.Context, req mcp.Request, server, dir, cursor string, notDir error) (mcp.Result, error) {
	if h.d.Directories == nil || !h.d.Directories.DirectoryRead(server) {
		return nil, notDir
	}
	res, err := h.d.Directories.ReadDirectory(ctx, server, dir, cursor)
	if err != nil {
		return nil, readError(req, err)
	}
	out := &DirectoryReadResult{ResultType: "complete", Resources: []*mcp.Resource{}, NextCursor: res.NextCursor}
	for _, r := range res.Resources {
		if r == nil || !strings.HasPrefix(r.URI, dir+"/") {
			continue
		}
		r.URI = toolrouter.GatewaySkillURI(server, r.URI)
		out.Resources = append(out.Resources, r)
	}
	return out, nil
}
