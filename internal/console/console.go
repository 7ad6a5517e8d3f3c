// Package console serves the web console at /ui (docs/approvals.md "Console"): static
// files embedded in the binary — one page, its script and its style sheet,
// no build step and nothing fetched from elsewhere. The page holds no data:
// it asks for a bearer key and calls the JSON API with it, so every
// approval, run and tool it shows passes the API's own authentication.
package console

import (
	"embed"
	"net/http"
)

//go:embed static
var static embed.FS

// files maps each served path to its file and content type.
var files = map[string][2]string{
	"/ui":           {"static/index.html", "text/html; charset=utf-8"},
	"/ui/":          {"static/index.html", "text/html; charset=utf-8"},
	"/ui/app.js":    {"static/app.js", "text/javascript; charset=utf-8"},
	"/ui/style.css": {"static/style.css", "text/css; charset=utf-8"},
}

// Paths lists the paths Handler serves (all public: they hold no data).
func Paths() []string {
	out := make([]string, 0, len(files))
	for p := range files {
		out = append(out, p)
	}
	return out
}

// Handler serves the console's files at Paths, and notFound answers other
// paths. Every file's answer forbids other origins' scripts and framing
// (an approve button must not be clickjacked) and caching.
func Handler(notFound http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.Path]
		if !ok || r.URL.RawPath != "" {
			notFound.ServeHTTP(w, r)
			return
		}
		b, err := static.ReadFile(f[0])
		if err != nil { // cannot happen: the files are embedded
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f[1])
		h.Set("Content-Security-Policy", "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer")
		_, _ = w.Write(b)
	})
}
