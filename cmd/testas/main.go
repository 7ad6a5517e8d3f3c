// Command testas is an OAuth 2.0 authorization server for toolrouterd's
// tests of backend credentials (docs/backend-auth.md), built on
// zitadel/oidc's OpenID Provider (github.com/zitadel/oidc/v3/pkg/op, a
// maintained, certified implementation) with its example in-memory
// storage, of which it changes only the clients and the tokens:
//
//   - users are confidential clients of the client credentials grant
//     (-users alice:pw,bob:pw), each given a JWT access token whose sub
//     is the user and whose aud is -user-audience (toolrouterd's
//     TOOLROUTER_JWT_AUDIENCE), valid for -user-lifetime;
//   - toolrouterd is the confidential client -client id:secret
//     (client_secret_basic) that performs RFC 8693 token exchange (the
//     op package's own implementation: it verifies the subject and actor
//     tokens against its keys); an exchanged token is a JWT for the
//     requested audience, valid for -exchange-lifetime, with act {sub:
//     toolrouterd's id} when an actor_token was sent; an audience not in
//     -audiences is refused with invalid_target;
//   - as the IdP of Enterprise-Managed Authorization (-jag-audiences
//     issuer=client_id,…) it issues ID-JAGs by token exchange, and as a
//     backend's authorization server (-trust-idp ISSUER) it redeems the
//     IdP's ID-JAGs with the jwt-bearer grant (idjag.go);
//   - JWTs are signed with RS256; the key set is at /keys, the token
//     endpoint at /oauth/token (see /.well-known/openid-configuration);
//   - with -oauth-client id:secret and -redirect-uri, that client signs
//     users in with the authorization code grant and PKCE S256 (auth
//     mode oauth): the op package's /authorize sends the browser to this
//     server's login and consent page (/login/username, a form with the
//     user's name and secret from -users and an Allow button), then back
//     with a code; with the offline_access scope the token endpoint
//     issues refresh tokens, rotated on each use, and /revoke revokes
//     them (RFC 7009). Its access tokens are JWTs for the audience of the
//     client id, valid for -access-lifetime.
//
// It listens on -addr (default a free loopback port) and prints
// "testas listening on http://HOST:PORT" when it serves. Test use only:
// it allows plain HTTP.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "testas:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	users := flag.String("users", "alice:alice-pw,bob:bob-pw", "user:secret,… (client credentials grant)")
	client := flag.String("client", "toolrouterd:toolrouterd-secret", "id:secret of the token exchange client")
	userAud := flag.String("user-audience", "toolrouterd", "aud of the users' tokens")
	audiences := flag.String("audiences", "", "comma-separated audiences a token may be exchanged for")
	userLife := flag.Duration("user-lifetime", time.Hour, "lifetime of the users' tokens")
	xLife := flag.Duration("exchange-lifetime", 5*time.Minute, "lifetime of exchanged tokens")
	short := flag.String("short-audience", "", "an audience whose exchanged tokens live -short-lifetime")
	shortLife := flag.Duration("short-lifetime", 2*time.Second, "lifetime of exchanged tokens for -short-audience")
	userClaims := flag.String("user-claims", "", "name=value,… added to the users' tokens (e.g. the claim that picks their toolrouterd client)")
	jagAudiences := flag.String("jag-audiences", "", "as the IdP: issuer=client_id,… of the authorization servers ID-JAGs are issued for, with toolrouterd's client id there")
	jagLife := flag.Duration("jag-lifetime", 5*time.Minute, "lifetime of the ID-JAGs issued")
	trustIDP := flag.String("trust-idp", "", "as a backend's authorization server: the issuer of the IdP whose ID-JAGs are redeemed (jwt-bearer grant)")
	resources := flag.String("resources", "", "comma-separated resources a redeemed ID-JAG may name (empty: any)")
	grantLife := flag.Duration("grant-lifetime", 5*time.Minute, "lifetime of the access tokens issued for ID-JAGs")
	oauthClient := flag.String("oauth-client", "", "id:secret of an authorization code client (auth mode oauth)")
	redirectURI := flag.String("redirect-uri", "", "the -oauth-client's redirect URI")
	accessLife := flag.Duration("access-lifetime", 5*time.Minute, "lifetime of the -oauth-client's access tokens")
	flag.Parse()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	issuer := "http://" + ln.Addr().String()
	people := people{}
	codeClients := map[string]*storage.Client{}
	var codeClient string
	if *oauthClient != "" {
		id, secret, ok := strings.Cut(*oauthClient, ":")
		if !ok || *redirectURI == "" {
			return errors.New("-oauth-client: want id:secret, and -redirect-uri")
		}
		codeClients[id], codeClient = storage.WebClient(id, secret, *redirectURI), id
	}
	st := &store{Storage: storage.NewStorageWithClients(people, codeClients), clients: map[string]*confidential{}, codeClient: codeClient, accessLife: *accessLife,
		userAud: *userAud, userLife: *userLife, xLife: *xLife, short: *short, shortLife: *shortLife, userClaims: map[string]any{}}
	for _, kv := range strings.Split(*userClaims, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			st.userClaims[k] = v
		}
	}
	st.audiences = list(*audiences)
	for _, u := range strings.Split(*users, ",") {
		id, secret, ok := strings.Cut(u, ":")
		if !ok {
			return fmt.Errorf("-users: %q is not user:secret", u)
		}
		st.clients[id] = &confidential{id: id, secret: secret, user: true}
		people[id] = &storage.User{ID: id, Username: id, Password: secret, EmailVerified: true}
	}
	id, secret, ok := strings.Cut(*client, ":")
	if !ok {
		return errors.New("-client: not id:secret")
	}
	st.clients[id] = &confidential{id: id, secret: secret}

	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return err
	}
	provider, err := op.NewProvider(&op.Config{CryptoKey: key, GrantTypeRefreshToken: true, CodeMethodS256: true}, st, op.StaticIssuer(issuer),
		op.WithAllowInsecure(), op.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		return err
	}
	j := &jag{provider: provider, st: st, audiences: map[string]string{}, life: *jagLife, trusted: *trustIDP, resources: list(*resources), grantLife: *grantLife}
	for _, kv := range list(*jagAudiences) {
		iss, cid, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("-jag-audiences: %q is not issuer=client_id", kv)
		}
		j.audiences[iss] = cid
	}
	if j.trusted != "" {
		j.keys = rp.NewRemoteKeySet(&http.Client{Timeout: 10 * time.Second}, strings.TrimSuffix(j.trusted, "/")+"/keys")
	}
	st.grantLife = j.grantLife
	mux := http.NewServeMux()
	mux.Handle("/", j.handler(provider))
	lp := &loginPage{check: st.CheckUsernamePassword, callback: op.AuthCallbackURL(provider)}
	interceptor := op.NewIssuerInterceptor(provider.IssuerFromRequest)
	mux.HandleFunc("GET /login/username", lp.show)
	mux.HandleFunc("POST /login/username", interceptor.HandlerFunc(lp.submit))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Printf("testas listening on %s\n", issuer)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// store is the example storage with this server's clients and tokens.
