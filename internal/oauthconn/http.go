package oauthconn

import (
	"html/template"
	"net/http"
	"strings"
)

var page = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>toolrouterd: {{.Title}}</title></head>
<body><h1 id="result">{{.Title}}</h1><p>{{.Text}}</p></body></html>
`))

func show(w http.ResponseWriter, status int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = page.Execute(w, struct{ Title, Text string }{title, text})
}

func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

// ServeConnect is GET /connect/{state}: it sends the browser to the
// authorization server (the state's authorization request).
func (c *Connector) ServeConnect(w http.ResponseWriter, r *http.Request, state string) {
	noStore(w)
	u, ok, err := c.AuthURL(r.Context(), state)
	switch {
	case err != nil:
		show(w, http.StatusInternalServerError, "Sign-in unavailable", "The sign-in link could not be read; try again.")
	case !ok:
		show(w, http.StatusNotFound, "Sign-in link expired", "This sign-in link is unknown, used or expired: call the tool again for a new one.")
	default:
		http.Redirect(w, r, u, http.StatusFound)
	}
}

// ServeCallback is GET /oauth/callback: the authorization server's
// redirect with the code (or its error).
func (c *Connector) ServeCallback(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	q := r.URL.Query()
	state := q.Get("state")
	if e := q.Get("error"); e != "" {
		if state != "" {
			var p pending
			_, _ = c.Vault.Take(r.Context(), kindState, state, &p) // the link is spent
		}
		show(w, http.StatusBadRequest, "Not connected", "The authorization server answered "+strings.TrimSpace(e)+".")
		return
	}
	if state == "" || q.Get("code") == "" {
		show(w, http.StatusBadRequest, "Not connected", "The callback has no state or code.")
		return
	}
	backend, err := c.Complete(r.Context(), state, q.Get("code"))
	if err != nil {
		show(w, http.StatusBadRequest, "Not connected", err.Error())
		return
	}
	show(w, http.StatusOK, "Connected", backend+" is connected. You can close this window and call the tool again.")
}
