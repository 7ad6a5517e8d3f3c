package main

// Enterprise-Managed Authorization (MCP ext-auth
// enterprise-managed-authorization.mdx at 800c795;
// draft-ietf-oauth-identity-assertion-authz-grant-03): this server as
// the IdP issues ID-JAGs by token exchange (-jag-audiences), and as a
// backend's (resource) authorization server redeems them with the
// jwt-bearer grant (-trust-idp).
//
// zitadel/oidc's token exchange issues only the token types it knows
// ("custom token types are not supported for issuing"), and its JWT
// Profile grant takes only assertions whose sub is their iss (a service
// account's own key); both requests are therefore answered here, with
// the library's own pieces: its client authentication, its verification
// of the subject token and of the assertion (op.VerifyIDTokenHint,
// op.VerifyAccessToken, op.VerifyJWTAssertion with the IdP's remote key
// set), its signing key, access token creation and error responses.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	httphelper "github.com/zitadel/oidc/v3/pkg/http"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

const typeIDJAG oidc.TokenType = "urn:ietf:params:oauth:token-type:id-jag"

const typIDJAGJWT = "oauth-id-jag+jwt"

// jag is this server's part in Enterprise-Managed Authorization.
type jag struct {
	provider *op.Provider
	st       *store
	// audiences maps the issuer of each backend authorization server
	// this IdP issues ID-JAGs for to toolrouterd's client_id there.
	audiences map[string]string
	life      time.Duration
	// trusted is the IdP whose ID-JAGs this server redeems ("" none),
	// keys its key set; resources the backends it issues tokens for
	// (empty: any); grantLife the lifetime of those tokens.
	trusted   string
	keys      oidc.KeySet
	resources []string
	grantLife time.Duration
}

// handler answers the ID-JAG token exchange and the jwt-bearer grant,
// and passes every other request to the provider.
func (j *jag) handler(next http.Handler) http.Handler {
	return op.NewIssuerInterceptor(j.provider.IssuerFromRequest).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/oauth/token" {
			if err := r.ParseForm(); err == nil {
				switch {
				case len(j.audiences) > 0 && r.PostForm.Get("grant_type") == string(oidc.GrantTypeTokenExchange) &&
					r.PostForm.Get("requested_token_type") == string(typeIDJAG):
					j.issue(w, r)
					return
				case j.trusted != "" && r.PostForm.Get("grant_type") == string(oidc.GrantTypeBearer):
					j.redeem(w, r)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	}))
}

// client authenticates the request's client (client_secret_basic).
func (j *jag) client(r *http.Request) (*confidential, error) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		return nil, oidc.ErrInvalidClient().WithDescription("client authentication (client_secret_basic) required")
	}
	id, err1 := url.QueryUnescape(id)
	secret, err2 := url.QueryUnescape(secret)
	if err1 != nil || err2 != nil {
		return nil, oidc.ErrInvalidClient().WithDescription("invalid basic auth header")
	}
	if err := j.st.AuthorizeClientIDSecret(r.Context(), id, secret); err != nil {
		return nil, oidc.ErrInvalidClient().WithParent(err)
	}
	c := j.st.clients[id]
	if c == nil {
		return nil, oidc.ErrInvalidClient()
	}
	return c, nil
}

// issue is the IdP's token exchange for an ID-JAG (draft §4.3): the
// subject token verified with the provider's own verifiers, its aud
// naming the requesting client; the audience one of -jag-audiences.
func (j *jag) issue(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, err := j.client(r)
	if err != nil {
		op.RequestError(w, r, err, nil)
		return
	}
	f := r.PostForm
	var sub string
	var aud []string
	switch oidc.TokenType(f.Get("subject_token_type")) {
	case oidc.IDTokenType:
		claims, err := op.VerifyIDTokenHint[*oidc.IDTokenClaims](ctx, f.Get("subject_token"), j.provider.IDTokenHintVerifier(ctx))
		if err != nil {
			op.RequestError(w, r, oidc.ErrInvalidGrant().WithDescription("subject_token is invalid").WithParent(err), nil)
			return
		}
		sub, aud = claims.Subject, claims.Audience
	case oidc.AccessTokenType:
		claims, err := op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, f.Get("subject_token"), j.provider.AccessTokenVerifier(ctx))
		if err != nil {
			op.RequestError(w, r, oidc.ErrInvalidGrant().WithDescription("subject_token is invalid").WithParent(err), nil)
			return
		}
		sub, aud = claims.Subject, claims.Audience
	default:
		op.RequestError(w, r, oidc.ErrInvalidRequest().WithDescription("subject_token_type must be id_token or access_token"), nil)
		return
	}
	// The identity assertion was issued to the client that presents it.
	if !slices.Contains(aud, c.id) {
		op.RequestError(w, r, oidc.ErrInvalidGrant().WithDescription("the subject token's audience is not the requesting client"), nil)
		return
	}
	if u := j.st.clients[sub]; u == nil || !u.user {
		op.RequestError(w, r, oidc.ErrInvalidGrant().WithDescription("the subject is no user"), nil)
		return
	}
	audience := f.Get("audience")
	clientID, ok := j.audiences[audience]
	if !ok {
		op.RequestError(w, r, oidc.ErrInvalidTarget().WithDescription("no trust relationship with audience %s", audience), nil)
		return
	}
	now := time.Now()
	claims := map[string]any{
		"iss": op.IssuerFromContext(ctx), "sub": sub, "aud": audience, "client_id": clientID,
		"jti": uuid.NewString(), "iat": now.Unix(), "exp": now.Add(j.life).Unix(),
	}
	if res := f.Get("resource"); res != "" {
		claims["resource"] = res
	}
	scope := f.Get("scope")
	if scope != "" {
		claims["scope"] = scope
	}
	token, err := j.sign(ctx, claims)
	if err != nil {
		op.RequestError(w, r, oidc.ErrServerError().WithParent(err), nil)
		return
	}
	httphelper.MarshalJSON(w, &oidc.TokenExchangeResponse{AccessToken: token, IssuedTokenType: typeIDJAG, TokenType: "N_A",
		ExpiresIn: uint64(j.life.Seconds()), Scopes: strings.Fields(scope)})
}

