// Package oauthconn is the oauth credential mode (docs/backend-auth.md
// "oauth"): each user connects a backend once, through a connect URL that
// sends their browser to the backend's authorization server
// (authorization code + PKCE S256); the callback stores the token pair in
// the vault for (client, user, backend); calls then carry the user's
// access token, refreshed (and the rotated refresh token stored) when it
// expires. Connections are listed and revoked (RFC 7009) per user.
package oauthconn

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vault"
)

// Vault kinds.
const (
	kindToken  = "oauth_token"
	kindClient = "oauth_client"
	kindState  = "oauth_state"
)

// Connector runs the flow; one per process, sharing the store's vault
// with the other replicas.
type Connector struct {
	Vault *vault.Vault
	// PublicURL is toolrouterd's URL as the user's browser reaches it
	// (TOOLROUTER_PUBLIC_URL): the connect URLs and the redirect URI
	// (PublicURL + /oauth/callback) are made from it.
	PublicURL string
	// HTTP sends the requests to the backends and authorization servers
	// (nil: a client with a 30s timeout).
	HTTP *http.Client
	// StateTTL bounds how long a connect URL works (0: 10 minutes).
	StateTTL time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	flight singleflight.Group
}

func (c *Connector) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

func (c *Connector) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// RedirectURI is the callback's URL.
func (c *Connector) RedirectURI() string {
	return strings.TrimSuffix(c.PublicURL, "/") + "/oauth/callback"
}

// Who is whom a connection belongs to: the registry client the calls
// come through and the user.
type Who struct{ Client, User string }

func (w Who) owner() string { return url.PathEscape(w.Client) + "/" + url.PathEscape(w.User) }

func (w Who) key(backend string) string { return w.owner() + "/" + url.PathEscape(backend) }

// stored is a connection as the vault keeps it.
type stored struct {
	Access   string    `json:"access_token"`
	Refresh  string    `json:"refresh_token,omitempty"`
	Expiry   time.Time `json:"expiry,omitzero"`
	Obtained time.Time `json:"obtained,omitzero"`
	Issuer   string    `json:"issuer"`
	TokenURL string    `json:"token_url"`
	Revoke   string    `json:"revocation_endpoint,omitempty"`
	ClientID string    `json:"client_id"`
	Secret   string    `json:"client_secret,omitempty"`
	Resource string    `json:"resource"`
	Scopes   []string  `json:"scopes,omitempty"`
	Backend  string    `json:"backend"`
}

// pending is a connect URL's state.
type pending struct {
	Who      Who       `json:"who"`
	Backend  string    `json:"backend"`
	AuthURL  string    `json:"auth_url"` // where /connect redirects
	Verifier string    `json:"verifier"`
	Conn     stored    `json:"conn"` // the connection's settings, no tokens yet
	Expires  time.Time `json:"expires"`
}

// Token is a user's access token for a backend.
type Token struct {
	Value toolrouter.Secret
	// ID names it in the audit trail (a hash; never the token).
	ID string
}

// NeedsConnect is the answer for a user with no usable connection: the
// connect URL to send them to.
type NeedsConnect struct {
	URL     string
	Backend string
	// ElicitationID names the connect request (MCP URL elicitation).
	ElicitationID string
}

// ConnectURL is the URL (credential.OAuth's connect error).
func (n *NeedsConnect) ConnectURL() string { return n.URL }

func (n *NeedsConnect) Error() string {
	return fmt.Sprintf("backend %s: not connected for this user yet (auth mode oauth): open the connect URL to sign in", n.Backend)
}

