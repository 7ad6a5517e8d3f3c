package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// The server side's tools/call fast path (issue 37), the twin of the
// client side's (internal/mcpclient/fastcall.go).
//
// Through the go-sdk, one stateless tools/call (protocol 2026-07-28, what
// the SDK's own client speaks by default) connects a throwaway session (a
// jsonrpc2 connection, its goroutines and channels) and decodes the body
// about sixteen times, each time through a JSON decoder that allocates a
// 32 KiB buffer: ~540 kB and ~390 allocations per call, and their garbage
// collection, before toolrouterd's own work begins (BenchmarkMCPToolsCall).
//
// So a POST holding exactly one tools/call request of protocol 2026-07-28
// is recognised here and answered without the SDK's transport and session:
// the body is decoded once, with the decoder the SDK uses (segmentio's,
// keys matched exactly), into the SDK's own request type; the request goes
// through the same receiving middleware the SDK would run it through
// (tracing, then intercept: rate limit, the batch slots, plan id, tasks,
// the router with every stage, -32042, budgets, mrtr); and the answer is
// written as the SDK writes it (the same JSON-RPC encoding, one SSE
// message event, or a JSON error with the status 2026-07-28 gives it).
//
// Everything else goes to the SDK, as before: other methods, batches,
// notifications, session requests (protocols up to 2025-11-25, whose
// session timer, notifications/cancelled and GET stream are the SDK's),
// and any request that the SDK would refuse or treat differently: a header
// or _meta it would check and reject, a progress token or a log level
// (notifications the SDK streams on the call's response), a tool whose
// schema names header-mapped parameters (x-mcp-header), a body it would
// decode differently. When in doubt, the fast path declines.
//
// The guarantee is tested: TestFastCallAnswersAsTheSDK sends the same
// calls both ways and compares the answers byte for byte; the ablation is
// the build tag sdkmcpserver (sdkserver*.go; bench/README.md's decision
// table).

// fastRequest is a JSON-RPC request as the SDK's DecodeMessage reads it,
// with its params as the SDK's tools/call handler reads them.
type fastRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      any    `json:"id"`
	Method  string `json:"method"`
	// Params raw, as the SDK keeps them: a key given twice is its last
	// value, where decoding into a struct would merge the two objects.
	Params json.RawMessage `json:"params"`
}

// fastParams are mcp.CallToolParamsRaw's fields (TestFastParamsAsTheSDKs
// keeps them in step) with _meta left raw: the SDK's decoder makes every
// map[string]any with room for 64 entries (~2 kB each, three or four per
// request). A map decodes alike with encoding/json, which keeps no struct
// keys to match (see fastMeta).
type fastParams struct {
	Meta           json.RawMessage      `json:"_meta"`
	Name           string               `json:"name"`
	Arguments      json.RawMessage      `json:"arguments"`
	InputResponses mcp.InputResponseMap `json:"inputResponses"`
	RequestState   string               `json:"requestState"`
}

// fastMaxDepth is the SDK decoder's nesting bound (its internal/json).
const fastMaxDepth = 1000

// serveFast answers r when it is a single tools/call the fast path takes,
// and reports whether it did; when it did not, nothing was written and the
// caller serves r as before.
func (h *Handler) serveFast(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if h.sdkCalls || r.Method != http.MethodPost || r.Header.Get("Mcp-Protocol-Version") != modernVersion {
		return false
	}
	req, id, ok := h.fastDecode(r, body)
	if !ok {
		return false
	}
	c := access.FromContext(r.Context())
	p := &post{}
	if c != nil && h.d.Limiter != nil && !c.Rate.IsZero() {
		name := req.Params.Name
		if !h.admitCalls(w, r, c, 1, id.Raw(), func() []string { return []string{name} }, &p.prepaid) {
			h.fastCalls.Add(1)
			return true
		}
	}
	h.fastCalls.Add(1)
	// What withClient hands the SDK's handlers (mcpserver.go).
	req.Extra = &mcp.RequestExtra{Header: r.Header, TokenInfo: &auth.TokenInfo{UserID: c.LabelName(), Extra: map[string]any{
		clientExtra: c, userExtra: access.UserFromContext(r.Context()), postExtra: p}}}
	res, err := h.fastChain(r.Context(), "tools/call", req)
	if err != nil {
		res = nil
	} else if cr, ok := res.(*mcp.CallToolResult); ok {
		annotateServerInfo(cr, h.impl)
	}
	h.writeFast(w, id, res, err)
	return true
}

