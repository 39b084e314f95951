package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/emails"
)

// listsPage lists mailing lists with a create form.
type listsPage struct {
	Page
	Lists []contacts.List
	Form  listForm
}

type listForm struct {
	Name, Description string
	Public            bool
}

// listRow is one list's row (shown, or as an inline edit form).
type listRow struct {
	CSRF  string
	List  contacts.List
	Error string
}

// handleLists handles "GET /lists".
func (d *Dashboard) handleLists(w http.ResponseWriter, r *http.Request, u *User) {
	d.renderLists(w, r, u, http.StatusOK, listForm{}, "")
}

func (d *Dashboard) renderLists(w http.ResponseWriter, r *http.Request, u *User, status int, f listForm, errMsg string) {
	lists, err := d.deps.Contacts.Lists(r.Context(), u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	data := &listsPage{Page: d.page(r, "Mailing lists", "lists"), Lists: lists, Form: f}
	data.Error = errMsg
	d.render(w, r, status, "lists", data)
}

// handleListCreate handles "POST /lists".
func (d *Dashboard) handleListCreate(w http.ResponseWriter, r *http.Request, u *User) {
	f := listForm{Name: r.PostFormValue("name"), Description: r.PostFormValue("description"), Public: r.PostFormValue("public") == "on"}
	if _, err := d.deps.Contacts.CreateList(r.Context(), u.TeamID, f.Name, f.Description, f.Public); err != nil {
		if msg, ok := apperr.Message(err); ok {
			d.renderLists(w, r, u, http.StatusUnprocessableEntity, f, msg)
			return
		}
		d.serverError(w, r, err)
		return
	}
	redirect(w, r, withFlash("/lists", "The list was created."))
}

// handleListEdit handles "GET /lists/{id}/edit" (htmx: the row as a form).
func (d *Dashboard) handleListEdit(w http.ResponseWriter, r *http.Request, u *User) {
	l, err := d.deps.Contacts.GetList(r.Context(), u.TeamID, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.renderFragment(w, r, http.StatusOK, "lists", "list_edit", &listRow{CSRF: csrfToken(r), List: l})
}

// handleListRow handles "GET /lists/{id}/row" (htmx: cancel an edit).
func (d *Dashboard) handleListRow(w http.ResponseWriter, r *http.Request, u *User) {
	l, err := d.deps.Contacts.GetList(r.Context(), u.TeamID, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.renderFragment(w, r, http.StatusOK, "lists", "list_row", &listRow{CSRF: csrfToken(r), List: l})
}

// handleListUpdate handles "POST /lists/{id}".
func (d *Dashboard) handleListUpdate(w http.ResponseWriter, r *http.Request, u *User) {
	id := r.PathValue("id")
	err := d.deps.Contacts.UpdateList(r.Context(), u.TeamID, id, r.PostFormValue("name"), r.PostFormValue("description"), r.PostFormValue("public") == "on")
	if err != nil && !errors.Is(err, apperr.NotFound) {
		if msg, ok := apperr.Message(err); ok && r.Header.Get("HX-Request") != "" {
			l, gerr := d.deps.Contacts.GetList(r.Context(), u.TeamID, id)
			if gerr != nil {
				d.fail(w, r, gerr)
				return
			}
			d.renderFragment(w, r, http.StatusUnprocessableEntity, "lists", "list_edit", &listRow{CSRF: csrfToken(r), List: l, Error: msg})
			return
		}
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if r.Header.Get("HX-Request") != "" {
		d.handleListRow(w, r, u)
		return
	}
	redirect(w, r, withFlash("/lists", "The list was saved."))
}

// handleListDelete handles "POST /lists/{id}/delete".
func (d *Dashboard) handleListDelete(w http.ResponseWriter, r *http.Request, u *User) {
	if err := d.deps.Contacts.DeleteList(r.Context(), u.TeamID, r.PathValue("id")); err != nil {
		d.fail(w, r, err)
		return
	}
	if r.Header.Get("HX-Request") != "" {
		w.WriteHeader(http.StatusOK) // htmx removes the row
		return
	}
	redirect(w, r, withFlash("/lists", "The list was deleted."))
}

// contactsPage is one page of the contacts table.
type contactsPage struct {
	Page
	Contacts []contacts.Contact
	Lists    []contacts.List
	Q        string
	ListID   string
	Status   string // "", subscribed, unsubscribed
	After    string
	Next     string
}

// handleContacts handles "GET /contacts": search by address prefix, filter
// by list and subscription, keyset pagination (no OFFSET, no COUNT).
func (d *Dashboard) handleContacts(w http.ResponseWriter, r *http.Request, u *User) {
	q := r.URL.Query()
	data := &contactsPage{Page: d.page(r, "Contacts", "contacts"), Q: q.Get("q"), ListID: q.Get("list"), Status: q.Get("status"), After: q.Get("after")}
	sq := contacts.SearchQuery{Email: data.Q, ListID: data.ListID, After: data.After}
	switch data.Status {
	case "subscribed", "unsubscribed":
		b := data.Status == "subscribed"
		sq.Subscribed = &b
	default:
		data.Status = ""
	}
	lists, err := d.deps.Contacts.Lists(r.Context(), u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	data.Lists = lists
	page, err := d.deps.Contacts.Search(r.Context(), u.TeamID, sq)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data.Contacts, data.Next = page.Contacts, page.Next
	if r.Header.Get("HX-Request") != "" && r.Header.Get("HX-Target") == "contacts-results" {
		d.renderFragment(w, r, http.StatusOK, "contacts", "results", data)
		return
	}
	d.render(w, r, http.StatusOK, "contacts", data)
}

// propRow is one property of a contact.
type propRow struct {
	Label, Key, Value string
}

// sendRow is one email sent, with its history.
type sendRow struct {
	Send    emails.Send
	History []emails.Event
}

// contactPage shows one contact.
type contactPage struct {
	Page
	Contact     *contacts.Contact
	Props       []propRow
	Lists       []contacts.List
	Events      []contactEvent
	Sends       []sendRow
	Suppression contacts.SuppressionStatus
}

// handleContact handles "GET /contacts/{id}".
func (d *Dashboard) handleContact(w http.ResponseWriter, r *http.Request, u *User) {
	ctx := r.Context()
	c, err := d.deps.Contacts.Get(ctx, u.TeamID, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := &contactPage{Page: d.page(r, c.Email, "contacts"), Contact: c}
	props, err := d.deps.Contacts.ListProperties(ctx, u.TeamID, true)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	labels := map[string]string{}
	for _, p := range props {
		labels[p.Key] = p.Label
	}
	for k, v := range c.Custom {
		if v == nil {
			continue
		}
		s := fmt.Sprint(v)
		if b, err := json.Marshal(v); err == nil {
			if _, isStr := v.(string); !isStr {
				s = string(b)
			}
		}
		data.Props = append(data.Props, propRow{Label: labels[k], Key: k, Value: s})
	}
	sort.Slice(data.Props, func(i, j int) bool { return data.Props[i].Key < data.Props[j].Key })
	all, err := d.deps.Contacts.Lists(ctx, u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	member := map[string]bool{}
	for _, id := range c.MailingLists {
		member[id] = true
	}
	for _, l := range all {
		if member[l.ID] {
			data.Lists = append(data.Lists, l)
		}
	}
	if data.Events, err = d.store.contactEvents(ctx, u.TeamID, c.ID, 20); err != nil {
		d.serverError(w, r, err)
		return
	}
	sendIDs, err := d.store.contactSendIDs(ctx, u.TeamID, c.ID, 20)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	for _, id := range sendIDs {
		x, err := d.deps.Emails.Get(ctx, d.deps.DB, id)
		if err != nil {
			d.serverError(w, r, err)
			return
		}
		h, err := d.deps.Emails.History(ctx, id)
		if err != nil {
			d.serverError(w, r, err)
			return
		}
		data.Sends = append(data.Sends, sendRow{Send: *x, History: h})
	}
	if data.Suppression, err = d.deps.Contacts.CheckSuppression(ctx, u.TeamID, contacts.Identity{Email: c.Email}); err != nil {
		d.serverError(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "contact", data)
}

// handleContactUnsuppress handles "POST /contacts/{id}/unsuppress": within
// the team's rolling 30-day removal quota.
func (d *Dashboard) handleContactUnsuppress(w http.ResponseWriter, r *http.Request, u *User) {
	c, err := d.deps.Contacts.Get(r.Context(), u.TeamID, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	q, err := d.deps.Contacts.RemoveSuppression(r.Context(), u.TeamID, contacts.Identity{Email: c.Email})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	redirect(w, r, withFlash("/contacts/"+c.ID, fmt.Sprintf("The suppression was removed (%d of %d removals left this month).", q.Remaining, q.Limit)))
}
