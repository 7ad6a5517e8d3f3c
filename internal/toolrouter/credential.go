package toolrouter

import "strings"

// CategoryAuth is the category of a call whose backend credential could
// not be had (docs/backend-auth.md): the client has no per_client secret
// for the backend, the caller is no user a token can be exchanged for, or
// the authorization server refused or could not be reached.
const CategoryAuth ErrorCategory = "auth"

// The credential modes of a backend's auth block (docs/backend-auth.md).
const (
	AuthStatic        = "static"
	AuthPerClient     = "per_client"
	AuthTokenExchange = "token_exchange"
	// AuthIDJAG is Enterprise-Managed Authorization: the caller's identity
	// assertion exchanged at the IdP for an ID-JAG, redeemed at the
	// backend's authorization server (RFC 7523 jwt-bearer).
	AuthIDJAG = "id_jag"
	AuthOAuth = "oauth"
)

// Secret is a credential's value: it prints as "[redacted]" under every
// fmt verb and in JSON, so a secret put in a log line, an error or a
// result by mistake shows nothing. Reveal gives the value.
type Secret struct{ v string }

// NewSecret wraps v.
func NewSecret(v string) Secret { return Secret{v} }

// Reveal is the secret's value, for the one place that sends it.
func (s Secret) Reveal() string { return s.v }

// IsZero reports an empty secret.
func (s Secret) IsZero() bool { return s.v == "" }

// String hides the value.
func (s Secret) String() string { return "[redacted]" }

// GoString hides the value from %#v.
func (s Secret) GoString() string { return "[redacted]" }

// MarshalJSON hides the value.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }

// BackendAuth is a tool's or an MCP server's auth block: how toolrouterd
// authenticates to that backend for the user a call is made for. The
// zero value (or Mode static) is the registry's headers, unchanged.
type BackendAuth struct {
	Mode string
	// Header is the request header the credential goes in ("" is
	// Authorization, its value "Bearer " and the token).
	Header string
	// token_exchange (RFC 8693): the authorization server's token
	// endpoint, toolrouterd's client credentials there (from the
	// environment, sent with client_secret_basic), and what it asks for.
	TokenURL     string
	ClientID     string
	ClientSecret Secret
	Audience     string
	Resource     string // RFC 8707; "" sends none
	Scopes       []string
	// Actor asks for an actor_token (toolrouterd's own, by the client
	// credentials grant) to be sent, so the issued token carries act.
	Actor bool
	// SubjectTokenType is the type of the caller's JWT as the subject
	// token: "access_token" (default) or "jwt".
	SubjectTokenType string
	// id_jag: the backend's authorization server (Audience is its issuer)
	// where the ID-JAG is redeemed, and toolrouterd's client credentials
	// there (client_secret_basic).
	BackendTokenURL     string
	BackendClientID     string
	BackendClientSecret Secret

	// oauth (authorization code + PKCE per user, internal/oauthconn):
	// Resource is the backend's URL unless the block names it;
	// ResourceMetadata and AuthorizationServer skip steps of discovery
	// (RFC 9728, RFC 8414); ClientID and ClientSecret name a
	// pre-registered client ("" registers one, RFC 7591).
	ResourceMetadata    string
	AuthorizationServer string
}

// IsStatic reports the default mode: the registry's headers only.
func (a *BackendAuth) IsStatic() bool { return a == nil || a.Mode == "" || a.Mode == AuthStatic }

// HeaderName is the header a credential is sent in.
func (a *BackendAuth) HeaderName() string {
	if a == nil || a.Header == "" {
		return "Authorization"
	}
	return a.Header
}

// ScopeKey is the scopes as one string, for keys.
func (a *BackendAuth) ScopeKey() string { return strings.Join(a.Scopes, " ") }

// Credential is the header a backend request carries for the user a call
// is made for, set by the credentials decorator just above the backend
// (remote, mcpclient); it overrides a registry header of the same name.
type Credential struct {
	Header string
	Value  Secret
	Use    CredentialUse
}

// CredentialUse describes the credential a call was made with, for the
// audit trail: never the token itself.
type CredentialUse struct {
	// Mode is the backend's credential mode.
	Mode string `json:"mode"`
	// Subject is the user the call was made for (sub); "" when none.
	Subject string `json:"sub,omitempty"`
	// Actor is who acted for the user: toolrouterd's client id at the
	// authorization server (token_exchange), or the registry client
	// (per_client).
	Actor string `json:"act,omitempty"`
	// TokenID is the token's jti, or "sha256:" and the first 16 hex
	// digits of its SHA-256 when it has none.
	TokenID string `json:"token_id,omitempty"`
}
