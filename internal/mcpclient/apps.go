package mcpclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// MCP Apps (SEP-1865 "MCP Apps", the ext-apps specification
// 2026-01-26): a tool names its user interface, a ui:// resource of its
// server, in _meta.ui.resourceUri (or the deprecated flat
// _meta["ui/resourceUri"]) and says who may use it in
// _meta.ui.visibility. toolrouterd declares the extension to its
// servers, reads each named resource when it lists the tools, and makes
// the resource's digest part of the tool's pinned definition, so a
// changed UI is quarantined like a changed description
// (docs/mcp.md "MCP Apps").

// appsExtension is the extension's identifier, and appsMIME the
// resources' MIME type, which toolrouterd's client declares it takes.
const (
	appsExtension = "io.modelcontextprotocol/ui"
	appsMIME      = "text/html;profile=mcp-app"
	// metaUIDigest is the key, in a pinned definition's _meta, of the UI
	// resource's digest.
	metaUIDigest = "toolrouter/ui_resource_sha256"
	legacyUIKey  = "ui/resourceUri"
)

// appUI is the MCP Apps part of a tool's _meta; nil when it has none.
func appUI(meta mcp.Meta) *toolrouter.AppUI {
	var ui toolrouter.AppUI
	if m, ok := meta["ui"].(map[string]any); ok {
		ui.ResourceURI, _ = m["resourceUri"].(string)
		if vs, ok := m["visibility"].([]any); ok {
			ui.Visibility = []string{}
			for _, v := range vs {
				if s, ok := v.(string); ok {
					ui.Visibility = append(ui.Visibility, s)
				}
			}
		}
	}
	if s, ok := meta[legacyUIKey].(string); ok && s != "" {
		ui.Legacy = true // listed under it too (servers send both)
		if ui.ResourceURI == "" {
			ui.ResourceURI = s
		}
	}
	ui.ResourceSHA256, _ = meta[metaUIDigest].(string)
	if ui.ResourceURI == "" && ui.Visibility == nil {
		return nil
	}
	return &ui
}

// uiMeta is the _meta a tool's definition keeps (what its pin digests):
// the MCP Apps keys only, and the UI resource's digest; nil for a tool
// without a UI, so definitions of other tools digest as they always did.
func uiMeta(meta mcp.Meta) mcp.Meta {
	ui := appUI(meta)
	if ui == nil {
		return nil
	}
	out := mcp.Meta{}
	for _, k := range []string{"ui", legacyUIKey, metaUIDigest} {
		if v, ok := meta[k]; ok {
			out[k] = v
		}
	}
	return out
}

// readUIs reads the ui:// resource each listed tool names (once per URI)
// and records its digest in the tool's _meta (a copy). A resource that
// cannot be read is digested as the error's text: the tool stays, and
// its UI changes when it can be read again.
func readUIs(ctx context.Context, cs *mcp.ClientSession, tools []discovered) []discovered {
	digests := map[string]string{}
	for i, d := range tools {
		ui := appUI(d.tool.Meta)
		if ui == nil || ui.ResourceURI == "" {
			continue
		}
		digest, ok := digests[ui.ResourceURI]
		if !ok {
			digest = uiDigest(ctx, cs, ui.ResourceURI)
			digests[ui.ResourceURI] = digest
		}
		t := *d.tool
		t.Meta = maps.Clone(t.Meta)
		t.Meta[metaUIDigest] = digest
		tools[i] = newDiscovered(&t)
	}
	return tools
}

// uiDigest is "sha256:" and the SHA-256 of the resource's contents as
// JSON (text or blob, MIME type and _meta, which holds its CSP), or
// "unreadable: …".
func uiDigest(ctx context.Context, cs *mcp.ClientSession, uri string) string {
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return fmt.Sprintf("unreadable: %v", err)
	}
	return contentsDigest(res.Contents)
}

