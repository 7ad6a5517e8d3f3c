package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// encode writes v as JSON with the given status. A map[string]any (the
// shape of every list answer: {"results": […]}, {"tools": […]}) is encoded
// as it is written, one list element at a time, so that a large answer is
// never built whole in memory (issue 14, item 4); the bytes are those of
// json.Encoder.Encode(v). A *toolrouter.Result the router already encoded
// (its JSON) is written as it is, followed by Encode's newline.
func encode(w http.ResponseWriter, r *http.Request, status int, v any) {
	w.Header()["Content-Type"] = jsonContentType // as Header.Set, without a slice per response
	w.WriteHeader(status)
	var err error
	if m, ok := v.(map[string]any); ok {
		err = encodeObject(w, m)
	} else if res, ok := v.(*toolrouter.Result); ok && res.JSON != nil {
		if _, err = w.Write(res.JSON); err == nil {
			_, err = w.Write(newline)
		}
	} else {
		err = json.NewEncoder(w).Encode(v)
	}
	if err != nil {
		limitedLog(r, zerolog.WarnLevel, "write response").Str("error", clip(err.Error())).Msg("write response")
	}
}

var newline = []byte{'\n'} // only read

// jsonContentType is the Content-Type header's values of a JSON answer;
// only read (net/http and the middleware replace a header's values, never
// write into them).
var jsonContentType = []string{"application/json"}

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

// validator is a request body that checks what its OpenAPI schema cannot
// say: Valid returns the problems by field, none when it is fine.
type validator interface {
	Valid(ctx context.Context) map[string]string
}

// decode decodes the body the request checker read (and validated against
// the spec) into a T, once, and checks it; errors are EINVALID naming the
// field.
func decode[T validator](r *http.Request) (T, error) {
	var v T
	if err := decodeBody(r, &v); err != nil {
		return v, err
	}
	if problems := v.Valid(r.Context()); len(problems) > 0 {
		return v, toolrouter.InvalidFields(problems)
	}
	return v, nil
}

// decodeBody decodes the body the request checker read (and validated
// against the spec) into v, the one decoding of a request body into its
// typed form; errors are EINVALID naming the field.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(bytes.NewReader(rawBody(r)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// The schema admitted the body, so what is left is a number that
		// no Go int holds (max_iterations: 1e300).
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return toolrouter.Invalid(te.Field, "%s: %s is out of range", te.Field, strings.TrimPrefix(te.Value, "number "))
		}
		return toolrouter.Invalid("body", "body: %v", err)
	}
	return nil
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
	case toolrouter.EFORBIDDEN:
		return http.StatusForbidden
	case toolrouter.ECONFLICT:
		return http.StatusConflict
	case toolrouter.EUNPROCESSABLE:
		return http.StatusUnprocessableEntity
	case toolrouter.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case toolrouter.ETOOMANY:
		return http.StatusTooManyRequests
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
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "5")
	}
	var field string
	var e *toolrouter.Error
	if errors.As(err, &e) {
		field = e.Field
	}
	writeProblem(w, r, status, field, toolrouter.ErrorMessage(err))
}
