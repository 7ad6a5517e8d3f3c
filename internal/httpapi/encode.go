package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// encode writes v as JSON with the given status. A map[string]any (the
// shape of every list answer: {"results": […]}, {"tools": […]}) is encoded
// as it is written, one list element at a time, so that a large answer is
// never built whole in memory (issue 14, item 4); the bytes are those of
// json.Encoder.Encode(v).
func encode(w http.ResponseWriter, r *http.Request, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var err error
	if m, ok := v.(map[string]any); ok {
		err = encodeObject(w, m)
	} else {
		err = json.NewEncoder(w).Encode(v)
	}
	if err != nil {
		limitedLog(r, zerolog.WarnLevel, "write response").Str("error", clip(err.Error())).Msg("write response")
	}
}

// list is a list whose elements are made as they are encoded (see
// handleSchemas), so that not even the values of a large answer are held
// together.
type list interface {
	Len() int
	Item(i int) any
}

// encodeObject writes m as json.Encoder would, with its keys sorted, each
// slice or list value streamed element by element through one reused
// buffer.
func encodeObject(w io.Writer, m map[string]any) error {
	keys := slices.Sorted(maps.Keys(m))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// put encodes v into buf and writes it out without Encode's newline,
	// preceded by prefix.
	put := func(prefix string, v any) error {
		buf.Reset()
		buf.WriteString(prefix)
		if err := enc.Encode(v); err != nil {
			return err
		}
		_, err := w.Write(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}))
		return err
	}
	for i, k := range keys {
		prefix := ","
		if i == 0 {
			prefix = "{"
		}
		key, _ := json.Marshal(k)
		prefix += string(key) + ":"
		var n int
		var item func(int) any
		switch v := m[k].(type) {
		case list:
			n, item = v.Len(), v.Item
		default:
			rv := reflect.ValueOf(v)
			if rv.Kind() != reflect.Slice || rv.IsNil() || rv.Type().Elem().Kind() == reflect.Uint8 {
				if err := put(prefix, v); err != nil {
					return err
				}
				continue
			}
			n, item = rv.Len(), func(i int) any { return rv.Index(i).Interface() }
		}
		if n == 0 {
			if err := put(prefix, []struct{}{}); err != nil {
				return err
			}
			continue
		}
		for j := 0; j < n; j++ {
			p := ","
			if j == 0 {
				p = prefix + "["
			}
			if err := put(p, item(j)); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(w, "]"); err != nil {
			return err
		}
	}
	if len(keys) == 0 {
		_, err := io.WriteString(w, "{}\n")
		return err
	}
	_, err := io.WriteString(w, "}\n")
	return err
}

// problem is an RFC 9457 problem document.
type problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance,omitempty"`
	Field     string `json:"field,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// writeProblem writes a problem+json response.
func writeProblem(w http.ResponseWriter, r *http.Request, status int, field, detail string) {
	p := problem{
		Type:      "about:blank",
		Title:     http.StatusText(status),
		Status:    status,
		Detail:    detail,
		Instance:  r.URL.Path,
		Field:     field,
		RequestID: w.Header().Get("X-Request-Id"),
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}

// statusOf maps application error codes to HTTP statuses: the one place
// where that happens.
func statusOf(code string) int {
	switch code {
	case toolrouter.EINVALID:
		return http.StatusBadRequest
	case toolrouter.ENOTFOUND:
		return http.StatusNotFound
	case toolrouter.ECONFLICT:
		return http.StatusConflict
	case toolrouter.EUNPROCESSABLE:
		return http.StatusUnprocessableEntity
	case toolrouter.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// statusClientClosed is what the access log and metrics record for a
// request whose client went away before the answer (nginx's 499): not a
// server error, and nobody reads it.
const statusClientClosed = 499

// writeError answers err: application errors with their message, anything
// else as "internal error" (logged with its details).
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := toolrouter.ErrorCode(err)
	status := statusOf(code)
	if status >= http.StatusInternalServerError && r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
		// The store gave up because the client hung up: not our failure.
		zerolog.Ctx(r.Context()).Debug().Str("error", clip(err.Error())).Msg("client went away")
		w.WriteHeader(statusClientClosed)
		return
	}
	switch status {
	case http.StatusInternalServerError:
		zerolog.Ctx(r.Context()).Error().Err(err).Msg("internal error")
	case http.StatusServiceUnavailable:
		limitedLog(r, zerolog.WarnLevel, "dependency unavailable").Str("error", clip(err.Error())).Msg("dependency unavailable")
		w.Header().Set("Retry-After", "1")
	}
	var field string
	var e *toolrouter.Error
	if errors.As(err, &e) {
		field = e.Field
	}
	writeProblem(w, r, status, field, toolrouter.ErrorMessage(err))
}

// routingPath is the path chi routes on: the escaped one when the request
// has it.
func routingPath(r *http.Request) string {
	if r.URL.RawPath != "" {
		return r.URL.RawPath
	}
	return r.URL.Path
}

// allowedMethods lists the methods mux routes for path, in a stable order
// (HEAD wherever GET is, OPTIONS everywhere: answered by
// handleMethodNotAllowed).
func allowedMethods(mux chi.Routes, path string) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if mux.Match(chi.NewRouteContext(), m, path) {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	if len(allow) > 0 {
		allow = append(allow, http.MethodOptions)
	}
	return allow
}

// handleNotFound answers paths no route has, pointing at the route a
// trailing slash hides (/route/ → /route).
func handleNotFound(mux chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		detail := "no route for " + r.Method + " " + r.URL.Path
		p := routingPath(r)
		if trimmed := strings.TrimRight(p, "/"); trimmed != p && trimmed != "" && len(allowedMethods(mux, trimmed)) > 0 {
			detail += " (without the trailing slash: " + strings.TrimRight(r.URL.Path, "/") + ")"
		}
		writeProblem(w, r, http.StatusNotFound, "", detail)
	}
}

// rejectEmptySegments answers 404 for a path with an empty segment
// (//route, /runs//): chi would route /runs// to /runs/{id} with the id
// "/", while no operation of the spec has such a path.
func rejectEmptySegments(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := routingPath(r); strings.Contains(p, "//") {
			clean := "/" + strings.Join(strings.FieldsFunc(r.URL.Path, func(c rune) bool { return c == '/' }), "/")
			writeProblem(w, r, http.StatusNotFound, "", "no route for "+r.Method+" "+r.URL.Path+" (empty path segment; did you mean "+clean+"?)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// handleMethodNotAllowed answers a method the path does not have with 405
// and the Allow header (RFC 9110 §15.5.6), and OPTIONS with 204 and Allow.
// OPTIONS on a path outside public needs what its other methods need:
// authenticate.
func handleMethodNotAllowed(mux chi.Routes, public map[string]bool, authenticate func(http.Handler) http.Handler) http.HandlerFunc {
	options := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", strings.Join(allowedMethods(mux, routingPath(r)), ", "))
		w.WriteHeader(http.StatusNoContent)
	})
	authOptions := authenticate(options)
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			if public[routingPath(r)] {
				options(w, r)
			} else {
				authOptions.ServeHTTP(w, r)
			}
			return
		}
		allow := strings.Join(allowedMethods(mux, routingPath(r)), ", ")
		w.Header().Set("Allow", allow)
		writeProblem(w, r, http.StatusMethodNotAllowed, "", "method "+r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+allow)
	}
}
