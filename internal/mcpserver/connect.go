package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// connectError is the answer to a call whose user must first connect the
// tool's backend (auth mode oauth, docs/backend-auth.md): for a client
// that declared URL-mode elicitation, the URLElicitationRequiredError of
// MCP 2025-11-25 (-32042, "Elicitation", URL mode) carrying the connect
// URL; nil for other clients, which get the failed call's result (whose
// text names the URL).
func connectError(req *mcp.CallToolRequest, caps json.RawMessage, res *toolrouter.Result) error {
	if res.ConnectURL == "" || !urlElicitation(req, caps) {
		return nil
	}
	sum := sha256.Sum256([]byte(res.ConnectURL))
	msg := "Sign in to connect this tool's backend, then call the tool again."
	if res.Error != nil {
		msg = *res.Error
	}
	return mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", Message: msg, URL: res.ConnectURL,
		ElicitationID: hex.EncodeToString(sum[:12])}})
}

// urlElicitation reports whether the client declared URL-mode
// elicitation: in its initialize capabilities, or (2026-07-28) in the
// request's _meta clientCapabilities.
func urlElicitation(req *mcp.CallToolRequest, caps json.RawMessage) bool {
	return declaresURLElicitation(req.Session, caps)
}

func declaresURLElicitation(ss *mcp.ServerSession, caps json.RawMessage) bool {
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil && ip.Capabilities.Elicitation.URL != nil {
			return true
		}
	}
	var c struct {
		Elicitation *struct {
			URL json.RawMessage `json:"url"`
		} `json:"elicitation"`
	}
	return len(caps) > 0 && json.Unmarshal(caps, &c) == nil && c.Elicitation != nil && c.Elicitation.URL != nil
}

// readError is the answer to a read of a backend's resource (a UI
// resource, a skill file, a directory) that failed with err. A read whose
// user must first connect the backend (auth mode oauth: err has a
// ConnectURL) is answered as a tool call is (connectError): the
// URLElicitationRequiredError (-32042) for a client that declared
// URL-mode elicitation; for any other client, as any failed read, an
// internal error, whose message ends with the URL.
func readError(req mcp.Request, err error) error {
	var connect interface{ ConnectURL() string }
	if errors.As(err, &connect) && connect.ConnectURL() != "" {
		u := connect.ConnectURL()
		ss, _ := req.GetSession().(*mcp.ServerSession)
		var caps json.RawMessage
		if p := req.GetParams(); p != nil {
			caps = clientCapabilities(p.GetMeta())
		}
		if declaresURLElicitation(ss, caps) {
			sum := sha256.Sum256([]byte(u))
			return mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", Message: err.Error(), URL: u,
				ElicitationID: hex.EncodeToString(sum[:12])}})
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error() + ": " + u}
	}
	if je := (*jsonrpc.Error)(nil); errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams {
		// The server's own refusal (an unknown resource, not a
		// directory): the caller's params, as the server said.
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}