type store struct {
	*storage.Storage
	clients   map[string]*confidential
	audiences []string
	userAud   string
	userLife  time.Duration
	xLife     time.Duration
	short     string
	shortLife time.Duration
	// userClaims are added to the users' tokens.
	userClaims map[string]any
	// grantLife is the lifetime of the access tokens issued for ID-JAGs.
	grantLife time.Duration
	// codeClient is the -oauth-client, whose access tokens are JWTs valid
	// for accessLife.
	codeClient string
	accessLife time.Duration
}

// CreateAccessAndRefreshTokens: the code client's access tokens live
// accessLife (the JWT's exp is this expiration).
func (s *store) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	id, refresh, exp, err := s.Storage.CreateAccessAndRefreshTokens(ctx, req, current)
	if err == nil && s.codeClient != "" && s.accessLife > 0 {
		exp = time.Now().Add(s.accessLife)
	}
	return id, refresh, exp, err
}

// list is the comma-separated items of s, trimmed, without empty ones.
func list(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// GetPrivateClaimsFromScopes adds userClaims to a user's token.
func (s *store) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	if c := s.clients[clientID]; c != nil && c.user {
		return s.userClaims, nil
	}
	return s.Storage.GetPrivateClaimsFromScopes(ctx, userID, clientID, scopes)
}

func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	if c := s.clients[id]; c != nil {
		return c, nil
	}
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err == nil && id == s.codeClient {
		return jwtClient{c}, nil
	}
	return c, err
}

// jwtClient is the code client with JWT access tokens, which a backend
// checks against the key set.
type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

// people are the users who sign in on the login page: the -users.
type people map[string]*storage.User

func (p people) GetUserByID(id string) *storage.User { return p[id] }
func (p people) GetUserByUsername(name string) *storage.User {
	return p[name]
}
func (p people) ExampleClientID() string { return "" }

// loginPage is the login and consent page of the code flow: the user's
// name and secret, and an Allow button.
type loginPage struct {
	check    func(username, password, id string) error
	callback func(context.Context, string) string
}

