package toolrouter

import (
	"slices"
	"strings"
)

// AppUI is what an MCP tool says of its MCP Apps user interface (SEP-1865,
// "MCP Apps", stable 2026-01-26: the tool's _meta.ui, or the deprecated
// flat _meta["ui/resourceUri"]).
type AppUI struct {
	// ResourceURI is the ui:// resource on the tool's server, as the
	// server names it ("" when the tool names none).
	ResourceURI string
	// Legacy: the server gave it under the flat key "ui/resourceUri".
	Legacy bool
	// Visibility is who may see and call the tool: "model", "app"; nil
	// is both (the spec's default).
	Visibility []string
	// ResourceSHA256 is the digest of the resource's contents when the
	// tool was listed ("" when unread), part of the definition a pin
	// digests: a changed UI is a changed definition.
	ResourceSHA256 string
}

// ModelVisible reports whether a model may be offered tool t: a tool
// whose visibility leaves out "model" is for its app only (SEP-1865
// "Visibility": the host keeps it from the agent's tool list), so
// /schemas, /runs and search never offer it; /mcp lists it, with its
// visibility, for the host to apply.
func (t *Tool) ModelVisible() bool {
	if t.Kind == KindSkill {
		return false // a skill is read, not called (skills.go)
	}
	return t.UI == nil || t.UI.Visibility == nil || slices.Contains(t.UI.Visibility, "model")
}

// UIScheme is the scheme of MCP Apps resources.
const UIScheme = "ui://"

// GatewayUIURI is the name toolrouterd gives the ui:// resource uri of
// MCP server server: ui://{server}/{the rest of uri}. It keeps the
// scheme (hosts render only ui:// resources) and holds the server's
// name, which no two servers share, so two servers' equal URIs never
// collide and a read finds its server (ParseGatewayUIURI).
func GatewayUIURI(server, uri string) string {
	return UIScheme + server + "/" + strings.TrimPrefix(uri, UIScheme)
}

// ParseGatewayUIURI is the server and backend URI of a gateway ui://
// name; ok is false for anything GatewayUIURI did not make.
func ParseGatewayUIURI(uri string) (server, backend string, ok bool) {
	rest, found := strings.CutPrefix(uri, UIScheme)
	if !found {
		return "", "", false
	}
	server, tail, found := strings.Cut(rest, "/")
	if !found || server == "" || tail == "" {
		return "", "", false
	}
	return server, UIScheme + tail, true
}
