package credential

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// RFC 8693 (OAuth 2.0 Token Exchange, January 2020) §2.1 and §3.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	typeAccessToken    = "urn:ietf:params:oauth:token-type:access_token"
	typeJWT            = "urn:ietf:params:oauth:token-type:jwt"
)

// DefaultMaxTokens bounds the cache of exchanged tokens.
const DefaultMaxTokens = 10000

// Exchanger exchanges a caller's JWT for a backend's token (RFC 8693) and
// keeps the tokens in memory until shortly before they expire, per user,
// backend and scopes. Its errors name the authorization server's error
// code, never a token.
type Exchanger struct {
	// HTTP sends the token requests (nil: a client with a 30s timeout);
	// every request is also bounded by the call's context.
	HTTP *http.Client
	// MaxTokens bounds the cache (0: DefaultMaxTokens).
	MaxTokens int
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu     sync.Mutex
	tokens map[cacheKey]*token
	actors map[actorKey]*token
	// flight makes concurrent calls of one user and backend share one
	// exchange.
	flight singleflight.Group
}

// cacheKey is what an exchanged token is kept under: the calling client
// too, so one person's token obtained through one client (app) is never
// sent on a call of another.
type cacheKey struct {
	client, user, backend, scopes, tokenURL, clientID string
	// id_jag: the backend's authorization server and toolrouterd's
	// client there.
	backendTokenURL, backendClientID string
}

type actorKey struct{ tokenURL, clientID string }

// token is an issued token, its id for the audit trail and until when it
// is used.
type token struct {
	value    toolrouter.Secret
	id       string
	useUntil time.Time
}

func (e *Exchanger) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Token is the backend's token for user: from the cache while it is
// fresh, else exchanged.
func (e *Exchanger) Token(ctx context.Context, user *access.User, backend string, auth *toolrouter.BackendAuth) (*token, error) {
	key := cacheKey{access.FromContext(ctx).LabelName(), user.Subject, backend, auth.ScopeKey(), auth.TokenURL, auth.ClientID,
		auth.BackendTokenURL, auth.BackendClientID}
	e.mu.Lock()
	if t := e.tokens[key]; t != nil && e.now().Before(t.useUntil) {
		e.mu.Unlock()
		return t, nil
	}
	e.mu.Unlock()
	// One exchange per key at a time: it runs detached from the caller
	// that started it (bounded by its own timeout), and every caller
	// waits for it as long as its own context lets it.
	ch := e.flight.DoChan(fmt.Sprintf("%q", [...]string{key.client, key.user, key.backend, key.scopes, key.tokenURL, key.clientID,
		key.backendTokenURL, key.backendClientID}), func() (any, error) {
		e.mu.Lock()
		if t := e.tokens[key]; t != nil && e.now().Before(t.useUntil) {
			e.mu.Unlock()
			return t, nil // a flight that ended since this caller looked
		}
		e.mu.Unlock()
		xctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exchangeTimeout)
		defer cancel()
		exchange := e.exchange
		if auth.Mode == toolrouter.AuthIDJAG {
			exchange = e.idJAG
		}
		t, err := exchange(xctx, user, auth)
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.tokens == nil {
			e.tokens = map[cacheKey]*token{}
		}
		e.evict()
		e.tokens[key] = t
		return t, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*token), nil
	case <-ctx.Done():
		if auth.Mode == toolrouter.AuthIDJAG {
			return nil, fmt.Errorf("ID-JAG exchange: the authorization servers at %s and %s did not answer in time", auth.TokenURL, auth.BackendTokenURL)
		}
		return nil, fmt.Errorf("token exchange: the authorization server at %s did not answer in time", auth.TokenURL)
	}
}

// exchangeTimeout bounds one exchange (a caller waits less when its own
// call's timeout is shorter).
const exchangeTimeout = 30 * time.Second

// evict makes room for one more token: the expired ones go, then, when
// the cache is still full, the one that expires first. e.mu is held.
func (e *Exchanger) evict() {
	max := e.MaxTokens
	if max <= 0 {
		max = DefaultMaxTokens
	}
	if len(e.tokens) < max {
		return
	}
	now := e.now()
	var first cacheKey
	var firstAt time.Time
	for k, t := range e.tokens {
		if !now.Before(t.useUntil) {
			delete(e.tokens, k)
			continue
		}
		if firstAt.IsZero() || t.useUntil.Before(firstAt) {
			first, firstAt = k, t.useUntil
		}
	}
	if len(e.tokens) >= max {
		delete(e.tokens, first)
	}
}

// Cached is the number of tokens in the cache.
func (e *Exchanger) Cached() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.tokens)
}

