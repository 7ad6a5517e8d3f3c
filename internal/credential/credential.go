// Package credential calls each backend as the user a call is made for
// (docs/backend-auth.md): the exec decorator between the circuit breaker
// and the backend (remote, mcpclient) that finds the credential a
// backend's auth mode asks for and hands it to the backend as one
// request header. Nothing above it sees a token.
//
// Modes: static (the registry's headers; the decorator passes the call
// on), per_client (the calling client's own secret,
// clients[].credentials), token_exchange (RFC 8693: the caller's JWT
// exchanged at the authorization server for a token whose audience is
// the backend, cached per user, backend and scopes) and id_jag
// (Enterprise-Managed Authorization: an ID-JAG from the IdP redeemed at
// the backend's authorization server, cached the same way).
package credential

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Executor runs one call on a tool's backend.
type Executor interface {
	Call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome
}

// Servers is the registry in force, as far as the decorator needs it:
// the MCP servers whose auth blocks the tools of a server follow.
type Servers interface {
	ServerAuth(name string) *toolrouter.BackendAuth
}

// Decorator is the credentials exec decorator; Wrap puts it around a
// backend.
type Decorator struct {
	// Registry is the registry in force.
	Registry func() Servers
	// Exchanger exchanges tokens (token_exchange).
	Exchanger *Exchanger
	// OAuth holds the users' connections (oauth); nil: mode oauth fails.
	OAuth OAuth
}

// OAuth gives the access token a user connected for a backend (mode
// oauth, internal/oauthconn): its value and id, or an error; one with a
// ConnectURL method when the user must connect first.
type OAuth interface {
	CallToken(ctx context.Context, client, user, backend string, auth *toolrouter.BackendAuth) (toolrouter.Secret, string, error)
}

// Wrap returns next behind the decorator.
func (d *Decorator) Wrap(next Executor) Executor { return decorated{d, next} }

type decorated struct {
	d    *Decorator
	next Executor
}

// backendOf is the tool's backend name (its MCP server's, or its own)
// and that backend's auth block.
func (d *Decorator) backendOf(t *toolrouter.Tool) (string, *toolrouter.BackendAuth) {
	if t.MCPServer == "" {
		return t.Name, t.Auth
	}
	if d.Registry != nil {
		return t.MCPServer, d.Registry().ServerAuth(t.MCPServer)
	}
	return t.MCPServer, nil
}

func (x decorated) Call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	if req.Tool == nil {
		return x.next.Call(ctx, req)
	}
	backend, auth := x.d.backendOf(req.Tool)
	if auth.IsStatic() {
		return x.next.Call(ctx, req)
	}
	// The call's span says the mode; never a token.
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("toolrouter.credential.mode", auth.Mode))
	cred, fail := x.d.credential(ctx, req.Tool, backend, auth)
	if fail != nil {
		fail.Credential = &toolrouter.CredentialUse{Mode: auth.Mode, Subject: subjectOf(access.UserFromContext(ctx))}
		return *fail
	}
	req.Credential = cred
	secrets := []string{cred.Value.Reveal(), strings.TrimPrefix(cred.Value.Reveal(), "Bearer ")}
	scrubReports(&req, secrets)
	out := scrub(x.next.Call(ctx, req), secrets...)
	use := cred.Use
	out.Credential = &use
	return out
}

// redacted replaces a credential a backend echoed.
const redacted = "[redacted]"

// scrub replaces every occurrence of the secrets in what the backend
// answered (its error message, its output): a backend that echoes the
// token it got ("invalid token eyJ…") must not hand it to the caller, the
// audit trail or the logs. Tokens are JSON-safe (base64url, dots), so the
// outputs stay valid JSON.
func scrub(out toolrouter.Outcome, secrets ...string) toolrouter.Outcome {
	for _, s := range secrets {
		if len(s) < 8 {
			continue
		}
		out.Err = strings.ReplaceAll(out.Err, s, redacted)
		for _, b := range []*json.RawMessage{&out.Output, &out.MCPResult, &out.FullOutput} {
			if *b != nil && bytes.Contains(*b, []byte(s)) {
				*b = bytes.ReplaceAll(*b, []byte(s), []byte(redacted))
			}
		}
	}
	return out
}

