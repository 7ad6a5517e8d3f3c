package mcpclient

import (
	"context"
	"net/http"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// A call's credential (docs/backend-auth.md) rides in the context of its
// requests inside this package only: the SDK's path sends the request
// through serverTransport, which puts it in the request's header, as
// server.post does on the hot path. It replaces the server's header of the
// same name on that call's requests only; the session's other requests
// keep the registry's headers.
type credentialKey struct{}

func withCredential(ctx context.Context, c *toolrouter.Credential) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, credentialKey{}, c)
}

func credentialFrom(ctx context.Context) *toolrouter.Credential {
	c, _ := ctx.Value(credentialKey{}).(*toolrouter.Credential)
	return c
}

// setCredential puts the context's credential, if any, in h; it reports
// whether it changed h.
func setCredential(ctx context.Context, h http.Header) bool {
	c := credentialFrom(ctx)
	if c == nil {
		return false
	}
	v := c.Value.Reveal()
	if vs := h.Values(c.Header); len(vs) == 1 && vs[0] == v {
		return false
	}
	h.Set(c.Header, v)
	return true
}
