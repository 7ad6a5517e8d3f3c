package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Skills through /mcp (SEP-2640, the Skills extension
// io.modelcontextprotocol/skills, specification/stable/skills.mdx of
// modelcontextprotocol/ext-skills; docs/mcp.md "Skills"): skills/list
// is every skill in force the client sees (its scope, its view), paged
// with one cursor across servers; skills/get answers one; a skill's
// files are read with resources/read. Every URI is under the gateway's
// name, skill://{server}/{the server's skill path}/…, so two servers'
// equal URIs stay apart and a read finds its server. A quarantined skill
// (a file's digest changed: pinned like a tool) is in none of them.

const skillsExtension = "io.modelcontextprotocol/skills"

// SkillsListParams, SkillsListResult, SkillsGetParams and
// SkillsGetResult are the extension's methods' (the handlers the SDK
// holds for them are never reached: intercept answers both).
type SkillsListParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type SkillsListResult struct {
	mcp.ResultBase
	ResultType string            `json:"resultType,omitempty"`
	Skills     []json.RawMessage `json:"skills"`
	NextCursor string            `json:"nextCursor,omitempty"`
	TTLMs      int               `json:"ttlMs"`
	CacheScope string            `json:"cacheScope"`
}

type SkillsGetParams struct {
	mcp.ParamsBase
	URI string `json:"uri"`
}

type SkillsGetResult struct {
	mcp.ResultBase
	ResultType string          `json:"resultType,omitempty"`
	Skill      json.RawMessage `json:"skill"`
	TTLMs      int             `json:"ttlMs"`
	CacheScope string          `json:"cacheScope"`
}

// addSkillMethods makes the SDK accept the extension's methods.
func (h *Handler) addSkillMethods() {
	unreachable := func(context.Context) error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "skills: not intercepted"}
	}
	_ = mcp.AddReceivingCustomMethod(h.srv, "skills/list", func(ctx context.Context, _ *mcp.ServerSession, _ *SkillsListParams) (*SkillsListResult, error) {
		return nil, unreachable(ctx)
	})
	_ = mcp.AddReceivingCustomMethod(h.srv, "skills/get", func(ctx context.Context, _ *mcp.ServerSession, _ *SkillsGetParams) (*SkillsGetResult, error) {
		return nil, unreachable(ctx)
	})
}

// skills is the skills in force client c sees, by gateway URI.
func (h *Handler) skills(c *access.Client) []*toolrouter.Tool {
	var out []*toolrouter.Tool
	for _, t := range h.d.Tools().Tools() {
		if t.Kind == toolrouter.KindSkill && t.Skill != nil && (c == nil || h.visible(c, t.Name)) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *toolrouter.Tool) int { return strings.Compare(skillURI(a), skillURI(b)) })
	return out
}

func skillURI(t *toolrouter.Tool) string { return toolrouter.GatewaySkillURI(t.MCPServer, t.Skill.URI) }

// gatewayEntry is a skill's entry with its URIs under the gateway's
// names: uri and each resources[].uri; the rest as the server sent it.
func gatewayEntry(t *toolrouter.Tool) json.RawMessage {
	var e map[string]any
	if json.Unmarshal(t.Skill.Entry, &e) != nil {
		return t.Skill.Entry
	}
	e["uri"] = skillURI(t)
	if files, ok := e["resources"].([]any); ok {
		for _, f := range files {
			if f, ok := f.(map[string]any); ok {
				if u, ok := f["uri"].(string); ok {
					f["uri"] = toolrouter.GatewaySkillURI(t.MCPServer, u)
				}
			}
		}
	}
	b, err := json.Marshal(e)
	if err != nil {
		return t.Skill.Entry
	}
	return b
}

