package mcpserver

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Multi round-trip requests (protocol 2026-07-28; README, "MCP"): a
// backend that needs input (elicitation, sampling, roots) answers
// tools/call with an input_required result; /mcp relays it to its caller,
// whose retry of the call (same tool, its inputResponses, the requestState
// it got) goes to the backend again, whichever replica it reaches.
//
// The requestState the caller gets is toolrouterd's own: the backend's
// (possibly none) wrapped with the tool name the caller called and the
// client it was issued to. A retry presenting it for another tool or from
// another client is refused, so a backend's state reaches only the backend
// and the caller it came from. It is not signed: the backend must protect
// the integrity of its own state, as the revision requires of every
// server, and a caller can make toolrouterd forward nothing it could not
// forward by calling the tool itself.

// statePrefix marks a requestState toolrouterd issued.
const statePrefix = "trs1."

type wrappedState struct {
	Tool   string `json:"t"`
	Client string `json:"c,omitempty"`
	State  string `json:"s,omitempty"`
}

// wrapState is the requestState relayed to the caller of tool, for the
// backend's state.
func wrapState(tool, client, state string) string {
	b, _ := json.Marshal(wrappedState{Tool: tool, Client: client, State: state}) // strings always encode
	return statePrefix + base64.RawURLEncoding.EncodeToString(b)
}

// unwrapState returns the backend's state of a retry's requestState, or a
// JSON-RPC invalid-params error when toolrouterd did not issue it for this
// tool and client.
func unwrapState(tok, tool, client string) (string, error) {
	bad := func(why string) error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState: " + why}
	}
	enc, ok := strings.CutPrefix(tok, statePrefix)
	if !ok {
		return "", bad("not a requestState toolrouterd issued")
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	var w wrappedState
	if err != nil || json.Unmarshal(b, &w) != nil || w.Tool == "" {
		return "", bad("malformed or modified")
	}
	if w.Tool != tool {
		return "", bad("issued for the tool " + w.Tool + ", not " + tool)
	}
	if w.Client != client {
		return "", bad("issued to another client")
	}
	return w.State, nil
}

// clientCapabilities is the raw clientCapabilities of a 2026-07-28
// request's _meta; nil when absent.
func clientCapabilities(meta mcp.Meta) json.RawMessage {
	v, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return raw
}
