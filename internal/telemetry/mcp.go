package telemetry

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// MCPClient is the sending middleware of toolrouterd's MCP clients: each
// tools/call is a CLIENT span "tools/call {tool}" (mcp.method.name,
// gen_ai.tool.name, mcp.session.id as sessionDigest, mcp.protocol.version,
// and for servers over HTTP jsonrpc.request.id, server.address and
// server.port) whose context
// travels in params._meta (traceparent, tracestate), as the MCP conventions
// say. Other methods pass untouched. Nil with tracing off.
func (t *Telemetry) MCPClient() mcp.Middleware {
	if !t.Enabled() {
		return nil
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p, ok := req.GetParams().(*mcp.CallToolParams)
			if method != "tools/call" || !ok || p == nil {
				return next(ctx, method, req)
			}
			attrs := []attribute.KeyValue{
				attribute.String("mcp.method.name", method),
				attribute.String("gen_ai.tool.name", p.Name),
				attribute.String("gen_ai.operation.name", "execute_tool"),
			}
			if s := req.GetSession(); s != nil && s.ID() != "" {
				attrs = append(attrs, attribute.String("mcp.session.id", sessionDigest(s.ID())))
			}
			if cs, ok := req.GetSession().(*mcp.ClientSession); ok && cs.InitializeResult() != nil {
				attrs = append(attrs, attribute.String("mcp.protocol.version", cs.InitializeResult().ProtocolVersion))
			}
			ctx, span := t.tracer.Start(ctx, method+" "+p.Name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
			defer span.End()
			// A copy: the caller's map may be shared by a retry.
			meta := maps.Clone(p.GetMeta())
			if meta == nil {
				meta = map[string]any{}
			}
			carrier := propagation.MapCarrier{}
			t.prop.Inject(ctx, carrier)
			for k, v := range carrier {
				meta[k] = v
			}
			p.SetMeta(meta)
			ctx = context.WithValue(ctx, rpcSpanKey{}, span)
			res, err := next(ctx, method, req)
			endMCP(span, res, err)
			return res, err
		}
	}
}

// MCPServer is the receiving middleware of the /mcp endpoint: each
// tools/call is a SERVER span "tools/call {tool}" whose parent is the
// context in params._meta when the client sent one (the HTTP request's span
// is then a link), else the request's own context.
func (t *Telemetry) MCPServer() mcp.Middleware {
	if !t.Enabled() {
		return nil
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			name := ""
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
				name = p.Name
			}
			attrs := []attribute.KeyValue{
				attribute.String("mcp.method.name", method),
				attribute.String("gen_ai.tool.name", name),
				attribute.String("gen_ai.operation.name", "execute_tool"),
			}
			// A tools/call of /mcp's fast path has no session (a nil
			// *mcp.ServerSession); a stateless one's has no id either.
			if s, ok := req.GetSession().(*mcp.ServerSession); ok && s != nil && s.ID() != "" {
				attrs = append(attrs, attribute.String("mcp.session.id", sessionDigest(s.ID())))
			}
			opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
			parent := ctx
			if p := req.GetParams(); p != nil {
				carrier := propagation.MapCarrier{}
				for k, v := range p.GetMeta() {
					if s, ok := v.(string); ok {
						carrier[k] = s
					}
				}
				if ext := t.prop.Extract(ctx, carrier); trace.SpanContextFromContext(ext).IsRemote() {
					parent = ext
					if amb := trace.SpanContextFromContext(ctx); amb.IsValid() {
						opts = append(opts, trace.WithLinks(trace.Link{SpanContext: amb}))
					}
				}
			}
			ctx, span := t.tracer.Start(parent, method+" "+name, append(opts, trace.WithAttributes(attrs...))...)
			defer span.End()
			res, err := next(withLogIDs(ctx, span), method, req)
			endMCP(span, res, err)
			return res, err
		}
	}
}

// sessionDigest is what spans say of an MCP session id: 24 hex digits of
// its SHA-256, as in the plan ids of /mcp sessions
// (mcpserver.SessionPlanID). A session id is a credential (docs/security.md
// "Clients") and never leaves the process.
func sessionDigest(id string) string { return toolrouter.ShortDigest(id) }

// endMCP records a JSON-RPC error, or a tool result with isError, on span.
func endMCP(span trace.Span, res mcp.Result, err error) {
	if err != nil {
		fail(span, "_OTHER", err.Error())
		return
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
		fail(span, "tool_error", "")
	}
}

// rpcSpanKey marks the context of an MCP client span, so that the
// transport under it can record the JSON-RPC id of the request it carries.
type rpcSpanKey struct{}

// recordRPC sets server.address and server.port (the MCP server's, as the
// MCP conventions ask of the client span) and jsonrpc.request.id on the MCP
// client span of ctx from an HTTP request sent under it.
func recordRPC(r *http.Request, server []attribute.KeyValue) {
	span, ok := r.Context().Value(rpcSpanKey{}).(trace.Span)
	if !ok {
		return
	}
	span.SetAttributes(server...)
	if r.GetBody == nil {
		return
	}
	rc, err := r.GetBody() // a copy: the request's own body is left unread
	if err != nil {
		return
	}
	b, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	rc.Close()
	if err != nil {
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(b, &msg) != nil || msg.Method != "tools/call" || len(msg.ID) == 0 || string(msg.ID) == "null" {
		return
	}
	id := string(msg.ID) // a number as written
	if msg.ID[0] == '"' && json.Unmarshal(msg.ID, &id) != nil {
		return
	}
	span.SetAttributes(attribute.String("jsonrpc.request.id", id))
}