// fastDecode decodes body as one tools/call request of protocol
// 2026-07-28 that the SDK would accept and pass to its handler unchanged;
// ok is false for anything else.
func (h *Handler) fastDecode(r *http.Request, body []byte) (*mcp.CallToolRequest, jsonrpc.ID, bool) {
	hd := r.Header
	if hd.Get("Content-Type") != "application/json" || len(hd.Values("Last-Event-ID")) > 0 || hd.Get(sessionHeader) != "" ||
		hd.Get("Mcp-Method") != "tools/call" || !acceptsBoth(hd.Values("Accept")) {
		return nil, jsonrpc.ID{}, false
	}
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '{' || !toolrouter.JSONDepthWithin(b, fastMaxDepth) {
		return nil, jsonrpc.ID{}, false // a batch, or what the SDK refuses
	}
	var m fastRequest
	rest, err := segjson.Parse(b, &m, segjson.DontMatchCaseInsensitiveStructFields)
	if err != nil || len(bytes.TrimLeft(rest, " \t\r\n")) > 0 || m.JSONRPC != "2.0" || m.Method != "tools/call" || len(m.Params) == 0 || m.Params[0] != '{' {
		return nil, jsonrpc.ID{}, false
	}
	var params fastParams
	if rest, err = segjson.Parse(m.Params, &params, segjson.DontMatchCaseInsensitiveStructFields); err != nil || len(bytes.TrimLeft(rest, " \t\r\n")) > 0 {
		return nil, jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(m.ID)
	if err != nil || !id.IsValid() {
		return nil, jsonrpc.ID{}, false
	}
	meta, ok := fastMeta(params.Meta)
	if !ok {
		return nil, jsonrpc.ID{}, false
	}
	p := &mcp.CallToolParamsRaw{Meta: meta, Name: params.Name, Arguments: params.Arguments,
		InputResponses: params.InputResponses, RequestState: params.RequestState}
	if hd.Get("Mcp-Name") != p.Name || p.Name == "" || p.GetProgressToken() != nil || h.headerMapped(p.Name) {
		return nil, jsonrpc.ID{}, false
	}
	if v, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string); v != modernVersion {
		return nil, jsonrpc.ID{}, false
	}
	if _, ok := p.Meta[metaLogLevel]; ok {
		return nil, jsonrpc.ID{}, false // log notifications: the SDK streams them
	}
	if !metaDecodes(p.Meta) {
		return nil, jsonrpc.ID{}, false
	}
	return &mcp.CallToolRequest{Params: p}, id, true
}

// fastMeta decodes a request's raw _meta as the SDK's decoder would; ok is
// false when it might not decode alike: encoding/json and segmentio's
// decode a map of plain JSON values the same way, and differ only in what
// they make of escapes (lone surrogates) and invalid UTF-8, left to the SDK.
func fastMeta(raw json.RawMessage) (mcp.Meta, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return nil, false
	}
	var m mcp.Meta
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

// metaDecodes reports whether the SDK's check of a 2026-07-28 request's
// _meta passes (its validateRequestMeta): clientCapabilities present and
// decodable, clientInfo absent or decodable.
func metaDecodes(meta mcp.Meta) bool {
	var caps struct {
		mcp.ClientCapabilities
		//lint:ignore SA1019 roots are deprecated by 2026-07-28 (SEP-2577) and still decoded by the SDK's check, which this mirrors
		Roots *mcp.RootCapabilities `json:"roots,omitempty"`
	}
	v, ok := meta[mcp.MetaKeyClientCapabilities]
	if m, empty := v.(map[string]any); !ok || v == nil || !(empty && len(m) == 0) && !remarshals(v, &caps) {
		return false // {} decodes, whatever the type
	}
	if v, ok := meta[mcp.MetaKeyClientInfo]; ok && v != nil && !plainInfo(v) {
		var info mcp.Implementation
		if !remarshals(v, &info) {
			return false
		}
	}
	return true
}

