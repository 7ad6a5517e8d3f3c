package mcpserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"

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
// results of its own tool handlers, and keeps it unexported: complete is
// a result whose resultType was set through its JSON, once (New), and the
// answer is a copy of it (or of an empty result, for older versions)
// carrying res's exported fields. Going through the JSON on each call (a
// marshal, an unmarshal to a map, a marshal and the SDK's unmarshal, which
// allocates a 32 KiB buffer per value it decodes) cost an /mcp tools/call
// more allocated bytes than toolrouterd's own work on it (issue 37); it is
// kept for an SDK whose results cannot be so made (complete nil).
func withResultType(res *mcp.CallToolResult, modern bool, complete *mcp.CallToolResult) *mcp.CallToolResult {
	if complete == nil {
		return withResultTypeJSON(res, modern)
	}
	out := &mcp.CallToolResult{}
	if modern {
		*out = *complete
	}
	src, dst := reflect.ValueOf(res).Elem(), reflect.ValueOf(out).Elem()
	for i := range dst.NumField() {
		if dst.Type().Field(i).IsExported() {
			dst.Field(i).Set(src.Field(i))
		}
	}
	if out.Content == nil {
		out.Content = []mcp.Content{} // content is required: [], as its JSON had it
	}
	return out
}

// completeResult is a result with the resultType "complete" and nothing
// else, for withResultType; nil if this SDK does not make one from its
// JSON (its encoding must then say "complete").
func completeResult() *mcp.CallToolResult {
	out := &mcp.CallToolResult{}
	if json.Unmarshal([]byte(`{"content":[],"resultType":"complete"}`), out) != nil {
		return nil
	}
	if raw, err := json.Marshal(out); err != nil || !bytes.Contains(raw, []byte(`"resultType":"complete"`)) {
		return nil
	}
	return out
}

// withResultTypeJSON is withResultType through res's JSON.
func withResultTypeJSON(res *mcp.CallToolResult, modern bool) *mcp.CallToolResult {
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
