package toolrouter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Application error codes, mapped to HTTP statuses in exactly one place
// (httpapi).
const (
	EINVALID       = "invalid"       // the request itself is wrong (400)
	ENOTFOUND      = "not_found"     // the addressed entity does not exist (404)
	EFORBIDDEN     = "forbidden"     // the caller may not do this (403)
	ECONFLICT      = "conflict"      // the request conflicts with current state (409)
	EUNPROCESSABLE = "unprocessable" // well-formed but inconsistent (422)
	EUNAVAILABLE   = "unavailable"   // a dependency is down (503)
	ETOOMANY       = "too_many"      // a limit of the caller is reached; retry later (429)
	EINTERNAL      = "internal"      // a bug or an unexpected failure (500)
)

// Error is an application error whose Message is safe to show to clients.
type Error struct {
	Code    string
	Message string
	// Field names the request field at fault, when there is one.
	Field string
	// Err is the underlying cause, for logs; never shown to clients.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Unavailable is the EUNAVAILABLE error of a dependency (the store) that
// failed; clients are told to retry, the cause goes to the logs.
func Unavailable(what string, err error) *Error {
	return &Error{Code: EUNAVAILABLE, Message: what + " unavailable; retry later", Err: err}
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns an EINVALID error about the named field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: EINVALID, Field: field, Message: fmt.Sprintf(format, args...)}
}

// InvalidFields returns the EINVALID error of a request with problems
// (field → what is wrong): its message lists them all, "field: problem",
// in field order, and Field is the first of them.
func InvalidFields(problems map[string]string) *Error {
	fields := slices.Sorted(maps.Keys(problems))
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f + ": " + problems[f]
	}
	e := &Error{Code: EINVALID, Message: strings.Join(parts, "; ")}
	if len(fields) > 0 {
		e.Field = fields[0]
	}
	return e
}

// ErrorCode returns the code of an application error, EINTERNAL otherwise.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return EINTERNAL
}

// ErrorMessage returns the message of an application error, or
// "internal error" for anything else.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// StoreError passes application errors (not found, a reused key…) and
// cancellations through, and reports anything else from the store as the
// store being unavailable (503, retry later).
func StoreError(err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return Unavailable("store", err)
}
