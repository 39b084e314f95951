package httpapi

import (
	"errors"
	"net/http"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/content"
)

// emailMessageJSON is EmailMessage (§6.8).
type emailMessageJSON struct {
	ID                         string            `json:"id"`
	CampaignID                 string            `json:"campaignId,omitempty"`
	TransactionalID            string            `json:"transactionalId,omitempty"`
	Subject                    string            `json:"subject"`
	PreviewText                string            `json:"previewText"`
	FromName                   string            `json:"fromName"`
	FromEmail                  string            `json:"fromEmail"`
	ReplyToEmail               string            `json:"replyToEmail"`
	CcEmail                    *string           `json:"ccEmail,omitempty"`
	BccEmail                   *string           `json:"bccEmail,omitempty"`
	LanguageCode               *string           `json:"languageCode,omitempty"`
	EmailFormat                string            `json:"emailFormat"`
	LMX                        string            `json:"lmx"`
	ContentRevisionID          string            `json:"contentRevisionId"`
	UpdatedAt                  string            `json:"updatedAt"`
	ContactPropertiesFallbacks map[string]string `json:"contactPropertiesFallbacks,omitempty"`
	EventPropertiesFallbacks   map[string]string `json:"eventPropertiesFallbacks,omitempty"`
	DataVariablesFallbacks     map[string]string `json:"dataVariablesFallbacks,omitempty"`
	Warnings                   []content.Warning `json:"warnings,omitempty"`
}

func messageJSON(m *content.Message) emailMessageJSON {
	out := emailMessageJSON{ID: m.ID, Subject: m.Subject, PreviewText: m.PreviewText, FromName: m.FromName, FromEmail: m.FromEmail,
		ReplyToEmail: m.ReplyToEmail, CcEmail: m.CcEmail, BccEmail: m.BccEmail, LanguageCode: m.LanguageCode, EmailFormat: m.EmailFormat,
		LMX: m.LMX, ContentRevisionID: m.ContentRevisionID, UpdatedAt: isoTime(m.UpdatedAt),
		ContactPropertiesFallbacks: m.ContactFallbacks, EventPropertiesFallbacks: m.EventFallbacks, DataVariablesFallbacks: m.DataFallbacks}
	switch m.ParentKind {
	case content.ParentCampaign:
		out.CampaignID = m.ParentID
	case content.ParentTransactional:
		out.TransactionalID = m.ParentID
	}
	return out
}

func (a *API) getEmailMessage(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := a.Content.Message(r.Context(), team.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, messageJSON(m))
	return nil
}

func (a *API) updateEmailMessage(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	body, err := contentBody(r, true, "expectedRevisionId", "subject", "previewText", "fromName", "fromEmail", "replyToEmail",
		"ccEmail", "bccEmail", "languageCode", "emailFormat", "lmx", "contactPropertiesFallbacks", "eventPropertiesFallbacks", "dataVariablesFallbacks")
	if err != nil {
		return err
	}
	var u content.MessageUpdate
	for key, dst := range map[string]**string{"expectedRevisionId": &u.ExpectedRevisionID, "subject": &u.Subject, "previewText": &u.PreviewText,
		"fromName": &u.FromName, "fromEmail": &u.FromEmail, "replyToEmail": &u.ReplyToEmail, "ccEmail": &u.CcEmail, "bccEmail": &u.BccEmail,
		"languageCode": &u.LanguageCode, "emailFormat": &u.EmailFormat, "lmx": &u.LMX} {
		if *dst, err = strPtr(body, key); err != nil {
			return err
		}
	}
	if u.ContactFallbacks, err = fallbackMap(body, "contactPropertiesFallbacks"); err != nil {
		return err
	}
	if u.EventFallbacks, err = fallbackMap(body, "eventPropertiesFallbacks"); err != nil {
		return err
	}
	if u.DataFallbacks, err = fallbackMap(body, "dataVariablesFallbacks"); err != nil {
		return err
	}
	m, ws, err := a.Content.UpdateMessage(r.Context(), team.ID, r.PathValue("id"), u)
	if err != nil {
		return err
	}
	out := messageJSON(m)
	out.Warnings = ws
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) previewEmailMessage(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	body, err := contentBody(r, false, "emails", "contactProperties", "eventProperties", "dataVariables")
	if err != nil {
		return err
	}
	var in content.PreviewInput
	list, ok := body["emails"].([]any)
	if !ok || len(list) == 0 {
		return apperr.New(apperr.Invalid, "emails must be a non-empty array of email addresses.")
	}
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return apperr.New(apperr.Invalid, "emails must be a non-empty array of email addresses.")
		}
		in.Emails = append(in.Emails, s)
	}
	if in.ContactProperties, err = valueMap(body, "contactProperties"); err != nil {
		return err
	}
	if in.EventProperties, err = valueMap(body, "eventProperties"); err != nil {
		return err
	}
	if in.DataVariables, err = valueMap(body, "dataVariables"); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := a.Content.Preview(r.Context(), team.ID, id, in); err != nil {
		if errors.Is(err, apperr.RateLimited) {
			quotaHeaders(w, a.Content.PreviewLimit())
		}
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": id})
	return nil
}

func (a *API) emailMessageGuardian(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	res, err := a.Content.Guardian(r.Context(), team.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
