package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/rs/zerolog"
)

// JWTConfig configures JWT bearer tokens (docs/security.md "JWT clients").
type JWTConfig struct {
	Issuer   string // iss every token must carry
	JWKSURL  string // where the issuer's signing keys are
	Audience string // a value the token's aud must contain
	// SubjectClaim names the claim that picks the client by its
	// jwt_subject (default "sub").
	SubjectClaim string
	// HTTP fetches the key set (default: a client with a 10s timeout).
	HTTP *http.Client
	// MinRefresh is the least time between two fetches of the key set
	// caused by tokens with an unknown kid (default 30s), so a flood of
	// made-up kids cannot turn into a flood of fetches.
	MinRefresh time.Duration
	// MaxAge is how long a fetched key set is used before it is fetched
	// again, so a key the issuer withdrew stops working (default 1h).
	MaxAge time.Duration
	// Leeway is the clock skew allowed on exp and nbf (default 30s).
	Leeway time.Duration
	Now    func() time.Time
	// Log receives a warning for each failed fetch of the key set (nil:
	// none). Fetches are at most one per MinRefresh, so lines are too.
	Log *zerolog.Logger
}

// algorithms are the signatures accepted; the token's alg header must be
// one of them, so "none" and HMAC with a public key never verify.
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256}

// JWTVerifier checks JWTs against the issuer's key set, which it fetches
// and caches.
type JWTVerifier struct {
	cfg JWTConfig

	mu      sync.Mutex // guards the fields below; never held across a fetch
	keys    jose.JSONWebKeySet
	fetched time.Time     // last successful fetch
	tried   time.Time     // last fetch attempt
	failed  error         // of the last fetch, nil when it succeeded
	running chan struct{} // closed when the fetch in flight ends; nil when none is
}

