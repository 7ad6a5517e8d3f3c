package access

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Denied is why credentials were refused; its text is safe to show to the
// caller (it never contains a key or a token).
type Denied string

func (d Denied) Error() string { return string(d) }

// ErrNoCredentials is the error of a request without an Authorization
// header on a service that requires one.
var ErrNoCredentials = Denied("header missing; send Authorization: Bearer KEY")

// Registry is the registry in force (*registry.Registry): the clients its
// file declares. A new value is a reload.
type Registry interface {
	Clients() []toolrouter.ClientSpec
}

// Authenticator resolves a request's credentials to a client of the
// registry in force.
type Authenticator struct {
	apiKeys  []string
	registry func() Registry
	jwt      *JWTVerifier // nil when JWT is off
	built    atomic.Pointer[built]
	// OnBuild, when set, is told of every new set of clients (a reload),
	// for logging its warnings.
	OnBuild func(*Clients)
}

type built struct {
	reg     Registry
	clients *Clients
}

// NewAuthenticator returns an authenticator for the keys of
// TOOLROUTER_API_KEYS and the clients of the registry in force; jwt is
// nil when JWT bearer tokens are off.
func NewAuthenticator[R Registry](apiKeys []string, reg func() R, jwt *JWTVerifier) *Authenticator {
	return &Authenticator{apiKeys: apiKeys, registry: func() Registry { return reg() }, jwt: jwt}
}

// JWT is the JWT verifier, nil when JWT is off.
func (a *Authenticator) JWT() *JWTVerifier { return a.jwt }

// Clients are the clients in force, rebuilt when the registry changed.
func (a *Authenticator) Clients() *Clients {
	reg := a.registry()
	if b := a.built.Load(); b != nil && b.reg == reg {
		return b.clients
	}
	cs := NewClients(a.apiKeys, reg.Clients())
	if old := a.built.Swap(&built{reg, cs}); a.OnBuild != nil && (old == nil || !sameClients(old.reg, reg)) {
		a.OnBuild(cs)
	}
	return cs
}

// sameClients reports whether two registries share their clients (the
// registry with MCP tools added is a new registry with the same clients).
func sameClients(a, b Registry) bool {
	ca, cb := a.Clients(), b.Clients()
	if len(ca) != len(cb) {
		return false
	}
	for i := range ca {
		if ca[i].Name != cb[i].Name || string(ca[i].KeySHA256) != string(cb[i].KeySHA256) {
			return false
		}
	}
	return true
}

// Open reports whether the service takes requests without credentials:
// no API keys, no clients and no JWT.
func (a *Authenticator) Open() bool {
	return a.jwt == nil && a.Clients().Open()
}

// Authenticate resolves the request's "Authorization: Bearer …" (the
// scheme is case-insensitive, RFC 9110 §11.1) to a client: a key is
// looked up by its SHA-256, a JWT is verified and its subject looked up.
// An open service answers (nil, nil). A refusal is a Denied error; a key
// set that cannot be fetched is an ordinary one.
func (a *Authenticator) Authenticate(ctx context.Context, r *http.Request) (*Client, error) {
	c, _, err := a.Identify(ctx, r)
	return c, err
}

// Identify is Authenticate, and the user the request is made for: a JWT
// client's subject (sub) with its token, or the X-Toolrouter-User of a
// client that may assert users (docs/backend-auth.md); nil when none. A
// client that may not name a user, yet does, is refused (Forbidden).
func (a *Authenticator) Identify(ctx context.Context, r *http.Request) (*Client, *User, error) {
	cs := a.Clients()
	if a.jwt == nil && cs.Open() {
		return nil, nil, nil
	}
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if h == "" {
		return nil, nil, ErrNoCredentials
	}
	scheme, token, _ := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, nil, Denied("must be Bearer followed by a key or token")
	}
	if c := cs.ByKey(token); c != nil {
		u, err := assertedUser(c, r)
		return c, u, err
	}
	if a.jwt == nil || strings.Count(token, ".") != 2 {
		return nil, nil, Denied("the bearer key matches no client")
	}
	claims, err := a.jwt.Verify(ctx, token)
	if err != nil {
		return nil, nil, err
	}
	c := cs.BySubject(claims.Subject)
	if c == nil {
		return nil, nil, Denied("the token's subject matches no client")
	}
	if r.Header.Get(UserHeader) != "" {
		return nil, nil, Forbidden(UserHeader + ": a JWT client's user is its token's sub; the header is for key clients with clients[].may_assert_user")
	}
	// The user is the token's own sub; a token without one names no user
	// (the claim that picked the client is the app, not the person: two
	// people's tokens would share a user, and their backend tokens).
	if claims.User == "" {
		return c, nil, nil
	}
	return c, &User{Subject: claims.User, Token: toolrouter.NewSecret(token)}, nil
}

// IsDenied reports whether err is a refusal of credentials (401) rather
// than a failure to check them.
func IsDenied(err error) bool {
	var d Denied
	return errors.As(err, &d)
}
