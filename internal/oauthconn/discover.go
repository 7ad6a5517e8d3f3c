package oauthconn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Followed: RFC 9728 (OAuth 2.0 Protected Resource Metadata, April
// 2025), RFC 8414 (OAuth 2.0 Authorization Server Metadata), RFC 7591
// (Dynamic Client Registration) and the MCP authorization specification,
// revision 2025-11-25 (discovery order, PKCE S256, resource parameter).

// server is what discovery learns of a backend's authorization server.
type server struct {
	Issuer        string   `json:"issuer"`
	AuthURL       string   `json:"authorization_endpoint"`
	TokenURL      string   `json:"token_endpoint"`
	RegisterURL   string   `json:"registration_endpoint,omitempty"`
	RevokeURL     string   `json:"revocation_endpoint,omitempty"`
	PKCEMethods   []string `json:"code_challenge_methods_supported,omitempty"`
	ScopesDefault []string `json:"-"` // the resource's scopes_supported
}

// maxMetadata bounds a metadata document.
const maxMetadata = 1 << 20

func (c *Connector) getJSON(ctx context.Context, u string, into any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("%s: status %d", u, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if err != nil {
		return resp.StatusCode, err
	}
	if err := json.Unmarshal(b, into); err != nil {
		return resp.StatusCode, fmt.Errorf("%s: not a JSON metadata document", u)
	}
	return resp.StatusCode, nil
}

// wellKnown inserts the well-known suffix between the host and the path
// of u (RFC 9728 §3.1, RFC 8414 §3.1).
func wellKnown(u *url.URL, suffix string) string {
	w := *u
	w.Path = "/.well-known/" + suffix + strings.TrimSuffix(u.Path, "/")
	w.RawPath, w.RawQuery, w.Fragment = "", "", ""
	return w.String()
}

// resourceMetadataOf probes the backend unauthenticated: a 401 whose
// WWW-Authenticate names resource_metadata (RFC 9728 §5.1) names the
// document; "" when it names none.
func (c *Connector) resourceMetadataOf(ctx context.Context, resource string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, resource, nil)
	if err != nil {
		return ""
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return ""
	}
	// Only the status and headers: the body is not read (an MCP
	// endpoint may answer a GET with a stream).
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return ""
	}
	for _, h := range resp.Header.Values("WWW-Authenticate") {
		if v := authParam(h, "resource_metadata"); v != "" {
			return v
		}
	}
	return ""
}

// authParam is the value of the auth-param name in a challenge (quoted
// or a token).
func authParam(h, name string) string {
	i := strings.Index(strings.ToLower(h), name+"=")
	if i < 0 {
		return ""
	}
	v := h[i+len(name)+1:]
	if strings.HasPrefix(v, `"`) {
		v = v[1:]
		if j := strings.IndexByte(v, '"'); j >= 0 {
			return v[:j]
		}
		return ""
	}
	if j := strings.IndexAny(v, ", "); j >= 0 {
		v = v[:j]
	}
	return v
}

// discover finds the backend's authorization server: from the block's
// authorization_server, else from the protected resource metadata (the
// block's resource_metadata, the backend's 401, or its well-known URL).
func (c *Connector) discover(ctx context.Context, auth *toolrouter.BackendAuth) (*server, error) {
	issuer := auth.AuthorizationServer
	var scopes []string
	if issuer == "" {
		res, err := url.Parse(auth.Resource)
		if err != nil || res.Host == "" {
			return nil, fmt.Errorf("discovery: the resource %q is not a URL", auth.Resource)
		}
		candidates := []string{auth.ResourceMetadata}
		if auth.ResourceMetadata == "" {
			candidates = []string{c.resourceMetadataOf(ctx, auth.Resource), wellKnown(res, "oauth-protected-resource"),
				(&url.URL{Scheme: res.Scheme, Host: res.Host, Path: "/.well-known/oauth-protected-resource"}).String()}
		}
		var prm struct {
			Resource string   `json:"resource"`
			Servers  []string `json:"authorization_servers"`
			Scopes   []string `json:"scopes_supported"`
		}
		var lastErr error
		for _, u := range candidates {
			if u == "" {
				continue
			}
			if _, lastErr = c.getJSON(ctx, u, &prm); lastErr == nil && len(prm.Servers) > 0 {
				break
			}
			if lastErr == nil {
				lastErr = fmt.Errorf("%s names no authorization_servers", u)
			}
		}
		if len(prm.Servers) == 0 {
			return nil, fmt.Errorf("discovery: no protected resource metadata for %s (RFC 9728): %w", auth.Resource, lastErr)
		}
		// RFC 9728 §3.3: metadata for another resource is not used (a
		// backend must not send its users to another's server).
		if strings.TrimSuffix(prm.Resource, "/") != strings.TrimSuffix(auth.Resource, "/") {
			return nil, fmt.Errorf("discovery: the protected resource metadata is for %q, not %s (RFC 9728 §3.3); set resource or resource_metadata", prm.Resource, auth.Resource)
		}
		issuer, scopes = prm.Servers[0], prm.Scopes
	}
	iu, err := url.Parse(issuer)
	if err != nil || iu.Host == "" || (iu.Scheme != "https" && iu.Scheme != "http") {
		return nil, fmt.Errorf("discovery: the authorization server %q is not an http(s) URL", issuer)
	}
	var as server
	var lastErr error
	// RFC 8414 first, then OpenID Connect discovery (MCP 2025-11-25,
	// "Authorization Server Metadata Discovery").
	for _, u := range []string{wellKnown(iu, "oauth-authorization-server"), wellKnown(iu, "openid-configuration"),
		strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"} {
		as = server{}
		if _, lastErr = c.getJSON(ctx, u, &as); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		return nil, fmt.Errorf("discovery: no authorization server metadata for %s (RFC 8414): %w", issuer, lastErr)
	}
	if strings.TrimSuffix(as.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
		return nil, fmt.Errorf("discovery: the metadata of %s names another issuer, %q (RFC 8414 §3.3)", issuer, as.Issuer)
	}
	if as.AuthURL == "" || as.TokenURL == "" {
		return nil, fmt.Errorf("discovery: the authorization server %s has no authorization or token endpoint", issuer)
	}
	if !slices.Contains(as.PKCEMethods, "S256") {
		return nil, fmt.Errorf("discovery: the authorization server %s does not offer PKCE S256 (code_challenge_methods_supported)", issuer)
	}
	as.ScopesDefault = scopes
	return &as, nil
}
