package httpapi_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/httpapi"
	"github.com/toolrouterd/toolrouterd/internal/registry"
)

// TestOriginAndHost: on a loopback listener only loopback Hosts and
// Origins get through, on /mcp and the REST API alike, unless
// TOOLROUTER_ALLOWED_ORIGINS lists them; a refusal is 403 problem+json.
func TestOriginAndHost(t *testing.T) {
	for _, tc := range []struct {
		name          string
		allowed       []string
		host, origin  string
		status, field string
	}{
		{name: "loopback host, no origin", host: "127.0.0.1"},
		{name: "localhost origin", host: "localhost", origin: "http://localhost:3000"},
		{name: "ipv6 loopback origin", host: "[::1]:8080", origin: "http://[::1]:5173"},
		{name: "rebound host", host: "evil.example", status: "403", field: "Host"},
		{name: "foreign origin", host: "127.0.0.1", origin: "https://evil.example", status: "403", field: "Origin"},
		{name: "opaque origin", host: "127.0.0.1", origin: "null", status: "403", field: "Origin"},
		{name: "listed origin and host", allowed: []string{"https://app.example"}, host: "app.example", origin: "https://app.example"},
		{name: "unlisted origin with a list", allowed: []string{"https://app.example"}, host: "127.0.0.1", origin: "https://other.example", status: "403", field: "Origin"},
		{name: "star", allowed: []string{"*"}, host: "evil.example", origin: "https://evil.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, func(d *httpapi.Deps) { d.AllowedOrigins = tc.allowed })
			for _, path := range []string{"/mcp", "/schemas/openai"} {
				method := http.MethodGet
				if path == "/mcp" {
					method = http.MethodPost
				}
				req := httptest.NewRequest(method, path, nil)
				req.Host = tc.host
				if tc.origin != "" {
					req.Header.Set("Origin", tc.origin)
				}
				// The request reached a loopback listener.
				req = req.WithContext(contextWithLocalAddr(req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}))
				w := httptest.NewRecorder()
				s.h.ServeHTTP(w, req)
				if tc.status == "" {
					if w.Code == http.StatusForbidden {
						t.Errorf("%s: refused: %s", path, w.Body)
					}
					continue
				}
				var p problemDoc
				if w.Code != http.StatusForbidden || w.Header().Get("Content-Type") != "application/problem+json" ||
					json.Unmarshal(w.Body.Bytes(), &p) != nil || p.Field != tc.field {
					t.Errorf("%s: %d %s %s, want 403 problem naming %s", path, w.Code, w.Header().Get("Content-Type"), w.Body, tc.field)
				}
			}
		})
	}

	// Elsewhere than on loopback, a browser may call only its own origin;
	// on an open service only by IP address, as a rebinding page names
	// its own host (and sends it as Host).
	keyed := newServer(t, func(d *httpapi.Deps) { d.Auth = access.NewAuthenticator([]string{"k1"}, registry.Empty, nil) })
	open := newServer(t)
	for _, tc := range []struct {
		s            *server
		host, origin string
		want         int
	}{
		{keyed, "api.example", "https://api.example", http.StatusOK},
		{keyed, "api.example", "https://evil.example", http.StatusForbidden},
		{open, "api.example", "https://api.example", http.StatusForbidden},
		{open, "10.0.0.5:8080", "http://10.0.0.5:8080", http.StatusOK},
		{open, "api.example", "https://evil.example", http.StatusForbidden},
	} {
		req := httptest.NewRequest(http.MethodGet, "/schemas/openai", nil)
		req.Host = tc.host
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Authorization", "Bearer k1")
		req = req.WithContext(contextWithLocalAddr(req, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8080}))
		w := httptest.NewRecorder()
		tc.s.h.ServeHTTP(w, req)
		if w.Code != tc.want {
			t.Errorf("non-loopback, open %v, Origin %s: %d %s, want %d", tc.s == open, tc.origin, w.Code, w.Body, tc.want)
		}
	}
}

func contextWithLocalAddr(r *http.Request, a net.Addr) context.Context {
	return context.WithValue(r.Context(), http.LocalAddrContextKey, a)
}
