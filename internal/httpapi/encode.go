package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// encode writes v as JSON with the given status.
func encode(w http.ResponseWriter, r *http.Request, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		zerolog.Ctx(r.Context()).Warn().Err(err).Msg("write response")
	}
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
	dec := json.NewDecoder(bytes.NewReader(rawBody(r)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		// The schema admitted the body, so what is left is a number that
		// no Go int holds (max_iterations: 1e300).
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return v, toolrouter.Invalid(te.Field, "%s: %s is out of range", te.Field, strings.TrimPrefix(te.Value, "number "))
		}
		return v, toolrouter.Invalid("body", "body: %v", err)
	}
	if problems := v.Valid(r.Context()); len(problems) > 0 {
		return v, toolrouter.InvalidFields(problems)
	}
	return v, nil
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
		zerolog.Ctx(r.Context()).Info().Err(err).Msg("client went away")
		w.WriteHeader(statusClientClosed)
		return
	}
	switch status {
	case http.StatusInternalServerError:
		zerolog.Ctx(r.Context()).Error().Err(err).Msg("internal error")
	case http.StatusServiceUnavailable:
		zerolog.Ctx(r.Context()).Warn().Err(err).Msg("dependency unavailable")
		w.Header().Set("Retry-After", "1")
	}
	var field string
	var e *toolrouter.Error
	if errors.As(err, &e) {
		field = e.Field
	}
	writeProblem(w, r, status, field, toolrouter.ErrorMessage(err))
}
