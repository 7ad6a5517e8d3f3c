package httpapi

import (
	"net/http"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// requestView is the view of a request (docs/mcp.md "Virtual servers and
// tool search"): the virtual server of the query's server (ENOTFOUND
// naming "server" when there is none the client may use), else the empty
// view of a client bound to virtual servers, or the registry-wide view in
// search mode; nil: the registry as it is (also without virtual servers,
// views nil).
func requestView(views func() *vserver.Set, r *http.Request) (*vserver.View, error) {
	if views == nil {
		return nil, nil
	}
	server := ""
	if r.URL.RawQuery != "" { // most calls name no server: no query to parse
		server = r.URL.Query().Get("server")
	}
	return views().For(access.FromContext(r.Context()), server)
}

// callView is requestView as the view a call resolves in (nil: none).
// The view is looked up again after checkView let the request in: a reload
// in between that removed its server leaves the empty view, never the
// whole registry.
func callView(views func() *vserver.Set, r *http.Request) toolrouter.View {
	v, err := requestView(views, r)
	switch {
	case err != nil:
		return vserver.Empty()
	case v != nil:
		return v
	}
	return nil
}

// checkView refuses a request whose ?server= names no virtual server the
// client may use (404 naming "server") before anything else runs.
func checkView(views func() *vserver.Set) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if views == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := requestView(views, r); err != nil {
				writeError(w, r, err)
				return
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
