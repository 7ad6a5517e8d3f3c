package access

import (
	"context"
	"net/http"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// UserHeader names the user a key client calls for, when the client may
// assert users (clients[].may_assert_user; docs/backend-auth.md).
const UserHeader = "X-Toolrouter-User"

// User is who a call is made for: a JWT client's subject (sub), or the
// user a key client asserted. It travels with the client in the request
// context: identity, which backend credentials are chosen by.
type User struct {
	Subject string
	// Token is the caller's validated bearer JWT (the subject_token of a
	// token exchange); zero for an asserted user.
	Token toolrouter.Secret
	// Later reports the user of a call run after its request ended (an
	// approved call, a resumed run): Token is then the caller's JWT kept
	// in the token vault, zero when it was not kept or expired.
	Later bool
}

type userKey struct{}

// NewUserContext returns ctx carrying u.
func NewUserContext(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFromContext is the user ctx carries; nil when none.
func UserFromContext(ctx context.Context) *User {
	u, _ := ctx.Value(userKey{}).(*User)
	return u
}

// Credential is the client's own secret for a backend whose auth mode is
// per_client (clients[].credentials).
func (c *Client) Credential(backend string) (toolrouter.Secret, bool) {
	if c == nil {
		return toolrouter.Secret{}, false
	}
	s, ok := c.credentials[backend]
	return s, ok
}

// maxUser bounds an asserted user name.
const maxUser = 256

// assertedUser is the user of the request's X-Toolrouter-User header: nil
// without one; a refusal when the client may not assert users or the
// name is not 1-256 visible characters.
func assertedUser(c *Client, r *http.Request) (*User, error) {
	vs := r.Header.Values(UserHeader)
	if len(vs) == 0 {
		return nil, nil
	}
	if c == nil || !c.MayAssertUser {
		return nil, Forbidden(UserHeader + ": this client may not name a user (clients[].may_assert_user is not true)")
	}
	name := strings.TrimSpace(vs[0])
	if len(vs) != 1 || name == "" || len(name) > maxUser || !visible(name) {
		return nil, Forbidden(UserHeader + ": must be one header of 1-256 visible characters")
	}
	return &User{Subject: name}, nil
}

func visible(s string) bool {
	for _, r := range s {
		if r < 0x21 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// Forbidden is a refusal of a request whose credentials are good but
// that asks for what the client may not do (403); its text is safe to
// show.
type Forbidden string

func (f Forbidden) Error() string { return string(f) }
