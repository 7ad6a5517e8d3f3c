package httpapi

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// checkOrigin guards every route against DNS rebinding, as the MCP
// transport asks of /mcp (docs/security.md "Security"): a request that reached a
// loopback address must name a loopback Host, and a request with an Origin
// header (a browser's) must come from an allowed origin. Allowed are the
// operator's TOOLROUTER_ALLOWED_ORIGINS ("*" allows any), loopback origins
// on a loopback connection, and the request's own origin elsewhere —
// except on an open service (no keys, no clients, no JWT; open reports it)
// without an allowed list, where an origin must also be an IP literal or a
// loopback name: a rebinding page controls both its origin's name and the
// Host it sends, and nothing else stops it there (with credentials, the
// browser does not attach the key). Anything else is 403 problem+json
// naming the header.
func checkOrigin(allowed []string, open func() bool) func(http.Handler) http.Handler {
	anyOrigin := slices.Contains(allowed, "*")
	listedHost := func(host string) bool {
		for _, o := range allowed {
			if u, err := url.Parse(o); err == nil && strings.EqualFold(u.Host, host) {
				return true
			}
		}
		return false
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			local := false
			if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a != nil {
				local = loopbackAddr(a)
			}
			if local && !anyOrigin && !isLoopback(r.Host) && !listedHost(r.Host) {
				writeProblem(w, r, http.StatusForbidden, "Host", "Host "+quote(r.Host)+" is not a loopback name: this server listens on a loopback address (set TOOLROUTER_ALLOWED_ORIGINS to allow another)")
				return
			}
			if origin := r.Header.Get("Origin"); origin != "" && !anyOrigin && !originAllowed(origin, r.Host, local, allowed) {
				writeProblem(w, r, http.StatusForbidden, "Origin", "Origin "+quote(origin)+" is not allowed (set TOOLROUTER_ALLOWED_ORIGINS to allow it)")
				return
			} else if origin != "" && !local && len(allowed) == 0 && !ipOrLoopback(origin) && open() {
				writeProblem(w, r, http.StatusForbidden, "Origin", "Origin "+quote(origin)+" is not allowed: this service takes requests without credentials, so a browser may call it only from a loopback or IP address origin (set TOOLROUTER_ALLOWED_ORIGINS to allow it)")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func originAllowed(origin, host string, local bool, allowed []string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false // "null" and other opaque origins
	}
	if slices.Contains(allowed, u.Scheme+"://"+strings.ToLower(u.Host)) {
		return true
	}
	if local {
		return isLoopback(u.Host)
	}
	return strings.EqualFold(u.Host, host)
}

// ipOrLoopback reports whether an origin's host is an IP literal or a
// loopback name, which DNS rebinding cannot point elsewhere.
func ipOrLoopback(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return isLoopback(u.Host) || net.ParseIP(strings.Trim(u.Hostname(), "[]")) != nil
}

// loopbackAddr is isLoopback(a.String()), read from the IP of a TCP
// address without formatting and parsing it again (issue 37: two
// allocations per request).
func loopbackAddr(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok && t != nil && t.Zone == "" {
		return t.IP.IsLoopback()
	}
	return isLoopback(a.String())
}

// isLoopback reports whether a host or host:port names the loopback
// interface (localhost, 127.0.0.0/8, ::1).
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return `"` + s + `"`
}

// openService reports whether the service takes requests without
// credentials: no authenticator, or one that says so (access.Authenticator).
func openService(a Authenticator) func() bool {
	o, ok := a.(interface{ Open() bool })
	return func() bool { return a == nil || ok && o.Open() }
}