// listSkills answers skills/list, paged like tools/list.
func (h *Handler) listSkills(req mcp.Request, c *access.Client) (mcp.Result, error) {
	cursor := ""
	if r, ok := req.(*mcp.ServerRequest[*SkillsListParams]); ok && r.Params != nil {
		cursor = r.Params.Cursor
	}
	page, next, err := pageOf(h.skills(c), skillURI, cursor, h.d.PageSize)
	if err != nil {
		return nil, err
	}
	res := &SkillsListResult{ResultType: "complete", Skills: make([]json.RawMessage, len(page)), NextCursor: next,
		TTLMs: int(h.d.ListTTL / time.Millisecond), CacheScope: "private"}
	for i, t := range page {
		res.Skills[i] = gatewayEntry(t)
	}
	return res, nil
}

// getSkill answers skills/get; a URI that names no skill the client sees
// is -32602, as the extension asks.
func (h *Handler) getSkill(req mcp.Request, c *access.Client) (mcp.Result, error) {
	uri := ""
	if r, ok := req.(*mcp.ServerRequest[*SkillsGetParams]); ok && r.Params != nil {
		uri = r.Params.URI
	}
	for _, t := range h.skills(c) {
		if skillURI(t) == uri {
			return &SkillsGetResult{ResultType: "complete", Skill: gatewayEntry(t), TTLMs: int(h.d.ListTTL / time.Millisecond), CacheScope: "private"}, nil
		}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "not a skill: " + uri}
}

// readSkillFile answers resources/read of a skill file under the
// gateway's name: a file of a skill the client sees, read on its server,
// served only when its bytes match the digest in force (a "dynamic"
// skill's files are served as they are). Every load of a SKILL.md is
// logged and audited (outcome skill_loaded).
func (h *Handler) readSkillFile(ctx context.Context, req mcp.Request, uri string, c *access.Client) (mcp.Result, error) {
	server, backend, _ := toolrouter.ParseGatewaySkillURI(uri)
	notFound := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resource not found: " + uri}
	var skill *toolrouter.Tool
	want, listed := "", false
	for _, t := range h.skills(c) {
		if t.MCPServer != server {
			continue
		}
		if t.Skill.Files == nil && strings.HasPrefix(backend, strings.TrimSuffix(t.Skill.URI, "SKILL.md")) && !hasDotSegment(backend) {
			skill = t
			break
		}
		if d, ok := t.Skill.Files[backend]; ok {
			skill, want, listed = t, d, true
			break
		}
	}
	if skill == nil || h.d.Resources == nil {
		return nil, notFound
	}
	res, _, err := h.d.Resources.ReadResource(ctx, server, backend)
	if err != nil {
		return nil, readError(req, err)
	}
	if listed {
		if got := rawDigest(res.Contents, backend); got != want {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resource " + uri + " changed since its skill was reviewed; it is quarantined until an approver accepts the change (GET /approvals)"}
		}
	}
	for _, ct := range res.Contents {
		if ct != nil && ct.URI == backend {
			ct.URI = uri
		}
	}
	if strings.HasSuffix(backend, "/SKILL.md") {
		name := ""
		if c != nil {
			name = c.Name
		}
		h.d.Logger.Info().Str("skill", skill.Name).Str("mcp_server", server).Str("uri", uri).Str("client", name).Msg("skill loaded")
		if h.d.Audit != nil {
			// tool_name the URI read, tool the skill, arguments_sha256 the
			// SKILL.md's digest (none for a "dynamic" skill).
			h.d.Audit.Record(ctx, toolrouter.AuditRecord{Client: name, EntryPoint: toolrouter.EntryMCP, ToolName: uri, Tool: skill.Name,
				ArgsSHA256: strings.TrimPrefix(want, "sha256:"), Outcome: toolrouter.AuditSkillLoaded})
		}
	}
	return h.readResult(req, res), nil
}

// rawDigest is the extension's digest of a file: "sha256:" and the hex
// SHA-256 of its raw bytes (the text's UTF-8, or the blob).
func rawDigest(contents []*mcp.ResourceContents, uri string) string {
	for _, ct := range contents {
		if ct == nil || ct.URI != uri {
			continue
		}
		b := ct.Blob
		if b == nil {
			b = []byte(ct.Text)
		}
		sum := sha256.Sum256(b)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return ""
}