// plainInfo reports whether a clientInfo decodes into mcp.Implementation
// for sure: an object of strings without icons (its one field not a
// string; keys are matched exactly, so only "icons" names it).
func plainInfo(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k, e := range m {
		if _, str := e.(string); !str || k == "icons" {
			return false
		}
	}
	return true
}

// remarshals reports whether v, encoded, decodes into to as the SDK
// decodes it (its remarshal).
func remarshals(v, to any) bool {
	raw, err := jsonMarshal(v)
	if err != nil {
		return false
	}
	rest, err := segjson.Parse(raw, to, segjson.DontMatchCaseInsensitiveStructFields)
	return err == nil && len(rest) == 0
}

// acceptsBoth reports whether Accept values take both application/json
// and text/event-stream, as the SDK's transport requires of a POST.
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// headerMapped reports whether the listed tool name has parameters mapped
// to headers (x-mcp-header), which the SDK checks against Mcp-Param-*.
func (h *Handler) headerMapped(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.paramHeaders[name]
}

// unreachable is the method handler beneath intercept on the fast path:
// intercept answers every tools/call itself.
func unreachable(context.Context, string, mcp.Request) (mcp.Result, error) {
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

// annotateServerInfo names the server in a 2026-07-28 result's _meta, as
// the SDK does to every result of that revision (SEP-2575).
func annotateServerInfo(res *mcp.CallToolResult, impl *mcp.Implementation) {
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	if _, ok := res.Meta[mcp.MetaKeyServerInfo]; !ok {
		res.Meta[mcp.MetaKeyServerInfo] = impl
	}
}

// writeFast writes the answer to request id as the SDK's transport does: a
// protocol-level error of 2026-07-28 (invalid params, method not found,
// unsupported version, missing capability) as one JSON body with its HTTP
// status, anything else as one SSE message event.
func (h *Handler) writeFast(w http.ResponseWriter, id jsonrpc.ID, res mcp.Result, rpcErr error) {
	resp := &jsonrpc.Response{ID: id, Error: rpcErr}
	var data []byte
	if rpcErr == nil {
		raw, err := marshalResult(res)
		if err != nil {
			h.d.Logger.Error().Err(err).Msg("encode MCP tools/call result")
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
		} else {
			data, resp.Result = envelope(id, raw), raw
		}
	}
	if data == nil {
		var err error
		if data, err = jsonrpc.EncodeMessage(resp); err != nil {
			h.d.Logger.Error().Err(err).Msg("encode MCP tools/call answer")
			data = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
		}
	}
	hd := w.Header()
	hd.Set("Cache-Control", "no-cache, no-transform")
	if status := errorStatus(resp.Error); status != 0 {
		hd.Set("Connection", "keep-alive")
		hd.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(data)
		return
	}
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Connection", "keep-alive")
	buf := make([]byte, 0, len("event: message\ndata: \n\n")+len(data))
	buf = append(append(append(buf, "event: message\ndata: "...), data...), "\n\n"...)
	// Not flushed, unlike the SDK's events: this one ends the stream, so
	// net/http sends it with a Content-Length in one write when the
	// handler returns, where a flush costs a write for the event and one
	// more for the chunked encoding's end.
	_, _ = w.Write(buf)
}

// errorStatus is the HTTP status 2026-07-28 gives a protocol-level error
// (SEP-2575, as the SDK's transport maps it); 0 for the rest.
func errorStatus(err error) int {
	var jerr *jsonrpc.Error
	if err == nil || !errors.As(err, &jerr) {
		return 0
	}
	switch jerr.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// marshalResult is the JSON of a result as the SDK's jsonrpc2 writes it
// (jsonMarshal): for the results of tools/call, whose MarshalJSON is
// encoding/json's (compact, so the encoder's own compacting pass changes
// nothing), that JSON itself, without passing it through an encoder again.
func marshalResult(res mcp.Result) ([]byte, error) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r.MarshalJSON()
	case *createTaskResult:
		return r.MarshalJSON()
	}
	return jsonMarshal(res)
}

