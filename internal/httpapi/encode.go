package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

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

// writeError answers err: application errors with their message, anything
// else as "internal error" (logged with its details).
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := toolrouter.ErrorCode(err)
	status := statusOf(code)
	if status == http.StatusInternalServerError {
		zerolog.Ctx(r.Context()).Error().Err(err).Msg("internal error")
	}
	var field string
	var e *toolrouter.Error
	if errors.As(err, &e) {
		field = e.Field
	}
	writeProblem(w, r, status, field, toolrouter.ErrorMessage(err))
}

func handleNotFound(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, r, http.StatusNotFound, "", "no route for "+r.Method+" "+r.URL.Path)
}

func handleMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, r, http.StatusMethodNotAllowed, "", "method "+r.Method+" is not allowed on "+r.URL.Path)
}
