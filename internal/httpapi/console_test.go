package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/httpapi"
	"github.com/toolrouterd/toolrouterd/internal/registry"
)

// TestConsoleFiles: with keys on, the console's files are public (they hold
// no data; the API behind them is not) and locked down; OPTIONS and HEAD
// need no key either; any other path under /ui is a 404 problem.
func TestConsoleFiles(t *testing.T) {
	s := newServer(t, func(d *httpapi.Deps) {
		d.Auth = access.NewAuthenticator([]string{"k1"}, registry.Empty, nil)
	})
	for path, ct := range map[string]string{"/ui": "text/html", "/ui/": "text/html", "/ui/app.js": "text/javascript", "/ui/style.css": "text/css"} {
		w := s.serve("GET", path, "")
		h := w.Header()
		if w.Code != 200 || !strings.HasPrefix(h.Get("Content-Type"), ct) || w.Body.Len() == 0 ||
			!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: %d %v", path, w.Code, h)
		}
		if w := s.serve("HEAD", path, ""); w.Code != 200 {
			t.Errorf("HEAD %s: %d", path, w.Code)
		}
		if w := s.serve("OPTIONS", path, ""); w.Code != http.StatusNoContent || !strings.Contains(w.Header().Get("Allow"), "GET") {
			t.Errorf("OPTIONS %s: %d %v", path, w.Code, w.Header())
		}
		if w := s.serve("POST", path, ""); w.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d", path, w.Code)
		}
	}
	for _, path := range []string{"/ui/index.html", "/ui/static", "/ui/app%2Ejs", "/ui/app.js/", "/ui/a/b", "/ui//app.js"} {
		w := s.serve("GET", path, "")
		if w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, w.Code)
			continue
		}
		problemOf(t, w)
	}
	if w := s.serve("GET", "/approvals", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("the API behind the console without a key: %d", w.Code)
	}
}
