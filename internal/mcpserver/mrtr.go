package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Multi round-trip requests (protocol 2026-07-28; docs/mcp.md "Elicitation
// through the gateway (multi round-trip requests)"): a
// backend that needs input (elicitation, sampling, roots) answers
// tools/call with an input_required result; /mcp relays it to its caller,
// whose retry of the call (same tool, its inputResponses, the requestState
// it got) goes to the backend again, whichever replica it reaches.
//
// The requestState the caller gets is toolrouterd's own: the backend's
// (possibly none) wrapped with the tool name the caller called and the
// client it was issued to, signed with HMAC-SHA256 under the state key
// (Deps.StateKey, or one generated once into the store, so every replica
// on it agrees). A retry presenting a state altered, unsigned, or issued
// for another tool or to another client is refused before any backend is
// called, so a backend's state reaches only the backend and the caller it
// came from.

// statePrefix marks a requestState toolrouterd issued (trs1 was unsigned).
const statePrefix = "trs2."

type wrappedState struct {
	Tool   string `json:"t"`
	Client string `json:"c,omitempty"`
	State  string `json:"s,omitempty"`
}

// stateKeyMark is the store mark of the generated state key.
const stateKeyMark = "mcp-state-key"

// stateKey is the key signing requestStates: Deps.StateKey, else the one
// generated into the store by the first replica that needed one.
func (h *Handler) stateKey(ctx context.Context) ([]byte, error) {
	h.keyMu.Lock()
	defer h.keyMu.Unlock()
	if h.key != nil {
		return h.key, nil
	}
	if h.d.StateKey != "" {
		h.key = []byte(h.d.StateKey)
		return h.key, nil
	}
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh) // never fails (crypto/rand)
	v, err := h.d.Marks.PutMark(ctx, stateKeyMark, hex.EncodeToString(fresh), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	if h.key, err = hex.DecodeString(v); err != nil || len(h.key) == 0 {
		h.key = nil
		return nil, fmt.Errorf("state key in the store is not hex")
	}
	return h.key, nil
}

func signState(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(statePrefix + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// wrapState is the requestState relayed to the caller of tool, for the
// backend's state.
func (h *Handler) wrapState(ctx context.Context, tool, client, state string) (string, error) {
	key, err := h.stateKey(ctx)
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(wrappedState{Tool: tool, Client: client, State: state}) // strings always encode
	payload := base64.RawURLEncoding.EncodeToString(b)
	return statePrefix + payload + "." + signState(key, payload), nil
}

// unwrapState returns the backend's state of a retry's requestState, or a
// JSON-RPC invalid-params error when toolrouterd did not issue it, as it
// is, for this tool and client.
func (h *Handler) unwrapState(ctx context.Context, tok, tool, client string) (string, error) {
	bad := func(why string) error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState: " + why}
	}
	rest, ok := strings.CutPrefix(tok, statePrefix)
	if !ok {
		return "", bad("not a requestState toolrouterd issued (or an expired one of an older version): call the tool again without it")
	}
	payload, sig, _ := strings.Cut(rest, ".")
	key, err := h.stateKey(ctx)
	if err != nil {
		return "", err
	}
	if !hmac.Equal([]byte(sig), []byte(signState(key, payload))) {
		return "", bad("altered, or not signed by toolrouterd")
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	var w wrappedState
	if err != nil || json.Unmarshal(b, &w) != nil || w.Tool == "" {
		return "", bad("malformed")
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
