package dashboard

import (
	"net/http"
	"strings"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
)

// propertyRow is one property on the properties page.
type propertyRow struct {
	contacts.Property
	Custom bool
}

type propertiesPage struct {
	Page
	Properties []propertyRow
	Types      []string
	Form       propertyForm
}

type propertyForm struct {
	Name, Type string
}

var propertyTypes = []string{contacts.TypeString, contacts.TypeNumber, contacts.TypeBoolean, contacts.TypeDate}

// handleProperties handles "GET /properties": built-in and custom contact
// properties, with a form to create a custom one.
func (d *Dashboard) handleProperties(w http.ResponseWriter, r *http.Request, u *User) {
	d.renderProperties(w, r, u, http.StatusOK, propertyForm{Type: contacts.TypeString}, "")
}

func (d *Dashboard) renderProperties(w http.ResponseWriter, r *http.Request, u *User, status int, f propertyForm, errMsg string) {
	ctx := r.Context()
	all, err := d.deps.Contacts.ListProperties(ctx, u.TeamID, false)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	custom, err := d.deps.Contacts.ListProperties(ctx, u.TeamID, true)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	isCustom := map[string]bool{}
	for _, p := range custom {
		isCustom[p.Key] = true
	}
	data := &propertiesPage{Page: d.page(r, "Contact properties", "properties"), Types: propertyTypes, Form: f}
	for _, p := range all {
		data.Properties = append(data.Properties, propertyRow{Property: p, Custom: isCustom[p.Key]})
	}
	data.Error = errMsg
	d.render(w, r, status, "properties", data)
}

// handlePropertyCreate handles "POST /properties".
func (d *Dashboard) handlePropertyCreate(w http.ResponseWriter, r *http.Request, u *User) {
	f := propertyForm{Name: strings.TrimSpace(r.PostFormValue("name")), Type: r.PostFormValue("type")}
	if err := d.deps.Contacts.CreateProperty(r.Context(), u.TeamID, f.Name, f.Type); err != nil {
		if msg, ok := apperr.Message(err); ok {
			d.renderProperties(w, r, u, http.StatusUnprocessableEntity, f, msg)
			return
		}
		d.serverError(w, r, err)
		return
	}
	redirect(w, r, withFlash("/properties", "The property "+f.Name+" was created."))
}
