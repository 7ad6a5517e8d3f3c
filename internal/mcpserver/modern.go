package mcpserver

import (
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernVersion is the first protocol revision without sessions.
const modernVersion = "2026-07-28"

// isModern reports whether r is a request of protocol 2026-07-28 or later,
// served statelessly: its MCP-Protocol-Version header says so, or (a
// request without the header, and without a session) the protocol version
// in the params._meta of its body does; the stateless handler then checks
// the header against the body. Everything else (initialize, a session's
// requests, GET and DELETE of a session) is a session's.
func (h *Handler) isModern(r *http.Request, body []byte) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return isDate(v) && v >= modernVersion
	}
	if r.Method != http.MethodPost || r.Header.Get(sessionIDHeader) != "" {
		return false
	}
	var msg struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false // a batch or not JSON: the session handler answers
	}
	v, _ := msg.Params.Meta[metaProtocolVersion].(string)
	return v != ""
}

// metaProtocolVersion is the _meta key of a 2026-07-28 request's protocol
// version.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// isDate reports whether v looks like a protocol version (YYYY-MM-DD), so
// that comparing it as a string orders it by date.
func isDate(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i, c := range v {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// modernSession reports whether ss serves protocol 2026-07-28 or later (a
// stateless request's session has no initialize parameters).
func modernSession(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip == nil || ip.ProtocolVersion == "" || ip.ProtocolVersion >= modernVersion
}

// withResultType gives res the resultType "complete" that 2026-07-28
// requires of every result, or none for older protocol versions (a
// backend's result may carry either). The SDK sets the field only for
// results of its own tool handlers, and keeps it unexported: it is set
// through the result's JSON.
func withResultType(res *mcp.CallToolResult, modern bool) *mcp.CallToolResult {
	raw, err := json.Marshal(res)
	if err != nil {
		return res
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return res
	}
	delete(m, "resultType")
	if modern {
		m["resultType"] = json.RawMessage(`"complete"`)
	}
	raw, err = json.Marshal(m)
	out := &mcp.CallToolResult{}
	if err != nil || json.Unmarshal(raw, out) != nil {
		return res
	}
	return out
}
