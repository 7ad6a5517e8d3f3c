package access_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

type regClients struct{ cs []toolrouter.ClientSpec }

func (r *regClients) Clients() []toolrouter.ClientSpec { return r.cs }

func TestAssertedUser(t *testing.T) {
	key := func(k string) []byte { s := sha256.Sum256([]byte(k)); return s[:] }
	reg := &regClients{[]toolrouter.ClientSpec{{Name: "portal", KeySHA256: key("k-portal"), MayAssertUser: true}, {Name: "batch", KeySHA256: key("k-batch")}}}
	a := access.NewAuthenticator(nil, func() *regClients { return reg }, nil)
	r := httptest.NewRequest("POST", "/route", nil)
	r.Header.Set("Authorization", "Bearer k-portal")
	r.Header.Set(access.UserHeader, "alice@example.com")
	c, u, err := a.Identify(context.Background(), r)
	if err != nil || c.Name != "portal" || u == nil || u.Subject != "alice@example.com" || !u.Token.IsZero() {
		t.Fatalf("portal: %v %+v %v", c, u, err)
	}
	r.Header.Set("Authorization", "Bearer k-batch")
	var f access.Forbidden
	if _, _, err := a.Identify(context.Background(), r); !errors.As(err, &f) {
		t.Fatalf("a client without may_assert_user naming a user: %v, want Forbidden", err)
	}
	r.Header.Del(access.UserHeader)
	if c, u, err := a.Identify(context.Background(), r); err != nil || c.Name != "batch" || u != nil {
		t.Fatalf("batch without the header: %v %+v %v", c, u, err)
	}
}