// sign signs claims with the provider's key as a typed ID-JAG.
func (j *jag) sign(ctx context.Context, claims map[string]any) (string, error) {
	key, err := j.st.SigningKey(ctx)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: key.SignatureAlgorithm(), Key: &jose.JSONWebKey{Key: key.Key(), KeyID: key.ID()}},
		(&jose.SignerOptions{}).WithType(typIDJAGJWT))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	sig, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return sig.CompactSerialize()
}

// redeem is the backend authorization server's jwt-bearer grant for an
// ID-JAG (draft §4.4): the client authenticated, the assertion typed
// oauth-id-jag+jwt, signed by the trusted IdP, for this server alone,
// and issued to the authenticating client; the access token is for the
// ID-JAG's resource, for its sub.
func (j *jag) redeem(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, err := j.client(r)
	if err != nil {
		op.RequestError(w, r, err, nil)
		return
	}
	assertion := r.PostForm.Get("assertion")
	if assertion == "" {
		op.RequestError(w, r, oidc.ErrInvalidRequest().WithDescription("assertion missing"), nil)
		return
	}
	jws, err := jose.ParseSignedCompact(assertion, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(jws.Signatures) != 1 || jws.Signatures[0].Header.ExtraHeaders[jose.HeaderType] != typIDJAGJWT {
		op.RequestError(w, r, oidc.ErrInvalidGrant().WithDescription("the assertion is no ID-JAG (typ %s)", typIDJAGJWT), nil)
		return
	}
	verifier := op.NewJWTProfileVerifierKeySet(j.keys, op.IssuerFromContext(ctx), time.Hour, time.Second,
		op.SubjectCheck(func(req *oidc.JWTTokenRequest) error {
			if req.Issuer != j.trusted {
				return errors.New("the ID-JAG's issuer is not the trusted IdP")
			}
			return nil
		}))
	req, err := op.VerifyJWTAssertion(ctx, assertion, verifier)
	if err != nil {
		op.RequestError(w, r, oidc.ErrInvalidGrant().WithDescription("the ID-JAG is invalid").WithParent(err), nil)
		return
	}
	var extra struct {
		ClientID string `json:"client_id"`
		Resource string `json:"resource"`
		Scope    string `json:"scope"`
	}
	if _, err := oidc.ParseToken(assertion, &extra); err != nil {
		op.RequestError(w, r, oidc.ErrInvalidGrant().WithParent(err), nil)
		return
	}
	switch {
	case len(req.Audience) != 1:
		op.RequestError(w, r, oidc.ErrInvalidGrant().WithDescription("the ID-JAG's aud must name this server alone"), nil)
		return
	case extra.ClientID != c.id:
		op.RequestError(w, r, oidc.ErrInvalidGrant().WithDescription("the ID-JAG was issued to another client"), nil)
		return
	case extra.Resource == "" || (len(j.resources) > 0 && !slices.Contains(j.resources, extra.Resource)):
		op.RequestError(w, r, oidc.ErrInvalidTarget().WithDescription("resource %q is not served", extra.Resource), nil)
		return
	}
	tr := grantRequest{&oidc.JWTTokenRequest{Subject: req.Subject, Audience: []string{extra.Resource}, Scopes: strings.Fields(extra.Scope)}}
	token, _, validity, err := op.CreateAccessToken(ctx, tr, op.AccessTokenTypeJWT, j.provider, c, "")
	if err != nil {
		op.RequestError(w, r, oidc.ErrServerError().WithParent(err), nil)
		return
	}
	httphelper.MarshalJSON(w, &oidc.AccessTokenResponse{AccessToken: token, TokenType: oidc.BearerToken,
		ExpiresIn: uint64(validity.Seconds()), Scope: tr.Scopes})
}

// grantRequest is the token request of a redeemed ID-JAG (its lifetime
// is -grant-lifetime).
type grantRequest struct{ *oidc.JWTTokenRequest }
