package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/lasso-mail/lasso/internal/apperr"
)

// statusOf maps an error kind to its HTTP status, once for the whole API.
func statusOf(err error) int {
	switch {
	case errors.Is(err, apperr.Invalid):
		return http.StatusBadRequest
	case errors.Is(err, apperr.Unauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, apperr.Forbidden):
		return http.StatusForbidden
	case errors.Is(err, apperr.NotFound):
		return http.StatusNotFound
	case errors.Is(err, apperr.Conflict):
		return http.StatusConflict
	case errors.Is(err, apperr.TooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, apperr.Unprocessable):
		return http.StatusUnprocessableEntity
	case errors.Is(err, apperr.RateLimited):
		return http.StatusTooManyRequests
	case errors.Is(err, apperr.NotImplemented):
		return http.StatusNotImplemented
	case errors.Is(err, apperr.Unavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError writes the contract's error body: {"success": false, "message": …}
// plus any extra fields the error carries. Unknown errors become a generic
// 500 and are logged; client errors are not logged.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	msg, ok := apperr.Message(err)
	if status == http.StatusInternalServerError || !ok {
		if status == http.StatusInternalServerError {
			a.log.ErrorContext(r.Context(), "request failed", slog.String("route", r.Pattern), slog.Any("err", err))
			msg = "Internal server error."
		} else {
			msg = http.StatusText(status) + "."
		}
	}
	body := map[string]any{"success": false, "message": msg}
	for k, v := range apperr.Extra(err) {
		body[k] = v
	}
	if status == http.StatusUnauthorized {
		body["error"] = msg
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