// Token returns who's access token for backend: the stored one while
// fresh, else refreshed; a *NeedsConnect error when who has no usable
// connection (none, revoked, or a refresh the server refused).
func (c *Connector) Token(ctx context.Context, who Who, backend string, auth *toolrouter.BackendAuth) (*Token, error) {
	key := who.key(backend)
	var s stored
	ok, err := c.Vault.Get(ctx, kindToken, key, &s)
	if err != nil {
		return nil, err
	}
	if ok && c.fresh(s) {
		return &Token{Value: toolrouter.NewSecret(s.Access), ID: hashID(s.Access)}, nil
	}
	if ok && s.Refresh != "" {
		// One refresh per connection at a time in this process (a rotated
		// refresh token works once).
		v, err, _ := c.flight.Do(key, func() (any, error) { return c.refresh(ctx, key, who, s) })
		if err == nil {
			return v.(*Token), nil
		}
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) {
			return nil, err
		}
		// Refused. Another replica may have used the refresh token first
		// and stored the rotated pair: then its access token is used.
		var now stored
		if ok, gerr := c.Vault.Get(ctx, kindToken, key, &now); gerr == nil && ok && now.Refresh != s.Refresh && c.fresh(now) {
			return &Token{Value: toolrouter.NewSecret(now.Access), ID: hashID(now.Access)}, nil
		}
		// Else revoked or expired (invalid_grant): connect again.
		if _, err := c.Vault.Delete(ctx, kindToken, key); err != nil {
			return nil, err
		}
	}
	return nil, c.begin(ctx, who, backend, auth)
}

// expiry is when tok expires by this connector's clock (expires_in), or
// as x/oauth2 computed it.
func (c *Connector) expiry(tok *oauth2.Token) time.Time {
	if tok.ExpiresIn > 0 {
		return c.now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	return tok.Expiry
}

// fresh reports an access token still used: until a tenth of its
// lifetime (at most 30 s) before it expires, so a call never carries a
// token that expires on the way.
func (c *Connector) fresh(s stored) bool {
	if s.Expiry.IsZero() {
		return true
	}
	margin := 30 * time.Second
	if life := s.Expiry.Sub(s.Obtained); !s.Obtained.IsZero() && life/10 < margin {
		margin = max(life/10, 0)
	}
	return c.now().Before(s.Expiry.Add(-margin))
}

// CallToken is Token for credential.OAuth.
func (c *Connector) CallToken(ctx context.Context, client, user, backend string, auth *toolrouter.BackendAuth) (toolrouter.Secret, string, error) {
	t, err := c.Token(ctx, Who{Client: client, User: user}, backend, auth)
	if err != nil {
		return toolrouter.Secret{}, "", err
	}
	return t.Value, t.ID, nil
}

func (c *Connector) config(s stored, redirect string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	if s.Secret != "" {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{ClientID: s.ClientID, ClientSecret: s.Secret, RedirectURL: redirect, Scopes: s.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: s.TokenURL, AuthStyle: style}}
}

func (c *Connector) httpContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.http())
}

// refresh uses the refresh token and stores the new pair (the rotated
// refresh token, or the old one when the server sent none).
func (c *Connector) refresh(ctx context.Context, key string, who Who, s stored) (*Token, error) {
	src := c.config(s, "").TokenSource(c.httpContext(ctx), &oauth2.Token{RefreshToken: s.Refresh})
	tok, err := src.Token()
	if err != nil {
		return nil, describe("refresh", s.TokenURL, err)
	}
	s.Access, s.Expiry, s.Obtained = tok.AccessToken, c.expiry(tok), c.now()
	if tok.RefreshToken != "" {
		s.Refresh = tok.RefreshToken
	}
	if err := c.Vault.Put(ctx, kindToken, key, who.owner(), s.Backend, s, time.Time{}); err != nil {
		return nil, err
	}
	return &Token{Value: toolrouter.NewSecret(s.Access), ID: hashID(s.Access)}, nil
}

