package httpapi

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// wantsEventStream reports whether the request's Accept header prefers
// text/event-stream to application/json (RFC 9110 §12.5.1: q-values, the
// most specific range wins, media types are case-insensitive). A tie goes
// to application/json, the default representation: a client must ask for
// the stream ("Accept: text/event-stream") or rank it higher
// ("text/event-stream, application/json;q=0.5"); "Accept: application/json,
// text/event-stream" and "*/*" get JSON.
func wantsEventStream(r *http.Request) bool {
	accept := r.Header.Values("Accept")
	if len(accept) == 0 {
		return false
	}
	sse, js := rangeQ{spec: -1}, rangeQ{spec: -1}
	for _, h := range accept {
		for _, part := range strings.Split(h, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			mt, params, err := mime.ParseMediaType(part)
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				f, err := strconv.ParseFloat(s, 64)
				if err != nil || f < 0 || f > 1 {
					continue
				}
				q = f
			}
			typ, sub, _ := strings.Cut(mt, "/")
			sse.offer(specificity(typ, sub, "text", "event-stream"), q)
			js.offer(specificity(typ, sub, "application", "json"), q)
		}
	}
	return sse.q() > 0 && sse.q() > js.q()
}

// rangeQ is the q-value of the most specific media range matching a type.
type rangeQ struct {
	spec int
	val  float64
}

func (m *rangeQ) offer(spec int, q float64) {
	if spec < 0 {
		return
	}
	if spec > m.spec || spec == m.spec && q > m.val {
		m.spec, m.val = spec, q
	}
}

// q is the matched q-value, -1 when no range matched.
func (m rangeQ) q() float64 {
	if m.spec < 0 {
		return -1
	}
	return m.val
}

// specificity of the range typ/sub for the type want/wantSub: 2 exact,
// 1 type/*, 0 */*, -1 no match.
func specificity(typ, sub, want, wantSub string) int {
	switch {
	case typ == want && sub == wantSub:
		return 2
	case typ == want && sub == "*":
		return 1
	case typ == "*" && sub == "*":
		return 0
	}
	return -1
}

// preferAsync reports whether a Prefer header (RFC 7240) asks for
// respond-async, with or without parameters.
func preferAsync(r *http.Request) bool {
	for _, v := range r.Header.Values("Prefer") {
		for _, p := range strings.Split(v, ",") {
			token, _, _ := strings.Cut(p, ";")
			token, _, _ = strings.Cut(token, "=")
			if strings.EqualFold(strings.TrimSpace(token), "respond-async") {
				return true
			}
		}
	}
	return false
}