// NewJWTVerifier returns a verifier; it fetches the key set on first use.
func NewJWTVerifier(cfg JWTConfig) *JWTVerifier {
	if cfg.SubjectClaim == "" {
		cfg.SubjectClaim = "sub"
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.MinRefresh <= 0 {
		cfg.MinRefresh = 30 * time.Second
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = time.Hour
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &JWTVerifier{cfg: cfg}
}

// Issuer is the issuer tokens must come from.
func (v *JWTVerifier) Issuer() string { return v.cfg.Issuer }

// Claims are what a verified token says about its bearer.
type Claims struct {
	Subject string
	Expiry  time.Time
	// User is the token's sub claim: the user the calls are made for
	// (docs/backend-auth.md), whichever claim picks the client.
	User string
}

// Verify checks a token's signature (RS256 or ES256, by a key of the
// issuer's set), iss, aud, exp and nbf, and returns its subject claim.
// Its errors are Denied, safe to show to the caller, except a key set
// that cannot be fetched (an ordinary error).
func (v *JWTVerifier) Verify(ctx context.Context, raw string) (Claims, error) {
	tok, err := jwt.ParseSigned(raw, algorithms)
	if err != nil {
		return Claims{}, Denied("malformed token: not a JWS-signed JWT with alg RS256 or ES256")
	}
	if len(tok.Headers) != 1 {
		return Claims{}, Denied("malformed token: exactly one signature is required")
	}
	kid := tok.Headers[0].KeyID
	keys, err := v.keysFor(ctx, kid)
	if err != nil {
		return Claims{}, err
	}
	var std jwt.Claims
	var all map[string]any
	verified := false
	for _, k := range keys {
		if tok.Claims(k.Key, &std, &all) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return Claims{}, Denied("token signature does not verify")
	}
	if std.Expiry == nil {
		return Claims{}, Denied("token has no exp claim")
	}
	err = std.ValidateWithLeeway(jwt.Expected{
		Issuer:      v.cfg.Issuer,
		AnyAudience: jwt.Audience{v.cfg.Audience},
		Time:        v.cfg.Now(),
	}, v.cfg.Leeway)
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return Claims{}, Denied("token expired")
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return Claims{}, Denied("token not valid yet (nbf or iat in the future)")
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return Claims{}, Denied("token issuer is not " + v.cfg.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return Claims{}, Denied("token audience does not include " + v.cfg.Audience)
	case err != nil:
		return Claims{}, Denied("token claims invalid")
	}
	sub, _ := all[v.cfg.SubjectClaim].(string)
	if sub == "" {
		return Claims{}, Denied(fmt.Sprintf("token has no string claim %q", v.cfg.SubjectClaim))
	}
	return Claims{Subject: sub, Expiry: std.Expiry.Time(), User: std.Subject}, nil
}

// keysFor returns the keys of the set with this kid (every key when the
// token names none), fetching the set when it is stale or does not know
// the kid, at most once per MinRefresh (issue 21 item 4).
//
// A fetch runs outside the lock, one at a time: a token whose kid the set
// knows verifies meanwhile (with the set in hand, even a stale one), and
// only tokens that need the new set wait for it (or for their ctx).
func (v *JWTVerifier) keysFor(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	v.mu.Lock()
	now := v.cfg.Now()
	keys := v.find(kid)
	stale := v.fetched.IsZero() || now.Sub(v.fetched) >= v.cfg.MaxAge
	if (stale || len(keys) == 0) && v.running == nil && (v.tried.IsZero() || now.Sub(v.tried) >= v.cfg.MinRefresh) {
		v.tried = now
		v.running = make(chan struct{})
		go v.refresh(context.WithoutCancel(ctx), v.running)
	}
	running := v.running
	v.mu.Unlock()
	if len(keys) == 0 && running != nil {
		select {
		case <-running:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for the JWKS: %w", ctx.Err())
		}
	}
	v.mu.Lock()
	if len(keys) == 0 {
		keys = v.find(kid)
	}
	never, failed := v.fetched.IsZero(), v.failed
	v.mu.Unlock()
	if len(keys) == 0 && never && failed != nil {
		return nil, failed // not the caller's fault: no key set yet
	}
	if len(keys) == 0 {
		return nil, Denied(fmt.Sprintf("token signed by an unknown key (kid %q)", kid))
	}
	return keys, nil
}

// refresh fetches the key set and ends the fetch in flight, done. A set
// that cannot be fetched leaves the keys in hand in use (the issuer may be
// back soon) and is logged.
func (v *JWTVerifier) refresh(ctx context.Context, done chan struct{}) {
	set, err := v.fetch(ctx)
	if err != nil && v.cfg.Log != nil {
		v.cfg.Log.Warn().Err(err).Str("jwks_url", v.cfg.JWKSURL).Msg("JWT key set fetch failed; the keys in hand stay in use")
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.failed = err
	if err == nil {
		v.keys, v.fetched = set, v.cfg.Now()
	}
	v.running = nil
	close(done)
}

func (v *JWTVerifier) find(kid string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range v.keys.Keys {
		if (kid == "" || k.KeyID == kid) && k.Valid() && k.IsPublic() && (k.Use == "" || k.Use == "sig") {
			out = append(out, k)
		}
	}
	return out
}

// maxJWKS bounds the key set document.
const maxJWKS = 1 << 20

func (v *JWTVerifier) fetch(ctx context.Context) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return set, fmt.Errorf("fetch JWKS: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.cfg.HTTP.Do(req)
	if err != nil {
		return set, fmt.Errorf("fetch JWKS %s: %w", v.cfg.JWKSURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return set, fmt.Errorf("fetch JWKS %s: status %s", v.cfg.JWKSURL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS+1))
	if err != nil {
		return set, fmt.Errorf("fetch JWKS %s: %w", v.cfg.JWKSURL, err)
	}
	if len(body) > maxJWKS {
		return set, fmt.Errorf("fetch JWKS %s: larger than %d bytes", v.cfg.JWKSURL, maxJWKS)
	}
	// Keys of kinds this verifier does not know are skipped, not fatal.
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return set, fmt.Errorf("fetch JWKS %s: %w", v.cfg.JWKSURL, err)
	}
	for _, raw := range doc.Keys {
		var k jose.JSONWebKey
		if k.UnmarshalJSON(raw) == nil {
			set.Keys = append(set.Keys, k)
		}
	}
	return set, nil
}