// begin makes a connect URL for who and backend: discovery, the client
// (pre-registered or registered), a PKCE verifier and a single-use state
// bound to who, kept in the vault until it expires.
func (c *Connector) begin(ctx context.Context, who Who, backend string, auth *toolrouter.BackendAuth) error {
	if c.PublicURL == "" {
		return fmt.Errorf("backend %s: auth mode oauth needs TOOLROUTER_PUBLIC_URL (where users' browsers reach toolrouterd)", backend)
	}
	as, err := c.discover(ctx, auth)
	if err != nil {
		return fmt.Errorf("backend %s: %w", backend, err)
	}
	conn := stored{Issuer: as.Issuer, TokenURL: as.TokenURL, Revoke: as.RevokeURL, Resource: auth.Resource, Scopes: auth.Scopes, Backend: backend}
	if len(conn.Scopes) == 0 {
		conn.Scopes = as.ScopesDefault
	}
	conn.ClientID, conn.Secret = auth.ClientID, auth.ClientSecret.Reveal()
	if conn.ClientID == "" {
		if conn.ClientID, conn.Secret, err = c.register(ctx, as); err != nil {
			return fmt.Errorf("backend %s: %w", backend, err)
		}
	}
	state, err := randomString()
	if err != nil {
		return err
	}
	verifier := oauth2.GenerateVerifier()
	cfg := c.config(conn, c.RedirectURI())
	cfg.Endpoint.AuthURL = as.AuthURL
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if conn.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", conn.Resource)) // RFC 8707
	}
	ttl := c.StateTTL
	if ttl <= 0 {
		ttl = 10 * time.Minute
	}
	p := pending{Who: who, Backend: backend, AuthURL: cfg.AuthCodeURL(state, opts...), Verifier: verifier, Conn: conn, Expires: c.now().Add(ttl)}
	if err := c.Vault.Put(ctx, kindState, state, who.owner(), backend, p, p.Expires); err != nil {
		return err
	}
	return &NeedsConnect{URL: strings.TrimSuffix(c.PublicURL, "/") + "/connect/" + state, Backend: backend, ElicitationID: hashID(state)}
}