// scrubReports replaces the secrets in what the backend reports while the
// call runs (progress messages, MCP log messages), as scrub does in its
// answer.
func scrubReports(req *toolrouter.ExecRequest, secrets []string) {
	text := func(v string) string {
		for _, s := range secrets {
			if len(s) >= 8 {
				v = strings.ReplaceAll(v, s, redacted)
			}
		}
		return v
	}
	data := func(raw json.RawMessage) json.RawMessage { return json.RawMessage(text(string(raw))) }
	req.Progress, req.Relay = toolrouter.FilterReports(req.Progress, req.Relay, text, data)
}

// credential is the header for this call of backend, or the failure that
// stops the call before anything is sent.
func (d *Decorator) credential(ctx context.Context, t *toolrouter.Tool, backend string, auth *toolrouter.BackendAuth) (*toolrouter.Credential, *toolrouter.Outcome) {
	user := access.UserFromContext(ctx)
	switch auth.Mode {
	case toolrouter.AuthPerClient:
		c := access.FromContext(ctx)
		secret, ok := c.Credential(backend)
		if !ok {
			name := c.LabelName()
			if name == "" {
				name = "the caller of an open service"
			} else {
				name = "client " + name
			}
			out := toolrouter.Failure(toolrouter.CategoryAuth, "backend %s: %s has no credential for it (auth mode per_client: clients[].credentials.%s)", backend, name, backend)
			return nil, &out
		}
		return &toolrouter.Credential{Header: auth.HeaderName(), Value: headerValue(auth, secret.Reveal()),
			Use: toolrouter.CredentialUse{Mode: auth.Mode, Subject: subjectOf(user), Actor: c.LabelName(), TokenID: hashID(secret.Reveal())}}, nil
	case toolrouter.AuthTokenExchange, toolrouter.AuthIDJAG:
		if user != nil && user.Later && user.Token.IsZero() {
			out := toolrouter.Failure(toolrouter.CategoryAuth, "backend %s: auth mode %s needs the caller's JWT, and user %s's token expired (or was not kept: TOOLROUTER_TOKEN_KEYS) before this call ran after its request; call again", backend, auth.Mode, user.Subject)
			return nil, &out
		}
		if user == nil || user.Token.IsZero() {
			out := toolrouter.Failure(toolrouter.CategoryAuth, "backend %s: auth mode %s needs the caller's JWT (a JWT client), and this call has none", backend, auth.Mode)
			return nil, &out
		}
		if d.Exchanger == nil {
			out := toolrouter.Failure(toolrouter.CategoryAuth, "backend %s: token exchange is not configured", backend)
			return nil, &out
		}
		timeout := t.Timeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		xctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		tok, err := d.Exchanger.Token(xctx, user, backend, auth)
		if err != nil {
			out := toolrouter.Failure(toolrouter.CategoryAuth, "backend %s: %s", backend, err.Error())
			return nil, &out
		}
		actor := auth.ClientID
		if auth.Mode == toolrouter.AuthIDJAG {
			actor = auth.BackendClientID // the ID-JAG's client_id: who acts at the backend
		}
		return &toolrouter.Credential{Header: auth.HeaderName(), Value: headerValue(auth, tok.value.Reveal()),
			Use: toolrouter.CredentialUse{Mode: auth.Mode, Subject: user.Subject, Actor: actor, TokenID: tok.id}}, nil
	case toolrouter.AuthOAuth:
		return d.oauth(ctx, user, backend, auth)
	}
	out := toolrouter.Failure(toolrouter.CategoryAuth, "backend %s: unknown auth mode %q", backend, auth.Mode)
	return nil, &out
}