// contentsDigest digests a resources/read result's contents.
func contentsDigest(contents []*mcp.ResourceContents) string {
	b, err := json.Marshal(contents)
	if err != nil {
		return fmt.Sprintf("unreadable: %v", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ReadResource reads resource uri of MCP server name (resources/read on
// its session); the contents' digest is returned with it, for the caller
// to compare with the one pinned.
func (m *Manager) ReadResource(ctx context.Context, name, uri string) (*mcp.ReadResourceResult, string, error) {
	return m.ReadResourceAs(ctx, name, uri, nil)
}

// ReadResourceAs is ReadResource made for the user of cred (a backend
// credential, docs/backend-auth.md): on that user's own session, opened
// with the credential and carrying it on the read, as that user's
// tools/call go (usersession.go); never on the server's own session nor on
// another user's. A nil (or static) cred reads on the server's session.
func (m *Manager) ReadResourceAs(ctx context.Context, name, uri string, cred *toolrouter.Credential) (*mcp.ReadResourceResult, string, error) {
	s := m.server(name)
	if s == nil {
		return nil, "", fmt.Errorf("MCP server %q is not configured", name)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	var res *mcp.ReadResourceResult
	err := s.onSession(ctx, cred, func(ctx context.Context, cs *mcp.ClientSession) error {
		var err error
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("resources/read of %s on %q: %w", uri, name, err)
	}
	return res, contentsDigest(res.Contents), nil
}

// onSession runs f on the session a request made for cred goes on: its
// user's (userKey), else the server's own. A failure that is no answer of
// the server drops a user's session (the next request opens another).
// The error's text is scrubbed of the server URL's credentials and of
// cred's value.
func (s *server) onSession(ctx context.Context, cred *toolrouter.Credential, f func(context.Context, *mcp.ClientSession) error) error {
	key := userKey(cred)
	var cs *mcp.ClientSession
	var err error
	if key == "" {
		cs, _, err = s.awaitSession(ctx, 0)
	} else {
		cs, err = s.userSession(ctx, key, cred)
	}
	if err != nil {
		return fmt.Errorf("MCP server %q unavailable: %s", s.name, scrubCredential(s.scrub(err), cred))
	}
	err = f(withCredential(ctx, cred), cs)
	if err == nil {
		return nil
	}
	if je := serverError(err); je != nil {
		// The server's answer, its code kept (an unknown resource is
		// -32602).
		return &jsonrpc.Error{Code: je.Code, Message: scrubCredential(je.Message, cred)}
	}
	if key != "" && ctx.Err() == nil {
		s.dropUserSession(key, cs)
	}
	return errors.New(scrubCredential(s.scrub(err), cred))
}

// scrubCredential replaces cred's value (and its bare token) in msg.
func scrubCredential(msg string, cred *toolrouter.Credential) string {
	if cred == nil {
		return msg
	}
	v := cred.Value.Reveal()
	for _, secret := range []string{v, strings.TrimPrefix(v, "Bearer ")} {
		if len(secret) >= 8 {
			msg = strings.ReplaceAll(msg, secret, "[redacted]")
		}
	}
	return msg
}

// gatewayUIResult renames, in a tools/call result's _meta (raw JSON), the
// ui:// resource of server name (_meta.ui.resourceUri and the deprecated
// flat key) to the name toolrouterd serves it under; any other result is
// returned as it is.
func gatewayUIResult(name string, raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(toolrouter.UIScheme)) {
		return raw
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(raw, &res) != nil || res["_meta"] == nil {
		return raw
	}
	var meta map[string]any
	if json.Unmarshal(res["_meta"], &meta) != nil {
		return raw
	}
	changed := false
	if ui, ok := meta["ui"].(map[string]any); ok {
		if u, ok := ui["resourceUri"].(string); ok && strings.HasPrefix(u, toolrouter.UIScheme) {
			ui["resourceUri"], changed = toolrouter.GatewayUIURI(name, u), true
		}
	}
	if u, ok := meta[legacyUIKey].(string); ok && strings.HasPrefix(u, toolrouter.UIScheme) {
		meta[legacyUIKey], changed = toolrouter.GatewayUIURI(name, u), true
	}
	if !changed {
		return raw
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return raw
	}
	res["_meta"] = b
	out, err := json.Marshal(res)
	if err != nil {
		return raw
	}
	return out
}
