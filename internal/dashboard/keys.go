package dashboard

import (
	"net/http"
	"net/mail"
	"strings"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/senders"
)

// homePage is the overview.
type homePage struct {
	Page
	Keys      int
	Domains   []senders.Domain
	Lists     int
	Verified  int
	Captured  bool
	PublicURL string
}

// handleHome handles "GET /".
func (d *Dashboard) handleHome(w http.ResponseWriter, r *http.Request, u *User) {
	ctx := r.Context()
	keys, err := d.deps.Accounts.ListKeys(ctx, u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	doms, err := d.deps.Senders.Domains(ctx, u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	lists, err := d.deps.Contacts.Lists(ctx, u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	data := &homePage{Page: d.page(r, "Overview", "home"), Domains: doms, Lists: len(lists), Captured: d.deps.Capture != nil, PublicURL: d.deps.PublicURL}
	for _, k := range keys {
		if k.RevokedAt == nil {
			data.Keys++
		}
	}
	for _, dm := range doms {
		if dm.Verified {
			data.Verified++
		}
	}
	d.render(w, r, http.StatusOK, "home", data)
}

// teamPage lists the team's users and invitations.
type teamPage struct {
	Page
	Users      []User
	Invites    []Invite
	InviteLink string
	IsOwner    bool
}

// handleTeam handles "GET /team".
func (d *Dashboard) handleTeam(w http.ResponseWriter, r *http.Request, u *User) {
	d.renderTeam(w, r, u, http.StatusOK, "", "")
}

func (d *Dashboard) renderTeam(w http.ResponseWriter, r *http.Request, u *User, status int, link, errMsg string) {
	users, err := d.store.teamUsers(r.Context(), u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	inv, err := d.store.invites(r.Context(), u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	data := &teamPage{Page: d.page(r, "Team", "team"), Users: users, Invites: inv, InviteLink: link, IsOwner: u.Role == roleOwner}
	data.Error = errMsg
	d.render(w, r, status, "team", data)
}

// handleInviteCreate handles "POST /team/invites" (owners only).
func (d *Dashboard) handleInviteCreate(w http.ResponseWriter, r *http.Request, u *User) {
	if u.Role != roleOwner {
		d.notFoundOr(w, r, http.StatusForbidden, "Only the team's owners can invite people.")
		return
	}
	email := normEmail(r.PostFormValue("email"))
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email {
		d.renderTeam(w, r, u, http.StatusUnprocessableEntity, "", "Enter a valid email address to invite.")
		return
	}
	role := roleMember
	if r.PostFormValue("role") == roleOwner {
		role = roleOwner
	}
	tok, err := d.store.newInvite(r.Context(), u.TeamID, email, role, u.ID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	d.renderTeam(w, r, u, http.StatusOK, strings.TrimSuffix(d.deps.PublicURL, "/")+"/invite/"+tok, "")
}

// keysPage lists API keys; NewKey is set once, right after creation.
type keysPage struct {
	Page
	Keys    []accounts.Key
	NewKey  string
	NewName string
	APIBase string
}

// handleKeys handles "GET /keys".
func (d *Dashboard) handleKeys(w http.ResponseWriter, r *http.Request, u *User) {
	d.renderKeys(w, r, u, http.StatusOK, "", "")
}

func (d *Dashboard) renderKeys(w http.ResponseWriter, r *http.Request, u *User, status int, secret, name string) {
	keys, err := d.deps.Accounts.ListKeys(r.Context(), u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	// Newest first reads better; the service sorts oldest first.
	for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
		keys[i], keys[j] = keys[j], keys[i]
	}
	d.render(w, r, status, "keys", &keysPage{Page: d.page(r, "API keys", "keys"), Keys: keys, NewKey: secret, NewName: name,
		APIBase: strings.TrimSuffix(d.deps.PublicURL, "/") + "/api/v1"})
}

// handleKeyCreate handles "POST /keys": the key is shown once, in the
// response to this request, and never stored in clear.
func (d *Dashboard) handleKeyCreate(w http.ResponseWriter, r *http.Request, u *User) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	if len(name) > 100 {
		name = name[:100]
	}
	secret, k, err := d.deps.Accounts.CreateKey(r.Context(), u.TeamID, name)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.renderKeys(w, r, u, http.StatusOK, secret, k.Name)
}

// handleKeyRevoke handles "POST /keys/{id}/revoke".
func (d *Dashboard) handleKeyRevoke(w http.ResponseWriter, r *http.Request, u *User) {
	id := r.PathValue("id")
	keys, err := d.deps.Accounts.ListKeys(r.Context(), u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	found := false
	for _, k := range keys {
		if k.ID == id && k.RevokedAt == nil {
			found = true
		}
	}
	if !found {
		d.notFound(w, r)
		return
	}
	if err := d.deps.Accounts.RevokeKey(r.Context(), id); err != nil {
		d.fail(w, r, err)
		return
	}
	redirect(w, r, withFlash("/keys", "The key was revoked."))
}
