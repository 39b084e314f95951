package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/transactional"
)

// ParseTransactional decodes the body of POST /transactional (also the JSON
// payload of SMTP submission).
func ParseTransactional(m map[string]any) (transactional.Request, error) {
	var req transactional.Request
	var err error
	if req.TransactionalID, err = optString(m, "transactionalId"); err != nil {
		return req, err
	}
	if req.Email, err = optString(m, "email"); err != nil {
		return req, err
	}
	if req.Email == "" {
		return req, apperr.New(apperr.Invalid, "email is required.").With("path", "email")
	}
	if v, ok := m["addToAudience"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return req, apperr.New(apperr.Invalid, "addToAudience must be a boolean.").With("path", "addToAudience")
		}
		req.AddToAudience = b
	}
	if req.DataVariables, err = optObject(m, "dataVariables"); err != nil {
		return req, err
	}
	if v, ok := m["attachments"]; ok && v != nil {
		b, _ := json.Marshal(v)
		if err := json.Unmarshal(b, &req.Attachments); err != nil {
			return req, apperr.New(apperr.Invalid, "attachments must be a list of {filename, contentType, data}.").With("path", "attachments")
		}
	}
	return req, nil
}

func (a *API) sendTransactional(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	key := r.Header.Get("Idempotency-Key")
	if len(key) > 100 {
		return apperr.New(apperr.Invalid, "Idempotency-Key must be at most 100 characters.")
	}
	m, err := decodeObject(r, false)
	if err != nil {
		return err
	}
	// The 500-character rule applies to the request's values, not to
	// attachment data.
	att := m["attachments"]
	delete(m, "attachments")
	if err := checkLengths(m); err != nil {
		return err
	}
	if att != nil {
		m["attachments"] = att
	}
	req, err := ParseTransactional(m)
	if err != nil {
		return err
	}
	req.IdempotencyKey = key
	if _, err := a.Transactional.Send(r.Context(), team.ID, req); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true})
	return nil
}
