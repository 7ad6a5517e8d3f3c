package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
)

// authenticate resolves the request's credentials to a client (docs/security.md
// "Clients") and puts it in the request context, where every lookup of a
// tool finds it; nil auth means an open service. Missing or refused
// credentials are 401 problem+json; with JWT on (issuer set) the
// challenge points at the RFC 9728 metadata, as the MCP authorization
// spec asks (api/openapi.yaml, response Unauthorized).
func authenticate(auth Authenticator, issuer string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if auth == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, user, err := identify(auth, r)
			var forbidden access.Forbidden
			if errors.As(err, &forbidden) {
				writeProblem(w, r, http.StatusForbidden, "Authorization", forbidden.Error())
				return
			}
			if err != nil {
				if !access.IsDenied(err) { // the issuer's keys cannot be fetched
					zerolog.Ctx(r.Context()).Error().Err(err).Msg("cannot verify bearer token")
					w.Header().Set("Retry-After", "5")
					writeProblem(w, r, http.StatusServiceUnavailable, "Authorization", "Authorization: the token cannot be verified now (the issuer's keys are unreachable); retry later")
					return
				}
				challenge := `Bearer realm="toolrouterd"`
				if issuer != "" {
					challenge = fmt.Sprintf("Bearer resource_metadata=%q", resourceURL(r, wellKnownPath(r.URL.Path)))
				}
				if !errors.Is(err, access.ErrNoCredentials) {
					challenge += `, error="invalid_token"` // RFC 6750 §3.1
				}
				w.Header().Set("WWW-Authenticate", challenge)
				writeProblem(w, r, http.StatusUnauthorized, "Authorization", "Authorization: "+err.Error())
				return
			}
			ctx := r.Context()
			if user != nil {
				// Who the calls are made for (docs/backend-auth.md).
				ctx = access.NewUserContext(ctx, user)
			}
			if c != nil {
				ctx = access.NewContext(ctx, c)
				l := zerolog.Ctx(ctx).With().Str("client", c.Name).Logger()
				ctx = l.WithContext(ctx)
				if st := stateOf(r); st != nil {
					st.log = &l // for the access log too
				}
			}
			if ctx != r.Context() {
				r = r.WithContext(ctx)
			}
			next.ServeHTTP(w, r) // an open service's request as it came: no copy of it
		})
	}
}

// identifier is an Authenticator that also says who the request is made
// for (access.Authenticator).
type identifier interface {
	Identify(ctx context.Context, r *http.Request) (*access.Client, *access.User, error)
}

// identify is the request's client and user.
func identify(auth Authenticator, r *http.Request) (*access.Client, *access.User, error) {
	if id, ok := auth.(identifier); ok {
		return id.Identify(r.Context(), r)
	}
	c, err := auth.Authenticate(r.Context(), r)
	return c, nil, err
}

// wellKnownPath is the RFC 9728 metadata path of the resource at path:
// /mcp has its own, everything else the service's.
func wellKnownPath(path string) string {
	if path == "/mcp" || strings.HasPrefix(path, "/mcp/") {
		return "/.well-known/oauth-protected-resource/mcp"
	}
	return "/.well-known/oauth-protected-resource"
}

// resourceURL is the absolute URL of path on this service as the caller
// reached it (the gateway's X-Forwarded-Proto names the scheme).
func resourceURL(r *http.Request, path string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host + path
}
