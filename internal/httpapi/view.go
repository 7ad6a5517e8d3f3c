package httpapi

import (
	"net/http"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// withView puts the request's view in its context (docs/mcp.md "Virtual
// servers and tool search"): the virtual server of the query's server
// (404 naming "server" when there is none the client may use), else the
// empty view of a client bound to virtual servers, or the registry-wide
// view in search mode. Without virtual servers (views nil) it does
// nothing.
func withView(views func() *vserver.Set) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if views == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			v, err := views().For(access.FromContext(r.Context()), r.URL.Query().Get("server"))
			if err != nil {
				writeError(w, r, err)
				return
			}
			if v != nil {
				r = r.WithContext(vserver.NewContext(r.Context(), v))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// handleVirtualMCP serves /mcp/{server}: the MCP endpoint of a virtual
// server the client may use; any other name is 404, as for a server that
// does not exist.
func handleVirtualMCP(views func() *vserver.Set, mcp func(server string) http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := pathParam(r, "server")
		if _, err := views().For(access.FromContext(r.Context()), name); err != nil || name == "" {
			writeError(w, r, &toolrouter.Error{Code: toolrouter.ENOTFOUND, Message: "no MCP endpoint " + r.URL.Path})
			return
		}
		mcp(name).ServeHTTP(w, r)
	})
}
