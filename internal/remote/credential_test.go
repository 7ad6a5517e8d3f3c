package remote_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestCallCredentialReplacesTheRegistryHeader (docs/backend-auth.md): the
// user's credential replaces the tool's header of the same name, once;
// another header name is added beside the tool's headers.
func TestCallCredentialReplacesTheRegistryHeader(t *testing.T) {
	var got http.Header
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		_, _ = io.WriteString(w, `{}`)
	})
	tool := newTool(srv.URL)
	tool.Headers = map[string]string{"Authorization": "Bearer static", "X-Other": "o"}
	c := newClient(t, remote.Options{})
	out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Args: map[string]any{},
		Credential: &toolrouter.Credential{Header: "authorization", Value: toolrouter.NewSecret("Bearer alice")}})
	assertSuccess(t, out)
	if v := got.Values("Authorization"); len(v) != 1 || v[0] != "Bearer alice" || got.Get("X-Other") != "o" {
		t.Errorf("headers %v, want Authorization: Bearer alice (once) and X-Other", got)
	}
	out = c.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Args: map[string]any{},
		Credential: &toolrouter.Credential{Header: "X-Api-Key", Value: toolrouter.NewSecret("k1")}})
	assertSuccess(t, out)
	if got.Get("X-Api-Key") != "k1" || got.Get("Authorization") != "Bearer static" {
		t.Errorf("headers %v, want X-Api-Key beside the static Authorization", got)
	}
}
