package credential

import (
	"context"
	"fmt"
	"net/url"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Enterprise-Managed Authorization (the MCP extension
// io.modelcontextprotocol/enterprise-managed-authorization,
// modelcontextprotocol/ext-auth specification/draft/
// enterprise-managed-authorization.mdx as of commit 800c795, October
// 2025), an application of draft-ietf-oauth-identity-assertion-authz-grant-03
// (April 2026).
const (
	typeIDJAG      = "urn:ietf:params:oauth:token-type:id-jag"
	typeIDToken    = "urn:ietf:params:oauth:token-type:id_token"
	grantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer" // RFC 7523 §2.1
)

// idJAG obtains the backend's access token for user in two legs:
//
//  1. an RFC 8693 token exchange at the IdP (token_url, toolrouterd
//     authenticated with client_secret_basic) of the caller's identity
//     assertion (its JWT, as an id_token by default) for an ID-JAG:
//     requested_token_type …:id-jag, audience the issuer of the
//     backend's authorization server, resource the backend, scope;
//  2. the ID-JAG redeemed at the backend's authorization server
//     (backend_token_url) with the jwt-bearer grant (RFC 7523 §2.1),
//     toolrouterd authenticated there with its own client there.
//
// The ID-JAG itself is never kept: a fresh one is asked for whenever the
// access token is (it lives minutes, as the draft recommends).
func (e *Exchanger) idJAG(ctx context.Context, user *access.User, auth *toolrouter.BackendAuth) (*token, error) {
	ctx = e.httpContext(ctx)
	subjectType := typeIDToken
	switch auth.SubjectTokenType {
	case "access_token":
		subjectType = typeAccessToken
	case "jwt":
		subjectType = typeJWT
	}
	params := url.Values{
		"grant_type":           {grantTokenExchange},
		"requested_token_type": {typeIDJAG},
		"audience":             {auth.Audience},
		"resource":             {auth.Resource},
		"subject_token":        {user.Token.Reveal()},
		"subject_token_type":   {subjectType},
	}
	idp := &clientcredentials.Config{ClientID: auth.ClientID, ClientSecret: auth.ClientSecret.Reveal(), TokenURL: auth.TokenURL,
		Scopes: auth.Scopes, EndpointParams: params, AuthStyle: oauth2.AuthStyleInHeader}
	jag, err := idp.Token(ctx)
	if err != nil {
		return nil, describe("ID-JAG request (token exchange at the IdP)", auth.TokenURL, err)
	}
	if jag.AccessToken == "" {
		return nil, fmt.Errorf("ID-JAG request at %s: the answer has no access_token", auth.TokenURL)
	}
	if it, _ := jag.Extra("issued_token_type").(string); it != typeIDJAG {
		return nil, fmt.Errorf("ID-JAG request at %s: the IdP issued a token of type %q, not an ID-JAG", auth.TokenURL, it)
	}
	as := &clientcredentials.Config{ClientID: auth.BackendClientID, ClientSecret: auth.BackendClientSecret.Reveal(), TokenURL: auth.BackendTokenURL,
		EndpointParams: url.Values{"grant_type": {grantJWTBearer}, "assertion": {jag.AccessToken}}, AuthStyle: oauth2.AuthStyleInHeader}
	tok, err := as.Token(ctx)
	if err != nil {
		return nil, describe("ID-JAG redemption (jwt-bearer grant at the backend's authorization server)", auth.BackendTokenURL, err)
	}
	if tok.AccessToken == "" {
		return nil, fmt.Errorf("ID-JAG redemption at %s: the answer has no access_token", auth.BackendTokenURL)
	}
	return e.issued(tok), nil
}
