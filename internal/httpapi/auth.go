package httpapi

import (
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
			c, err := auth.Authenticate(r.Context(), r)
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
			if c != nil {
				ctx = access.NewContext(ctx, c)
				l := zerolog.Ctx(ctx).With().Str("client", c.Name).Logger()
				ctx = l.WithContext(ctx)
				if st := stateOf(r); st != nil {
					st.log = &l // for the access log too
				}
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
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
