// Package apperr defines the few error kinds the domain returns. Edges (HTTP,
// SMTP, the job executor) map them to their own codes in one place each.
// It imports nothing transport-related.
package apperr

import (
	"errors"
	"fmt"
)

// Kinds. Wrap them with fmt.Errorf("…: %w", apperr.NotFound) or use the
// helpers below, which carry a message that is safe to show to clients.
var (
	NotFound        = errors.New("not found")
	Invalid         = errors.New("invalid")
	Conflict        = errors.New("conflict")
	Unauthenticated = errors.New("unauthenticated")
	Forbidden       = errors.New("forbidden")
	RateLimited     = errors.New("rate limited")
	TooLarge        = errors.New("too large")
	Unprocessable   = errors.New("unprocessable")
	Unavailable     = errors.New("unavailable")
	NotImplemented  = errors.New("not supported")
)

// Error is an error of a kind with a message meant for the client, plus
// optional extra fields that the edge adds to the body.
type Error struct {
	Kind    error
	Message string
	Extra   map[string]any
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Kind }

// New returns an *Error of kind with a client-facing message.
func New(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// With adds an extra body field and returns e.
func (e *Error) With(key string, v any) *Error {
	if e.Extra == nil {
		e.Extra = map[string]any{}
	}
	e.Extra[key] = v
	return e
}

// Message returns the client-facing message of err if it carries one.
func Message(err error) (string, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Message, true
	}
	return "", false
}

// Extra returns the extra body fields of err, if any.
func Extra(err error) map[string]any {
	var e *Error
	if errors.As(err, &e) {
		return e.Extra
	}
	return nil
}

// Wrap annotates *errp with an operation name, keeping the kind.
//
//	defer apperr.Wrap(&err, "upsert contact")
func Wrap(errp *error, format string, args ...any) {
	if *errp != nil {
		*errp = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), *errp)
	}
}
