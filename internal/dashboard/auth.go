package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"golang.org/x/crypto/argon2"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
)

// argon2id parameters (OWASP minimum: 19 MiB, 2 passes, 1 lane).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32

	minPasswordLen = 10
)

// hashPassword returns a PHC-format argon2id hash.
func hashPassword(pw string) string {
	var salt [16]byte
	_, _ = rand.Read(salt[:])
	key := argon2.IDKey([]byte(pw), salt[:], argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads, b64.EncodeToString(salt[:]), b64.EncodeToString(key))
}

// checkPassword reports whether pw matches the PHC hash.
func checkPassword(hash, pw string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var m uint32
	var t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	want, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// dummyHash is checked against when the user does not exist, so that a
// login takes as long whether or not the address is known.
var dummyHash = hashPassword("lasso-dummy-password")

const (
	sessionCookie = "lasso_session"
	csrfCookie    = "lasso_csrf"
	csrfField     = "csrf"
	csrfHeader    = "X-CSRF-Token"
)

type ctxKey int

const (
	sessionKey ctxKey = iota
	preCSRFKey
)

func sessionFrom(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey).(*session)
	return s
}

// csrfToken returns the token forms and htmx must send with this request's
// page: the session's, or the pre-session double-submit cookie.
func csrfToken(r *http.Request) string {
	if s := sessionFrom(r.Context()); s != nil {
		return s.CSRF
	}
	t, _ := r.Context().Value(preCSRFKey).(string)
	return t
}

func (d *Dashboard) cookie(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		Secure: d.secure, SameSite: http.SameSiteLaxMode}
}

