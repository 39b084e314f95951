package dashboard

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
)

// Page is what every page's data struct embeds: the layout's fields.
type Page struct {
	Title  string
	Active string // nav entry
	User   *User
	CSRF   string
	Flash  string
	Error  string
}

func (d *Dashboard) page(r *http.Request, title, active string) Page {
	p := Page{Title: title, Active: active, CSRF: csrfToken(r)}
	if s := sessionFrom(r.Context()); s != nil {
		p.User = &s.User
	}
	p.Flash = r.URL.Query().Get("flash")
	return p
}

// pages holds one template set per page: the layout, the shared partials
// and the page's own file.
type pages struct {
	sets map[string]*template.Template
}

var funcs = template.FuncMap{
	"ago": func(t any) string {
		var tt time.Time
		switch v := t.(type) {
		case time.Time:
			tt = v
		case *time.Time:
			if v == nil {
				return "never"
			}
			tt = *v
		default:
			return ""
		}
		if tt.IsZero() {
			return "never"
		}
		dur := time.Since(tt)
		switch {
		case dur < time.Minute:
			return "just now"
		case dur < time.Hour:
			return fmt.Sprintf("%d min ago", int(dur.Minutes()))
		case dur < 48*time.Hour:
			return fmt.Sprintf("%d h ago", int(dur.Hours()))
		}
		return tt.Format("2 Jan 2006")
	},
	"datetime": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"iso":      func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"derefInt": func(p *int) string {
		if p == nil {
			return "–"
		}
		return fmt.Sprint(*p)
	},
	"statusClass": func(s string) string {
		switch strings.ToLower(s) {
		case "ok", "delivered", "verified", "sent", "opened", "clicked", "done", "active", "subscribed":
			return "ok"
		case "pending", "queued", "deferred", "running", "checking", "draft", "paused":
			return "wait"
		}
		return "bad"
	},
	"pct": func(a, b int64) int64 {
		if b <= 0 {
			return 0
		}
		return a * 100 / b
	},
	"humanStatus": func(s string) string { return strings.ReplaceAll(s, "_", " ") },
	"query": func(kv ...string) template.URL {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				v.Set(kv[i], kv[i+1])
			}
		}
		return template.URL(v.Encode())
	},
	"hxHeaders": func(csrf string) string { return `{"` + csrfHeader + `":"` + csrf + `"}` },
	"rowOf":     func(csrf string, l contacts.List) *listRow { return &listRow{CSRF: csrf, List: l} },
}

func mustParsePages() *pages {
	base := template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	p := &pages{sets: map[string]*template.Template{}}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		p.sets[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, n))
	}
	return p
}

// render writes a whole page (layout + content), or, for an htmx request
// that targets a fragment, the named block given in HX-Target-less calls
// via renderFragment.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	d.execute(w, r, status, name, "layout", data)
}

// renderFragment writes one named template of a page's set (htmx swaps).
func (d *Dashboard) renderFragment(w http.ResponseWriter, r *http.Request, status int, name, block string, data any) {
	d.execute(w, r, status, name, block, data)
}

func (d *Dashboard) execute(w http.ResponseWriter, r *http.Request, status int, name, block string, data any) {
	t, ok := d.pages.sets[name]
	if !ok {
		d.serverError(w, r, fmt.Errorf("no template %q", name))
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, block, data); err != nil {
		d.serverError(w, r, fmt.Errorf("render %s/%s: %w", name, block, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

func (d *Dashboard) serverError(w http.ResponseWriter, r *http.Request, err error) {
	d.log.ErrorContext(r.Context(), "dashboard error", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	http.Error(w, "Something went wrong on our side. Try again, and check the server log.", http.StatusInternalServerError)
}

// fail maps a domain error to a response: the client-facing message with
// its status, or a 500 for anything unexpected.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	msg, ok := apperr.Message(err)
	if !ok {
		d.serverError(w, r, err)
		return
	}
	status := http.StatusBadRequest
	switch {
	case errors.Is(err, apperr.NotFound):
		status = http.StatusNotFound
	case errors.Is(err, apperr.Conflict):
		status = http.StatusConflict
	case errors.Is(err, apperr.Forbidden):
		status = http.StatusForbidden
	}
	d.notFoundOr(w, r, status, msg)
}

type errorPage struct {
	Page
	Status  int
	Message string
}

func (d *Dashboard) notFoundOr(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if r.Header.Get("HX-Request") != "" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, `<p class="alert alert-error" role="alert">%s</p>`, template.HTMLEscapeString(msg))
		return
	}
	d.render(w, r, status, "error", &errorPage{Page: d.page(r, http.StatusText(status), ""), Status: status, Message: msg})
}

func (d *Dashboard) notFound(w http.ResponseWriter, r *http.Request) {
	d.notFoundOr(w, r, http.StatusNotFound, "This page does not exist, or it belongs to another team.")
}

// redirect answers a form post: a 303 for a full page, HX-Redirect for htmx.
func redirect(w http.ResponseWriter, r *http.Request, to string) {
	if r.Header.Get("HX-Request") != "" {
		w.Header().Set("HX-Redirect", to)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

func withFlash(p, msg string) string { return p + "?flash=" + url.QueryEscape(msg) }

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