// exchange asks the authorization server for the backend's token: the
// caller's JWT as subject_token, toolrouterd authenticated with
// client_secret_basic, audience (and resource, RFC 8707) naming the
// backend, and toolrouterd's own token as actor_token when asked.
func (e *Exchanger) exchange(ctx context.Context, user *access.User, auth *toolrouter.BackendAuth) (*token, error) {
	ctx = e.httpContext(ctx)
	params := url.Values{
		"grant_type":           {grantTokenExchange},
		"subject_token":        {user.Token.Reveal()},
		"subject_token_type":   {typeAccessToken},
		"requested_token_type": {typeAccessToken},
		"audience":             {auth.Audience},
	}
	if auth.SubjectTokenType == "jwt" {
		params.Set("subject_token_type", typeJWT)
	}
	if auth.Resource != "" {
		params.Set("resource", auth.Resource)
	}
	if auth.Actor {
		actor, err := e.actorToken(ctx, auth)
		if err != nil {
			return nil, err
		}
		params.Set("actor_token", actor.Reveal())
		params.Set("actor_token_type", typeAccessToken)
	}
	conf := &clientcredentials.Config{ClientID: auth.ClientID, ClientSecret: auth.ClientSecret.Reveal(), TokenURL: auth.TokenURL,
		Scopes: auth.Scopes, EndpointParams: params, AuthStyle: oauth2.AuthStyleInHeader}
	tok, err := conf.Token(ctx)
	if err != nil {
		return nil, describe("token exchange", auth.TokenURL, err)
	}
	if tok.AccessToken == "" {
		return nil, fmt.Errorf("token exchange at %s: the answer has no access_token", auth.TokenURL)
	}
	return e.issued(tok), nil
}

// issued is an access token as cached: its id, and used until shortly
// before the sooner of expires_in and its own exp.
func (e *Exchanger) issued(tok *oauth2.Token) *token {
	id, exp := tokenID(tok.AccessToken)
	if !exp.IsZero() && (tok.Expiry.IsZero() || exp.Before(tok.Expiry)) {
		// The token's own exp wins over expires_in when sooner (JWT
		// times are whole seconds).
		tok.Expiry = exp
	}
	return &token{value: toolrouter.NewSecret(tok.AccessToken), id: id, useUntil: e.useUntil(tok)}
}

// actorToken is toolrouterd's own token at the authorization server (the
// client credentials grant), cached like the exchanged ones.
func (e *Exchanger) actorToken(ctx context.Context, auth *toolrouter.BackendAuth) (toolrouter.Secret, error) {
	key := actorKey{auth.TokenURL, auth.ClientID}
	e.mu.Lock()
	if t := e.actors[key]; t != nil && e.now().Before(t.useUntil) {
		e.mu.Unlock()
		return t.value, nil
	}
	e.mu.Unlock()
	conf := &clientcredentials.Config{ClientID: auth.ClientID, ClientSecret: auth.ClientSecret.Reveal(), TokenURL: auth.TokenURL,
		AuthStyle: oauth2.AuthStyleInHeader}
	tok, err := conf.Token(ctx)
	if err != nil {
		return toolrouter.Secret{}, describe("actor token (client credentials)", auth.TokenURL, err)
	}
	t := &token{value: toolrouter.NewSecret(tok.AccessToken), useUntil: e.useUntil(tok)}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.actors == nil {
		e.actors = map[actorKey]*token{}
	}
	e.actors[key] = t
	return t.value, nil
}

// useUntil is when a token stops being used: a tenth of its lifetime (at
// most 30s) before it expires, so a call never carries a token that
// expires on the way. A token without expires_in is used for a minute.
func (e *Exchanger) useUntil(tok *oauth2.Token) time.Time {
	now := e.now()
	if tok.Expiry.IsZero() {
		return now.Add(time.Minute)
	}
	life := tok.Expiry.Sub(now)
	return tok.Expiry.Add(-min(30*time.Second, max(life/10, 0)))
}

func (e *Exchanger) httpContext(ctx context.Context) context.Context {
	c := e.HTTP
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	return context.WithValue(ctx, oauth2.HTTPClient, c)
}

// describe is err as a message safe to show: the authorization server's
// error code (RFC 6749 §5.2) when it refused, else why it could not be
// asked. x/oauth2's own text carries the answer's body, which is not
// shown.
func describe(what, tokenURL string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		code := re.ErrorCode
		if code == "" {
			status := 0
			if re.Response != nil {
				status = re.Response.StatusCode
			}
			return fmt.Errorf("%s refused by the authorization server (status %d, no error code)", what, status)
		}
		return fmt.Errorf("%s refused by the authorization server: error %q", what, code)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: the authorization server at %s did not answer in time", what, tokenURL)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("%s: the authorization server at %s did not answer in time", what, tokenURL)
		}
		return fmt.Errorf("%s: the authorization server at %s is unreachable", what, tokenURL)
	}
	return fmt.Errorf("%s at %s failed", what, tokenURL)
}
