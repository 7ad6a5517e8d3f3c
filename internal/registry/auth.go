package registry

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// auth reads the auth block at ptr (docs/backend-auth.md); nil when
// absent or static. The schema checked its shape and which keys go with
// which mode; this reads the environment and checks what a schema cannot.
// stdio reports a stdio MCP server, which has no request to carry a
// credential.
func (p *parser) auth(ptr string, stdio bool) *toolrouter.BackendAuth {
	if p.obj(ptr) == nil {
		return nil
	}
	a := &toolrouter.BackendAuth{Mode: p.str(ptr + "/mode"), Header: p.str(ptr + "/header"),
		Audience: p.str(ptr + "/audience"), Resource: p.str(ptr + "/resource"), Scopes: p.strs(ptr + "/scopes"),
		Actor: p.flag(ptr + "/actor"), SubjectTokenType: p.str(ptr + "/subject_token_type")}
	if a.IsStatic() {
		return nil
	}
	if stdio {
		p.at(ptr+"/mode", fmt.Sprintf("mode %s needs an HTTP server (url): a stdio server has no request to carry a credential", a.Mode))
		return nil
	}
	if a.Header != "" && !headerName.MatchString(a.Header) {
		p.at(ptr+"/header", "invalid header name")
	}
	if a.Mode == toolrouter.AuthOAuth {
		return p.oauth(ptr, a)
	}
	if a.Mode != toolrouter.AuthTokenExchange && a.Mode != toolrouter.AuthIDJAG {
		return a
	}
	a.TokenURL = p.tokenURL(ptr+"/token_url", "client_id_env and client_secret_env")
	if a.Resource != "" && !strings.Contains(a.Resource, ":") {
		p.at(ptr+"/resource", "must be an absolute URI (RFC 8707)")
	}
	a.ClientID = p.authEnv(ptr + "/client_id_env")
	a.ClientSecret = toolrouter.NewSecret(p.authEnv(ptr + "/client_secret_env"))
	if a.Mode == toolrouter.AuthIDJAG {
		a.BackendTokenURL = p.tokenURL(ptr+"/backend_token_url", "backend_client_id_env and backend_client_secret_env")
		a.BackendClientID = p.authEnv(ptr + "/backend_client_id_env")
		a.BackendClientSecret = toolrouter.NewSecret(p.authEnv(ptr + "/backend_client_secret_env"))
	}
	return a
}

// tokenURL reads an authorization server's token endpoint at ptr: an
// absolute URL without credentials in it, https unless its host is a
// loopback address (toolrouterd's client secret and the user's token
// travel in its requests). envs names the fields the credentials go in.
func (p *parser) tokenURL(ptr, envs string) string {
	u := p.str(ptr)
	if u == "" {
		return ""
	}
	if literalCredentials(u) {
		p.at(ptr, "has credentials written in the URL; give them in "+envs)
		return ""
	}
	if !p.httpURL(u, ptr) {
		return ""
	}
	if pu, err := url.Parse(u); err == nil && pu.Scheme != "https" && !loopbackHost(pu.Hostname()) {
		p.at(ptr, "must be https (toolrouterd's client secret and the user's token are sent to it); plain http only to a loopback host")
		return ""
	}
	return u
}

// loopbackHost reports localhost or a loopback IP address.
func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// oauth reads the rest of an oauth block (docs/backend-auth.md "oauth").
func (p *parser) oauth(ptr string, a *toolrouter.BackendAuth) *toolrouter.BackendAuth {
	for _, f := range []struct {
		key string
		to  *string
	}{{"resource_metadata", &a.ResourceMetadata}, {"authorization_server", &a.AuthorizationServer}, {"resource", &a.Resource}} {
		u := p.str(ptr + "/" + f.key)
		if u == "" {
			continue
		}
		if literalCredentials(u) {
			p.at(ptr+"/"+f.key, "has credentials written in the URL")
		} else if p.httpURL(u, ptr+"/"+f.key) {
			*f.to = u
		}
	}
	a.ClientID = p.authEnv(ptr + "/client_id_env")
	a.ClientSecret = toolrouter.NewSecret(p.authEnv(ptr + "/client_secret_env"))
	return a
}

// authEnv is the value of the variable named at ptr, a problem naming
// the field and the variable (never a value) when it is unset: one that
// toolrouterd check shows as a warning, as for a client's key_env.
func (p *parser) authEnv(ptr string) string {
	name := p.str(ptr)
	if name == "" {
		return ""
	}
	v := strings.TrimSpace(p.getenv(name))
	switch {
	case v == "":
		// Like a client's key_env: check warns, the service refuses.
		p.pending = append(p.pending, pending{line: p.line(ptr), ptr: ptr,
			why: fmt.Sprintf("environment variable %s is unset or empty", name), unsetEnv: name})
	case !visibleASCII(v):
		p.at(ptr, fmt.Sprintf("environment variable %s holds a character that is not visible ASCII", name))
		v = ""
	}
	return v
}

// credentials reads a client's per-backend secrets (clients[].credentials).
func (p *parser) credentials(ptr string) map[string]toolrouter.Secret {
	if p.obj(ptr) == nil {
		return nil
	}
	out := map[string]toolrouter.Secret{}
	for _, bp := range p.keys(ptr) {
		if v := p.authEnv(bp + "/token_env"); v != "" {
			out[lastTok(bp)] = toolrouter.NewSecret(v)
		}
	}
	return out
}

// checkCredentials reports a client's credential for a backend that is
// no tool nor MCP server of the file, or whose auth mode is not
// per_client: a typo that would leave the client refused.
func (p *parser) checkCredentials(reg *Registry) {
	modes := map[string]string{}
	for _, t := range reg.tools {
		modes[t.Name] = authMode(t.Auth)
	}
	for _, s := range reg.mcpServers {
		modes[s.Name] = authMode(s.Auth)
	}
	for _, ptr := range p.items("/clients") {
		names := p.keys(ptr + "/credentials") // a fresh slice
		sort.Strings(names)
		for _, bp := range names {
			switch mode, ok := modes[lastTok(bp)]; {
			case !ok:
				p.atKey(bp, fmt.Sprintf("no tool or MCP server named %q", lastTok(bp))+didYouMean(lastTok(bp), slices.Collect(maps.Keys(modes))))
			case mode != toolrouter.AuthPerClient:
				p.atKey(bp, fmt.Sprintf("%q has auth mode %s, not per_client: this credential is never sent", lastTok(bp), mode))
			}
		}
	}
}

func authMode(a *toolrouter.BackendAuth) string {
	if a.IsStatic() {
		return toolrouter.AuthStatic
	}
	return a.Mode
}