// oauth is the user's own token for the backend (mode oauth), or the
// failure that carries the connect URL when they have none yet.
func (d *Decorator) oauth(ctx context.Context, user *access.User, backend string, auth *toolrouter.BackendAuth) (*toolrouter.Credential, *toolrouter.Outcome) {
	if user == nil || user.Subject == "" {
		out := toolrouter.Failure(toolrouter.CategoryAuth, "backend %s: auth mode oauth needs the user the call is made for (a JWT client, or X-Toolrouter-User from a client with may_assert_user)", backend)
		return nil, &out
	}
	if d.OAuth == nil {
		out := toolrouter.Failure(toolrouter.CategoryAuth, "backend %s: auth mode oauth needs TOOLROUTER_TOKEN_KEYS (the token vault)", backend)
		return nil, &out
	}
	client := access.FromContext(ctx).LabelName()
	tok, id, err := d.OAuth.CallToken(ctx, client, user.Subject, backend, auth)
	if err != nil {
		out := toolrouter.Failure(toolrouter.CategoryAuth, "%s", err.Error())
		var connect interface{ ConnectURL() string }
		if errors.As(err, &connect) {
			out.ConnectURL = connect.ConnectURL()
		} else {
			out.Err = "backend " + backend + ": " + out.Err
		}
		return nil, &out
	}
	return &toolrouter.Credential{Header: auth.HeaderName(), Value: headerValue(auth, tok.Reveal()),
		Use: toolrouter.CredentialUse{Mode: auth.Mode, Subject: user.Subject, Actor: client, TokenID: id}}, nil
}

func subjectOf(u *access.User) string {
	if u == nil {
		return ""
	}
	return u.Subject
}

// headerValue is the header's value: "Bearer TOKEN" in Authorization, the
// bare token in another header.
func headerValue(auth *toolrouter.BackendAuth, token string) toolrouter.Secret {
	if auth.HeaderName() == "Authorization" {
		return toolrouter.NewSecret("Bearer " + token)
	}
	return toolrouter.NewSecret(token)
}

// tokenID is a token's jti when it is a JWT that has one, else hashID;
// exp is its exp claim (zero when none). The token's signature is not
// checked: the id only names the token in the audit trail, and exp only
// makes it be exchanged again sooner.
func tokenID(token string) (id string, exp time.Time) {
	if tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.EdDSA}); err == nil {
		var c jwt.Claims
		if tok.UnsafeClaimsWithoutVerification(&c) == nil {
			if c.Expiry != nil {
				exp = c.Expiry.Time()
			}
			if c.ID != "" && len(c.ID) <= 128 {
				return c.ID, exp
			}
		}
	}
	return hashID(token), exp
}

// hashID names a secret by the first 16 hex digits of its SHA-256.
func hashID(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// ForServer is the credential of a request to MCP server name that is not
// a tool call (a resources/read of a UI resource or a skill file, a
// directory read) made for the caller in ctx: the one a call of the
// server's tools would carry (Call), so such a read is made as the user
// too, never with another user's credential; nil for a static server.
// When there is none to be had the error says why, and has a ConnectURL
// method when the user must connect the backend first (mode oauth).
func (d *Decorator) ForServer(ctx context.Context, name string) (*toolrouter.Credential, error) {
	var auth *toolrouter.BackendAuth
	if d.Registry != nil {
		auth = d.Registry().ServerAuth(name)
	}
	if auth.IsStatic() {
		return nil, nil
	}
	cred, fail := d.credential(ctx, &toolrouter.Tool{Name: name, MCPServer: name}, name, auth)
	if fail != nil {
		return nil, &Refused{Message: fail.Err, URL: fail.ConnectURL}
	}
	return cred, nil
}

// Refused is why a request has no credential (ForServer).
type Refused struct {
	Message string
	URL     string // where the user connects the backend (mode oauth), or ""
}

func (r *Refused) Error() string { return r.Message }

// ConnectURL is where the user connects the backend; "" when connecting
// is not what is missing.
func (r *Refused) ConnectURL() string { return r.URL }