// register registers toolrouterd as a public client of the server (RFC
// 7591), once per server and redirect URI: the registration is kept in
// the vault, so every replica uses the same.
func (c *Connector) register(ctx context.Context, as *server) (id, secret string, err error) {
	key := as.Issuer + " " + c.RedirectURI()
	var reg struct{ ClientID, Secret string }
	if ok, err := c.Vault.Get(ctx, kindClient, key, &reg); err != nil {
		return "", "", err
	} else if ok {
		return reg.ClientID, reg.Secret, nil
	}
	if as.RegisterURL == "" {
		return "", "", fmt.Errorf("the authorization server %s offers no dynamic client registration (RFC 7591): set client_id_env", as.Issuer)
	}
	body, _ := json.Marshal(map[string]any{"client_name": "toolrouterd", "redirect_uris": []string{c.RedirectURI()},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, as.RegisterURL, bytes.NewReader(body))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http().Do(req)
	if err != nil {
		return "", "", fmt.Errorf("client registration at %s: unreachable", as.RegisterURL)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	var got struct {
		ClientID string `json:"client_id"`
		Secret   string `json:"client_secret"`
		Error    string `json:"error"`
	}
	_ = json.Unmarshal(b, &got)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK || got.ClientID == "" {
		return "", "", fmt.Errorf("client registration at %s refused (status %d, error %q)", as.RegisterURL, resp.StatusCode, got.Error)
	}
	reg.ClientID, reg.Secret = got.ClientID, got.Secret
	if err := c.Vault.Put(ctx, kindClient, key, "", as.Issuer, reg, time.Time{}); err != nil {
		return "", "", err
	}
	return reg.ClientID, reg.Secret, nil
}

// AuthURL is where the connect URL of state sends the browser; false when
// the state is unknown, used or expired.
func (c *Connector) AuthURL(ctx context.Context, state string) (string, bool, error) {
	var p pending
	ok, err := c.Vault.Get(ctx, kindState, state, &p)
	if err != nil || !ok {
		return "", false, err
	}
	return p.AuthURL, true, nil
}

// Complete is the callback: it takes the state (single use), exchanges
// the code with its verifier and stores the token pair for the state's
// user and backend, which it returns.
func (c *Connector) Complete(ctx context.Context, state, code string) (string, error) {
	var p pending
	ok, err := c.Vault.Take(ctx, kindState, state, &p)
	if err != nil {
		return "", err
	}
	if !ok || !c.now().Before(p.Expires) {
		return "", errors.New("this sign-in link is unknown, used or expired: call the tool again for a new one")
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(p.Verifier)}
	if p.Conn.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", p.Conn.Resource))
	}
	tok, err := c.config(p.Conn, c.RedirectURI()).Exchange(c.httpContext(ctx), code, opts...)
	if err != nil {
		return p.Backend, describe("code exchange", p.Conn.TokenURL, err)
	}
	s := p.Conn
	s.Access, s.Refresh, s.Expiry, s.Obtained = tok.AccessToken, tok.RefreshToken, c.expiry(tok), c.now()
	if err := c.Vault.Put(ctx, kindToken, p.Who.key(p.Backend), p.Who.owner(), p.Backend, s, time.Time{}); err != nil {
		return p.Backend, err
	}
	return p.Backend, nil
}

// Connection is one connected backend, as GET /connections lists it.
type Connection struct {
	Backend   string    `json:"backend"`
	Connected time.Time `json:"updated_at"`
}

// Connections lists who's connected backends.
func (c *Connector) Connections(ctx context.Context, who Who) ([]Connection, error) {
	es, err := c.Vault.List(ctx, kindToken, who.owner())
	if err != nil {
		return nil, err
	}
	out := make([]Connection, 0, len(es))
	for _, e := range es {
		out = append(out, Connection{Backend: e.Label, Connected: e.UpdatedAt})
	}
	return out, nil
}

// Disconnect deletes who's connection to backend and revokes its tokens
// at the authorization server where it offers revocation (RFC 7009); it
// reports whether there was one. A failed revocation is returned after
// the connection is deleted.
func (c *Connector) Disconnect(ctx context.Context, who Who, backend string) (bool, error) {
	var s stored
	ok, err := c.Vault.Take(ctx, kindToken, who.key(backend), &s)
	if err != nil || !ok {
		return false, err
	}
	if s.Revoke == "" {
		return true, nil
	}
	for _, t := range []struct{ token, hint string }{{s.Refresh, "refresh_token"}, {s.Access, "access_token"}} {
		if t.token == "" {
			continue
		}
		if err := c.revoke(ctx, s, t.token, t.hint); err != nil {
			return true, err
		}
	}
	return true, nil
}

func (c *Connector) revoke(ctx context.Context, s stored, token, hint string) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	if s.Secret == "" {
		form.Set("client_id", s.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Revoke, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if s.Secret != "" {
		req.SetBasicAuth(url.QueryEscape(s.ClientID), url.QueryEscape(s.Secret))
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("revocation at %s: unreachable", s.Revoke)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revocation at %s: status %d", s.Revoke, resp.StatusCode)
	}
	return nil
}

func randomString() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("oauth state: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// describe is an oauth2 error safe to show: the server's error code, never
// its body.
func describe(what, tokenURL string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		return &refused{what: what, code: re.ErrorCode, status: status, err: re}
	}
	return fmt.Errorf("%s at %s: the authorization server did not answer", what, tokenURL)
}

// refused is a token request the server refused; it unwraps to the
// *oauth2.RetrieveError (whose own text carries the body: never shown).
type refused struct {
	what, code string
	status     int
	err        *oauth2.RetrieveError
}

func (r *refused) Error() string {
	return fmt.Sprintf("%s refused by the authorization server (status %d, error %q)", r.what, r.status, r.code)
}
func (r *refused) Unwrap() error { return r.err }