// envelope is the JSON-RPC response of id with result raw, as the SDK's
// EncodeMessage writes it (its fields in that order; ids an integer or a
// string without HTML escaping), without compacting raw once more.
func envelope(id jsonrpc.ID, raw []byte) []byte {
	var idJSON []byte
	switch v := id.Raw().(type) {
	case int64:
		idJSON = strconv.AppendInt(nil, v, 10)
	default:
		var err error
		if idJSON, err = jsonMarshal(v); err != nil {
			return nil
		}
	}
	out := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(idJSON)+len(raw))
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, idJSON...)
	out = append(out, `,"result":`...)
	out = append(out, raw...)
	return append(out, '}')
}

// jsonMarshal encodes v as the SDK's jsonrpc2 does: encoding/json without
// HTML escaping.
func jsonMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// decodeResult decodes an MCP backend's CallToolResult as its
// UnmarshalJSON does, into out; false when it could not. A result whose
// content is all text (what most tools answer) is decoded here, with the
// SDK's decoder on the same types, the SDK's UnmarshalJSON otherwise: that
// one decodes through a JSON decoder allocating 32 KiB per value (issue
// 37), every call of an MCP tool through /mcp.
func decodeResult(raw []byte, out *mcp.CallToolResult) bool {
	if !json.Valid(raw) {
		return false // what encoding/json refuses before any UnmarshalJSON
	}
	if !toolrouter.JSONDepthWithin(raw, fastMaxDepth) {
		return json.Unmarshal(raw, out) == nil
	}
	var wire struct {
		Meta              mcp.Meta            `json:"_meta,omitempty"`
		Content           []*wireContent      `json:"content"`
		StructuredContent any                 `json:"structuredContent,omitempty"`
		IsError           bool                `json:"isError,omitempty"`
		InputRequests     mcp.InputRequestMap `json:"inputRequests,omitempty"`
		RequestState      string              `json:"requestState,omitempty"`
		ResultType        string              `json:"resultType"`
	}
	rest, err := segjson.Parse(raw, &wire, segjson.DontMatchCaseInsensitiveStructFields)
	if err != nil || len(bytes.TrimLeft(rest, " \t\r\n")) > 0 || wire.ResultType != "" || wire.InputRequests != nil {
		return json.Unmarshal(raw, out) == nil
	}
	content := make([]mcp.Content, 0, len(wire.Content))
	for _, c := range wire.Content {
		if c == nil || c.Type != "text" {
			return json.Unmarshal(raw, out) == nil
		}
		content = append(content, &mcp.TextContent{Text: c.Text, Meta: c.Meta, Annotations: c.Annotations})
	}
	*out = mcp.CallToolResult{Meta: wire.Meta, Content: content, StructuredContent: wire.StructuredContent,
		IsError: wire.IsError, RequestState: wire.RequestState}
	return true
}

// wireContent is the go-sdk's content block on the wire (its unexported
// wireContent, field for field, so that a block decodes, or fails to, as
// there; TestDecodeResultAsTheSDK checks it on results of every kind).
type wireContent struct {
	Type              string                `json:"type"`
	Text              string                `json:"text,omitempty"`
	MIMEType          string                `json:"mimeType,omitempty"`
	Data              []byte                `json:"data,omitempty"`
	Resource          *mcp.ResourceContents `json:"resource,omitempty"`
	URI               string                `json:"uri,omitempty"`
	Name              string                `json:"name,omitempty"`
	Title             string                `json:"title,omitempty"`
	Description       string                `json:"description,omitempty"`
	Size              *int64                `json:"size,omitempty"`
	Meta              mcp.Meta              `json:"_meta,omitempty"`
	Annotations       *mcp.Annotations      `json:"annotations,omitempty"`
	Icons             []mcp.Icon            `json:"icons,omitempty"`
	ID                string                `json:"id,omitempty"`
	Input             map[string]any        `json:"input,omitempty"`
	ToolUseID         string                `json:"toolUseId,omitempty"`
	NestedContent     []*wireContent        `json:"content,omitempty"`
	StructuredContent any                   `json:"structuredContent,omitempty"`
	IsError           bool                  `json:"isError,omitempty"`
}
