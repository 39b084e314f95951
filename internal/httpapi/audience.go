package httpapi

import (
	"net/http"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/events"
)

func (a *API) apiKey(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "teamName": team.Name})
	return nil
}

// contactBody decodes the body of create/update: identifiers, lists and every
// other key as a property.
func contactBody(r *http.Request) (contacts.Upsert, error) {
	m, err := decodeObject(r, false)
	if err != nil {
		return contacts.Upsert{}, err
	}
	if err := checkLengths(m); err != nil {
		return contacts.Upsert{}, err
	}
	return upsertFrom(m)
}

func upsertFrom(m map[string]any) (contacts.Upsert, error) {
	var in contacts.Upsert
	var err error
	if in.Email, err = optString(m, "email"); err != nil {
		return in, err
	}
	if in.UserID, err = optString(m, "userId"); err != nil {
		return in, err
	}
	if in.MailingLists, err = mailingLists(m); err != nil {
		return in, err
	}
	in.Props = make(map[string]any, len(m))
	for k, v := range m {
		switch k {
		case "email", "mailingLists":
			continue
		}
		in.Props[k] = v
	}
	return in, nil
}

func (a *API) createContact(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	in, err := contactBody(r)
	if err != nil {
		return err
	}
	res, err := a.Contacts.Create(r.Context(), team.ID, in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "id": res.ID})
	return nil
}

func (a *API) updateContact(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	in, err := contactBody(r)
	if err != nil {
		return err
	}
	res, err := a.Contacts.Update(r.Context(), team.ID, in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "id": res.ID})
	return nil
}

// queryIdentity reads exactly one of ?email= / ?userId=.
func queryIdentity(r *http.Request) (contacts.Identity, error) {
	q := r.URL.Query()
	idn := contacts.Identity{Email: q.Get("email"), UserID: q.Get("userId")}
	if q.Has("email") && q.Has("userId") {
		return idn, apperr.New(apperr.Invalid, "Only one parameter is permitted.")
	}
	if idn.Email == "" && idn.UserID == "" {
		return idn, apperr.New(apperr.Invalid, "An email or userId is required.")
	}
	return idn, nil
}

func (a *API) findContact(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	idn, err := queryIdentity(r)
	if err != nil {
		return err
	}
	c, err := a.Contacts.Find(r.Context(), team.ID, idn)
	if err != nil {
		return err
	}
	out := []any{}
	if c != nil {
		out = append(out, c.JSON())
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) deleteContact(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := decodeObject(r, false)
	if err != nil {
		return err
	}
	if err := checkLengths(m); err != nil {
		return err
	}
	var idn contacts.Identity
	if idn.Email, err = optString(m, "email"); err != nil {
		return err
	}
	if idn.UserID, err = optString(m, "userId"); err != nil {
		return err
	}
	if idn.Email != "" && idn.UserID != "" {
		return apperr.New(apperr.Invalid, "Only one of email or userId is permitted.")
	}
	if _, err := a.Contacts.Delete(r.Context(), team.ID, idn); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Contact deleted."})
	return nil
}

func (a *API) checkSuppression(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	idn, err := queryIdentity(r)
	if err != nil {
		return err
	}
	st, err := a.Contacts.CheckSuppression(r.Context(), team.ID, idn)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"contact":      map[string]any{"id": st.ContactID, "email": st.Email, "userId": st.UserID},
		"isSuppressed": st.IsSuppressed,
		"removalQuota": st.Quota,
	})
	return nil
}

func (a *API) removeSuppression(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	idn, err := queryIdentity(r)
	if err != nil {
		return err
	}
	q, err := a.Contacts.RemoveSuppression(r.Context(), team.ID, idn)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Email removed from suppression list.", "removalQuota": q})
	return nil
}

func (a *API) createProperty(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	m, err := decodeObject(r, false)
	if err != nil {
		return err
	}
	name, err := optString(m, "name")
	if err != nil {
		return err
	}
	typ, err := optString(m, "type")
	if err != nil {
		return err
	}
	if err := a.Contacts.CreateProperty(r.Context(), team.ID, name, typ); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true})
	return nil
}

func (a *API) listProperties(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	list := r.URL.Query().Get("list")
	if list != "" && list != "all" && list != "custom" {
		return apperr.New(apperr.Invalid, "list must be all or custom.")
	}
	ps, err := a.Contacts.ListProperties(r.Context(), team.ID, list == "custom")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ps)
	return nil
}

func (a *API) listCustomFields(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	ps, err := a.Contacts.ListProperties(r.Context(), team.ID, true)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ps)
	return nil
}

func (a *API) listLists(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	ls, err := a.Contacts.Lists(r.Context(), team.ID)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(ls))
	for i, l := range ls {
		out[i] = l.JSON()
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) sendEvent(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	key := r.Header.Get("Idempotency-Key")
	if len(key) > 100 {
		return apperr.New(apperr.Invalid, "Idempotency-Key must be at most 100 characters.")
	}
	m, err := decodeObject(r, false)
	if err != nil {
		return err
	}
	if err := checkLengths(m); err != nil {
		return err
	}
	name, err := optString(m, "eventName")
	if err != nil {
		return err
	}
	if name == "" {
		return apperr.New(apperr.Invalid, "eventName is required.")
	}
	props, err := optObject(m, "eventProperties")
	if err != nil {
		return err
	}
	nested, err := optObject(m, "contactProperties")
	if err != nil {
		return err
	}
	delete(m, "eventName")
	delete(m, "eventProperties")
	delete(m, "contactProperties")
	for k, v := range nested {
		if _, set := m[k]; !set {
			m[k] = v
		}
	}
	in, err := upsertFrom(m)
	if err != nil {
		return err
	}
	if in.Email == "" && in.UserID == "" {
		return apperr.New(apperr.Invalid, "An email or userId is required.")
	}
	if _, err := a.Events.Send(r.Context(), team.ID, events.Send{Name: name, Contact: in, Properties: props, IdempotencyKey: key}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true})
	return nil
}

func (a *API) dedicatedIPs(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	writeJSON(w, http.StatusOK, a.DedicatedIPs)
	return nil
}