// authenticate loads the session, issues the pre-session CSRF cookie, and
// rejects unsafe requests whose CSRF token does not match.
func (d *Dashboard) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
			s, err := d.store.session(ctx, c.Value)
			if err != nil {
				d.serverError(w, r, err)
				return
			}
			if s == nil {
				http.SetCookie(w, d.cookie(sessionCookie, "", -1))
			} else {
				ctx = context.WithValue(ctx, sessionKey, s)
			}
		}
		pre := ""
		if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
			pre = c.Value
		} else {
			pre = randomToken()
			http.SetCookie(w, d.cookie(csrfCookie, pre, 0))
		}
		ctx = context.WithValue(ctx, preCSRFKey, pre)
		r = r.WithContext(ctx)

		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if !d.csrfOK(r) {
				d.log.InfoContext(ctx, "csrf rejected", slog.String("path", r.URL.Path))
				http.Error(w, "Invalid or missing CSRF token. Reload the page and try again.", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (d *Dashboard) csrfOK(r *http.Request) bool {
	got := r.Header.Get(csrfHeader)
	if got == "" && strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		// The upload handler streams its body and checks the token, sent
		// as the first form part, before it reads the file. Nothing else
		// accepts multipart bodies.
		return r.URL.Path == "/imports" && sessionFrom(r.Context()) != nil
	}
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	want := csrfToken(r)
	return got != "" && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// requireUser wraps handlers that need a logged-in user.
func (d *Dashboard) requireUser(h func(w http.ResponseWriter, r *http.Request, u *User)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := sessionFrom(r.Context())
		if s == nil {
			d.redirectToLogin(w, r)
			return
		}
		h(w, r, &s.User)
	}
}

func (d *Dashboard) redirectToLogin(w http.ResponseWriter, r *http.Request) {
	to := "/login"
	if r.Method == http.MethodGet && r.URL.Path != "/" {
		to += "?next=" + urlQueryEscape(r.URL.RequestURI())
	}
	if r.Header.Get("HX-Request") != "" {
		w.Header().Set("HX-Redirect", to)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// clientIP is the remote address (the dashboard trusts no forwarding header
// for throttling unless the operator puts it behind a proxy that rewrites
// RemoteAddr).
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// loginPage is the login form.
type loginPage struct {
	Page
	Email string
	Next  string
}

// handleLogin handles "GET /login".
func (d *Dashboard) handleLogin(w http.ResponseWriter, r *http.Request) {
	if sessionFrom(r.Context()) != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if n, err := d.store.userCount(r.Context()); err == nil && n == 0 {
		d.render(w, r, http.StatusOK, "setup_needed", &setupNeededPage{Page: d.page(r, "Set up Lasso", "")})
		return
	}
	d.render(w, r, http.StatusOK, "login", &loginPage{Page: d.page(r, "Log in", ""), Next: safeNext(r.URL.Query().Get("next"))})
}

// handleLoginPost handles "POST /login".
func (d *Dashboard) handleLoginPost(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	email := normEmail(r.PostFormValue("email"))
	pw := r.PostFormValue("password")
	data := &loginPage{Page: d.page(r, "Log in", ""), Email: email, Next: safeNext(r.PostFormValue("next"))}
	emailKey, ipKey := "email:"+email, "ip:"+clientIP(r)
	for _, k := range []struct {
		key   string
		limit int
	}{{emailKey, d.deps.LoginLimit}, {ipKey, 4 * d.deps.LoginLimit}} {
		n, err := d.store.loginFailures(ctx, k.key, d.deps.LoginWindow)
		if err != nil {
			d.serverError(w, r, err)
			return
		}
		if n >= k.limit {
			data.Error = fmt.Sprintf("Too many failed attempts. Try again in %d minutes.", int(d.deps.LoginWindow.Minutes()))
			d.log.WarnContext(ctx, "login throttled", slog.String("ip", clientIP(r)))
			d.render(w, r, http.StatusTooManyRequests, "login", data)
			return
		}
	}
	u, hash, err := d.store.userByEmail(ctx, email)
	if err != nil && !errors.Is(err, apperr.NotFound) {
		d.serverError(w, r, err)
		return
	}
	if err != nil {
		hash = dummyHash
	}
	if !checkPassword(hash, pw) || err != nil {
		if ferr := d.store.recordLoginFailure(ctx, d.deps.LoginWindow, emailKey, ipKey); ferr != nil {
			d.serverError(w, r, ferr)
			return
		}
		data.Error = "Wrong email address or password."
		d.render(w, r, http.StatusUnauthorized, "login", data)
		return
	}
	_ = d.store.clearLoginFailures(ctx, emailKey)
	d.startSession(w, r, u.ID, data.Next)
}

func (d *Dashboard) startSession(w http.ResponseWriter, r *http.Request, userID, next string) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		_ = d.store.deleteSession(r.Context(), c.Value)
	}
	tok, err := d.store.newSession(r.Context(), userID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	http.SetCookie(w, d.cookie(sessionCookie, tok, int(sessionTTL.Seconds())))
	if next == "" {
		next = "/"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// safeNext keeps only local paths as redirect targets.
func safeNext(s string) string {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "/\\") {
		return ""
	}
	return s
}

// handleLogout handles "POST /logout".
func (d *Dashboard) handleLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		_ = d.store.deleteSession(r.Context(), c.Value)
	}
	http.SetCookie(w, d.cookie(sessionCookie, "", -1))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

type setupNeededPage struct{ Page }

// setupPage is the first-run form.
type setupPage struct {
	Page
	Token    string
	TeamName string
	Email    string
	Name     string
}

// handleSetup handles "GET /setup".
func (d *Dashboard) handleSetup(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("token")
	ok, err := d.store.setupTokenValid(r.Context(), tok)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	if !ok {
		d.render(w, r, http.StatusNotFound, "setup_needed", &setupNeededPage{Page: d.page(r, "Set up Lasso", "")})
		return
	}
	d.render(w, r, http.StatusOK, "setup", &setupPage{Page: d.page(r, "Set up Lasso", ""), Token: tok})
}

// handleSetupPost handles "POST /setup".
func (d *Dashboard) handleSetupPost(w http.ResponseWriter, r *http.Request) {
	data := &setupPage{Page: d.page(r, "Set up Lasso", ""), Token: r.PostFormValue("token"),
		TeamName: strings.TrimSpace(r.PostFormValue("team")), Email: normEmail(r.PostFormValue("email")), Name: strings.TrimSpace(r.PostFormValue("name"))}
	pw := r.PostFormValue("password")
	if msg := validateAccount(data.Email, pw, r.PostFormValue("password2")); msg != "" {
		data.Error = msg
	} else if data.TeamName == "" {
		data.Error = "Name your team."
	}
	if data.Error != "" {
		d.render(w, r, http.StatusUnprocessableEntity, "setup", data)
		return
	}
	u, err := d.store.setup(r.Context(), data.Token, data.TeamName, data.Email, data.Name, hashPassword(pw))
	if err != nil {
		if msg, ok := apperr.Message(err); ok {
			data.Error = msg
			d.render(w, r, http.StatusConflict, "setup", data)
			return
		}
		d.serverError(w, r, err)
		return
	}
	d.log.InfoContext(r.Context(), "dashboard set up", slog.String("team_id", u.TeamID), slog.String("user_id", u.ID))
	d.startSession(w, r, u.ID, "/")
}

func validateAccount(email, pw, pw2 string) string {
	if _, err := contacts.NormalizeEmail(email); err != nil {
		return "Enter a valid email address."
	}
	if len(pw) < minPasswordLen {
		return fmt.Sprintf("Choose a password of at least %d characters.", minPasswordLen)
	}
	if pw != pw2 {
		return "The two passwords differ."
	}
	return ""
}

// invitePage is the form that accepts an invitation.
type invitePage struct {
	Page
	Token    string
	TeamName string
	Email    string
	Name     string
}

// handleInvite handles "GET /invite/{token}".
func (d *Dashboard) handleInvite(w http.ResponseWriter, r *http.Request) {
	tok := r.PathValue("token")
	_, team, email, _, err := d.store.invite(r.Context(), tok)
	data := &invitePage{Page: d.page(r, "Join a team", ""), Token: tok, TeamName: team, Email: email}
	if err != nil {
		if !errors.Is(err, apperr.NotFound) {
			d.serverError(w, r, err)
			return
		}
		data.Error = "This invitation is not valid (any more). Ask for a new one."
		d.render(w, r, http.StatusNotFound, "invite", data)
		return
	}
	d.render(w, r, http.StatusOK, "invite", data)
}

// handleInvitePost handles "POST /invite/{token}".
func (d *Dashboard) handleInvitePost(w http.ResponseWriter, r *http.Request) {
	tok := r.PathValue("token")
	_, team, email, _, err := d.store.invite(r.Context(), tok)
	data := &invitePage{Page: d.page(r, "Join a team", ""), Token: tok, TeamName: team, Email: email, Name: strings.TrimSpace(r.PostFormValue("name"))}
	if err != nil {
		data.Error = "This invitation is not valid (any more). Ask for a new one."
		d.render(w, r, http.StatusNotFound, "invite", data)
		return
	}
	pw := r.PostFormValue("password")
	if msg := validateAccount(email, pw, r.PostFormValue("password2")); msg != "" {
		data.Error = msg
		d.render(w, r, http.StatusUnprocessableEntity, "invite", data)
		return
	}
	u, err := d.store.acceptInvite(r.Context(), tok, data.Name, hashPassword(pw))
	if err != nil {
		if msg, ok := apperr.Message(err); ok {
			data.Error = msg
			d.render(w, r, http.StatusConflict, "invite", data)
			return
		}
		d.serverError(w, r, err)
		return
	}
	d.startSession(w, r, u.ID, "/")
}