var loginHTML = template.Must(template.New("login").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>testas: sign in</title><link rel="icon" href="data:,"></head>
<body><h1>Sign in to testas</h1>
<p id="ask">toolrouterd asks to act for you.</p>{{if .Error}}<p id="error">{{.Error}}</p>{{end}}
<form method="post" action="/login/username">
<input type="hidden" name="id" value="{{.ID}}">
<label>User <input id="username" name="username"></label>
<label>Secret <input id="password" name="password" type="password"></label>
<label><input id="consent" name="consent" type="checkbox" value="yes"> I allow toolrouterd to call tools as me</label>
<button id="allow" type="submit">Allow</button>
</form></body></html>
`))

func (l *loginPage) show(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = loginHTML.Execute(w, map[string]string{"ID": r.URL.Query().Get("authRequestID")})
}

func (l *loginPage) submit(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	id := r.FormValue("id")
	fail := func(msg string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = loginHTML.Execute(w, map[string]string{"ID": id, "Error": msg})
	}
	if r.FormValue("consent") != "yes" {
		fail("consent is required")
		return
	}
	if err := l.check(r.FormValue("username"), r.FormValue("password"), id); err != nil {
		fail(err.Error())
		return
	}
	http.Redirect(w, r, l.callback(r.Context(), id), http.StatusFound)
}

func (s *store) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	if c := s.clients[id]; c != nil {
		if c.secret != secret {
			return errors.New("invalid client secret")
		}
		return nil
	}
	return s.Storage.AuthorizeClientIDSecret(ctx, id, secret)
}

func (s *store) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	if c := s.clients[id]; c != nil && c.secret == secret {
		return c, nil
	}
	return nil, errors.New("wrong client id or secret")
}

// ClientCredentialsTokenRequest: a user's token is for toolrouterd; the
// exchange client's own (its actor token) is for this server.
func (s *store) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	c := s.clients[id]
	if c == nil {
		return nil, errors.New("unknown client")
	}
	aud := s.userAud
	if !c.user {
		aud = id
	}
	return &oidc.JWTTokenRequest{Subject: id, Audience: []string{aud}, Scopes: scopes}, nil
}

// CreateAccessToken gives every token a fresh id (its jti) and the
// lifetime of its kind. JWT access tokens need no server-side record.
func (s *store) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	life := s.userLife
	if _, ok := req.(grantRequest); ok {
		life = s.grantLife
	}
	if _, ok := req.(op.TokenExchangeRequest); ok {
		life = s.xLife
		if s.short != "" && slices.Contains(req.GetAudience(), s.short) {
			life = s.shortLife
		}
	}
	return uuid.NewString(), time.Now().Add(life), nil
}

// ValidateTokenExchangeRequest allows delegation and impersonation to the
// configured audiences, issuing access tokens.
func (s *store) ValidateTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) error {
	if req.GetRequestedTokenType() == "" {
		req.SetRequestedTokenType(oidc.AccessTokenType)
	}
	if req.GetRequestedTokenType() != oidc.AccessTokenType {
		return oidc.ErrInvalidRequest().WithDescription("only access tokens are issued")
	}
	aud := req.GetAudience()
	if len(aud) == 0 {
		return oidc.ErrInvalidTarget().WithDescription("audience is required")
	}
	for _, a := range aud {
		if !slices.Contains(s.audiences, a) {
			return oidc.ErrInvalidTarget().WithDescription("audience %s is not allowed", a)
		}
	}
	if c := s.clients[req.GetExchangeSubject()]; c == nil || !c.user {
		return oidc.ErrInvalidGrant().WithDescription("the subject is no user")
	}
	req.SetCurrentScopes(req.GetScopes())
	return nil
}

func (s *store) CreateTokenExchangeRequest(context.Context, op.TokenExchangeRequest) error {
	return nil
}

// GetPrivateClaimsFromTokenExchangeRequest: with an actor token the issued
// token names the actor in act (RFC 8693 §4.1).
func (s *store) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) (map[string]any, error) {
	claims := map[string]any{}
	if a := req.GetExchangeActor(); a != "" {
		claims["act"] = map[string]any{"sub": a}
	}
	if len(req.GetScopes()) > 0 {
		claims["scope"] = strings.Join(req.GetScopes(), " ")
	}
	return claims, nil
}

// confidential is a client authenticated with client_secret_basic whose
// access tokens are JWTs.
type confidential struct {
	id, secret string
	user       bool // a user (client credentials for itself), else the exchange client
}

func (c *confidential) GetID() string                       { return c.id }
func (c *confidential) RedirectURIs() []string              { return nil }
func (c *confidential) PostLogoutRedirectURIs() []string    { return nil }
func (c *confidential) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *confidential) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *confidential) ResponseTypes() []oidc.ResponseType  { return nil }
func (c *confidential) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials, oidc.GrantTypeTokenExchange}
}
func (c *confidential) LoginURL(string) string               { return "" }
func (c *confidential) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *confidential) IDTokenLifetime() time.Duration       { return time.Hour }
func (c *confidential) DevMode() bool                        { return false }
func (c *confidential) IsScopeAllowed(string) bool           { return true }
func (c *confidential) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *confidential) ClockSkew() time.Duration             { return 0 }
func (c *confidential) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *confidential) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
