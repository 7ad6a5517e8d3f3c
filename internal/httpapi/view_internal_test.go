package httpapi

import (
	"net/http/httptest"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// TestCallViewOfAVanishedServer: checkView let a request naming ?server=v
// in; a reload that removed v before the call looks its view up again must
// leave the call the empty view (nothing callable), not nil (the whole
// registry within the client's scope, without v's fixed arguments).
func TestCallViewOfAVanishedServer(t *testing.T) {
	views := func() *vserver.Set { return vserver.Build(registry.Empty()) }
	r := httptest.NewRequest("POST", "/route?server=gone", nil)
	if v := callView(views, r); v != vserver.Empty() {
		t.Fatalf("view of a removed server: %v, want the empty view", v)
	}
	if v := callView(views, httptest.NewRequest("POST", "/route", nil)); v != nil {
		t.Fatalf("no server named: %v, want nil (the registry as it is)", v)
	}
}
