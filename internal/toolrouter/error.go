package toolrouter

import (
	"errors"
	"fmt"
)

// Application error codes, mapped to HTTP statuses in exactly one place
// (httpapi).
const (
	EINVALID       = "invalid"       // the request itself is wrong (400)
	ENOTFOUND      = "not_found"     // the addressed entity does not exist (404)
	ECONFLICT      = "conflict"      // the request conflicts with current state (409)
	EUNPROCESSABLE = "unprocessable" // well-formed but inconsistent (422)
	EUNAVAILABLE   = "unavailable"   // a dependency is down (503)
	EINTERNAL      = "internal"      // a bug or an unexpected failure (500)
)

// Error is an application error whose Message is safe to show to clients.
type Error struct {
	Code    string
	Message string
	// Field names the request field at fault, when there is one.
	Field string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns an EINVALID error about the named field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: EINVALID, Field: field, Message: fmt.Sprintf(format, args...)}
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
