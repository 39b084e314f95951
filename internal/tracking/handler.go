package tracking

import (
	"context"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
)

// Deps are what Handler needs.
type Deps struct {
	Signer   *Signer
	Recorder Recorder
	// Logger receives Recorder errors; nil discards them.
	Logger *slog.Logger
	// Timeout bounds each Recorder call; 0 means 10 seconds. Calls are not
	// cancelled when the client goes away.
	Timeout time.Duration
}

// maxFormBody bounds POST bodies to the unsubscribe URL.
const maxFormBody = 64 << 10

// Handler serves the tracking and unsubscribe endpoints:
//
//	GET  /t/o/{sendID}/{sig}.gif       open pixel
//	GET  /t/c/{sendID}/{sig}?u={url}   click redirect
//	GET  /unsubscribe/{sendID}/{sig}   preferences page (never changes anything)
//	POST /unsubscribe/{sendID}/{sig}   one-click unsubscribe (RFC 8058) and the page's forms
//
// Mount it at "/t/" and "/unsubscribe/" of the server behind --public-url. If
// the public URL has a path, strip that prefix first (http.StripPrefix).
func Handler(d Deps) http.Handler {
	if d.Signer == nil || d.Recorder == nil {
		panic("tracking.Handler: Signer and Recorder are required")
	}
	h := &handler{Deps: d}
	if h.Logger == nil {
		h.Logger = slog.New(slog.DiscardHandler)
	}
	if h.Timeout <= 0 {
		h.Timeout = 10 * time.Second
	}
	h.subscriber, _ = d.Recorder.(ListSubscriber)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /t/o/", h.handleOpen)
	mux.HandleFunc("GET /t/o/{send}/{file}", h.handleOpen)
	mux.HandleFunc("GET /t/c/{send}/{sig}", h.handleClick)
	mux.HandleFunc("GET /unsubscribe/{send}/{sig}", h.handlePage)
	mux.HandleFunc("POST /unsubscribe/{send}/{sig}", h.handlePost)
	return mux
}

type handler struct {
	Deps
	subscriber ListSubscriber // nil when the Recorder is not one
}

// pixelGIF is a transparent 1×1 GIF.
var pixelGIF = [...]byte{
	'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0x80, 0, 0, // header, 1×1, 2-colour table
	0, 0, 0, 0xff, 0xff, 0xff, // colour table
	0x21, 0xf9, 4, 1, 0, 0, 0, 0, // graphic control: colour 0 transparent
	0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, // image descriptor
	2, 2, 0x44, 1, 0, // LZW data
	0x3b, // trailer
}

// handleOpen handles "GET /t/o/{sendID}/{sig}.gif". It answers with the same
// GIF whatever the path, and records only for a valid signature.
func (h *handler) handleOpen(w http.ResponseWriter, r *http.Request) {
	send, file := r.PathValue("send"), r.PathValue("file")
	if sig, ok := strings.CutSuffix(file, ".gif"); ok && r.Method == http.MethodGet && h.Signer.VerifyOpen(send, sig) {
		h.call(r, "opened", send, func(ctx context.Context) error { return h.Recorder.Opened(ctx, send) })
	}
	hd := w.Header()
	hd.Set("Content-Type", "image/gif")
	hd.Set("Content-Length", strconv.Itoa(len(pixelGIF)))
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(pixelGIF[:])
	}
}

// handleClick handles "GET /t/c/{sendID}/{sig}?u={url}": records the click
// and redirects, only when the signature covers exactly this send and URL.
// HEAD requests (link checkers) are redirected without recording.
func (h *handler) handleClick(w http.ResponseWriter, r *http.Request) {
	send, sig := r.PathValue("send"), r.PathValue("sig")
	us := r.URL.Query()["u"]
	if len(us) != 1 || !h.Signer.VerifyClick(send, us[0], sig) || !trackable(us[0]) {
		h.errorPage(w, http.StatusBadRequest, "This link is broken",
			"The link you followed is incomplete or was changed. Try opening it from the email again.")
		return
	}
	target := us[0]
	if r.Method == http.MethodGet {
		h.call(r, "clicked", send, func(ctx context.Context) error { return h.Recorder.Clicked(ctx, send, target) })
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, target, http.StatusFound)
}

// handlePage handles "GET /unsubscribe/{sendID}/{sig}": the preferences page.
// Mail clients and link scanners prefetch this URL, so it changes nothing.
func (h *handler) handlePage(w http.ResponseWriter, r *http.Request) {
	send, ok := h.verifyUnsubscribe(w, r)
	if !ok {
		return
	}
	var prefs Prefs
	err := h.call(r, "preferences", send, func(ctx context.Context) (err error) {
		prefs, err = h.Recorder.Preferences(ctx, send)
		return err
	})
	if err != nil {
		h.recorderErrorPage(w, err)
		return
	}
	h.render(w, http.StatusOK, h.prefsPage(prefs, flashes[r.URL.Query().Get("done")]))
}

// handlePost handles "POST /unsubscribe/{sendID}/{sig}". A body of
// "List-Unsubscribe=One-Click" (RFC 8058, urlencoded or multipart), or any
// POST without one of the page's actions, unsubscribes from everything and
// answers 200 with a short text. The page's forms post action=unsubscribe,
// resubscribe or update (with the checked list IDs as "list") and are
// redirected back to the page (303).
func (h *handler) handlePost(w http.ResponseWriter, r *http.Request) {
	send, ok := h.verifyUnsubscribe(w, r)
	if !ok {
		return
	}
	if r.Header.Get("Content-Type") == "" {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
	err := r.ParseForm()
	if err == nil {
		if err = r.ParseMultipartForm(maxFormBody); errors.Is(err, http.ErrNotMultipart) {
			err = nil
		}
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.errorPage(w, http.StatusRequestEntityTooLarge, "Request too large", "The form sent too much data.")
			return
		}
		h.errorPage(w, http.StatusBadRequest, "Bad request", "The form could not be read.")
		return
	}
	if r.MultipartForm != nil {
		defer r.MultipartForm.RemoveAll()
	}
	form := r.PostForm

	action := form.Get("action")
	if form.Get("List-Unsubscribe") == "One-Click" || action == "" {
		err = h.call(r, "unsubscribe", send, func(ctx context.Context) error { return h.Recorder.Unsubscribe(ctx, send, "") })
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		switch {
		case err == nil:
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("You have been unsubscribed.\n"))
		case errors.Is(err, apperr.NotFound):
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte("Unknown subscription.\n"))
		default:
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("Something went wrong. Please try again later.\n"))
		}
		return
	}

	done := ""
	switch action {
	case "unsubscribe":
		done = "unsubscribed"
		err = h.call(r, "unsubscribe", send, func(ctx context.Context) error { return h.Recorder.Unsubscribe(ctx, send, "") })
	case "resubscribe":
		done = "resubscribed"
		err = h.call(r, "resubscribe", send, func(ctx context.Context) error { return h.Recorder.Resubscribe(ctx, send) })
	case "update":
		done = "saved"
		err = h.updateLists(r, send, form["list"])
	default:
		h.errorPage(w, http.StatusBadRequest, "Unknown action", "The form sent an action this page does not know.")
		return
	}
	if err != nil {
		h.recorderErrorPage(w, err)
		return
	}
	// Post/Redirect/Get back to the page. A query-only reference resolves
	// against the current path, whatever prefix the handler is mounted at.
	w.Header().Set("Location", "?done="+done)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusSeeOther)
}

// updateLists applies the checked boxes of the page's list form: leaves the
// lists that are unchecked and joins (with a ListSubscriber) the ones newly
// checked. IDs that are not public lists of the team are ignored.
func (h *handler) updateLists(r *http.Request, send string, checked []string) error {
	var prefs Prefs
	err := h.call(r, "preferences", send, func(ctx context.Context) (err error) {
		prefs, err = h.Recorder.Preferences(ctx, send)
		return err
	})
	if err != nil {
		return err
	}
	want := make(map[string]bool, len(checked))
	for _, id := range checked {
		want[id] = true
	}
	for _, l := range prefs.Lists {
		switch {
		case l.Member && !want[l.ID]:
			err = h.call(r, "unsubscribe list", send, func(ctx context.Context) error { return h.Recorder.Unsubscribe(ctx, send, l.ID) })
		case !l.Member && want[l.ID] && h.subscriber != nil:
			err = h.call(r, "subscribe list", send, func(ctx context.Context) error { return h.subscriber.SubscribeList(ctx, send, l.ID) })
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (h *handler) verifyUnsubscribe(w http.ResponseWriter, r *http.Request) (string, bool) {
	send, sig := r.PathValue("send"), r.PathValue("sig")
	if !h.Signer.VerifyUnsubscribe(send, sig) {
		h.errorPage(w, http.StatusBadRequest, "This link is broken",
			"The unsubscribe link you followed is incomplete or was changed. Try opening it from the email again.")
		return "", false
	}
	return send, true
}

// call runs a Recorder method with the handler's timeout, detached from the
// client's connection so that a recorded action is not half done, and logs
// its error.
func (h *handler) call(r *http.Request, what, send string, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h.Timeout)
	defer cancel()
	err := f(ctx)
	if err != nil {
		level := slog.LevelError
		if errors.Is(err, apperr.NotFound) {
			level = slog.LevelWarn
		}
		h.Logger.LogAttrs(ctx, level, "tracking: "+what+" failed", slog.String("send_id", send), slog.Any("err", err))
	}
	return err
}

func (h *handler) recorderErrorPage(w http.ResponseWriter, err error) {
	if errors.Is(err, apperr.NotFound) {
		h.errorPage(w, http.StatusNotFound, "Subscription not found",
			"We could not find the subscription this link belongs to. It may have been deleted.")
		return
	}
	h.errorPage(w, http.StatusInternalServerError, "Something went wrong",
		"We could not complete your request. Please try again later.")
}

// ---- pages ----

var flashes = map[string]string{
	"unsubscribed": "You have been unsubscribed from all emails.",
	"resubscribed": "You are subscribed again.",
	"saved":        "Your preferences have been saved.",
}

type pageData struct {
	Title   string
	Message string // error pages
	Flash   string
	Prefs   *Prefs
	Lists   []pageList
}

type pageList struct {
	PrefList
	InputID string
}

func (h *handler) prefsPage(p Prefs, flash string) pageData {
	d := pageData{Title: "Email preferences", Flash: flash, Prefs: &p}
	for i, l := range p.Lists {
		if !l.Member && h.subscriber == nil {
			continue
		}
		d.Lists = append(d.Lists, pageList{PrefList: l, InputID: "list-" + strconv.Itoa(i)})
	}
	return d
}

func (h *handler) errorPage(w http.ResponseWriter, status int, title, msg string) {
	h.render(w, status, pageData{Title: title, Message: msg})
}

func (h *handler) render(w http.ResponseWriter, status int, d pageData) {
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Robots-Tag", "noindex, nofollow")
	w.WriteHeader(status)
	if err := pageTemplate.Execute(w, d); err != nil {
		h.Logger.Error("tracking: render page", slog.Any("err", err))
	}
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<title>{{.Title}}</title>
<style>
:root{color-scheme:light dark;--bg:#f3f4f6;--card:#fff;--text:#111827;--muted:#4b5563;--line:#d1d5db;--accent:#1d4ed8;--on-accent:#fff;--ok-bg:#ecfdf5;--ok:#065f46}
@media (prefers-color-scheme:dark){:root{--bg:#111827;--card:#1f2937;--text:#f9fafb;--muted:#d1d5db;--line:#4b5563;--accent:#93c5fd;--on-accent:#111827;--ok-bg:#064e3b;--ok:#d1fae5}}
*{box-sizing:border-box}
body{margin:0;padding:24px 16px;background:var(--bg);color:var(--text);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
main{max-width:30rem;margin:0 auto;background:var(--card);border:1px solid var(--line);border-radius:12px;padding:24px}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 12px}
p{margin:0 0 16px}
.status{background:var(--ok-bg);color:var(--ok);border-radius:8px;padding:12px 16px}
fieldset{border:1px solid var(--line);border-radius:8px;padding:4px 16px 8px;margin:0 0 16px}
legend{font-weight:600;padding:0 4px}
.opt{display:flex;gap:12px;align-items:flex-start;padding:8px 0}
.opt input{width:1.5rem;height:1.5rem;margin:0;flex:none;accent-color:var(--accent)}
.opt label{font-weight:500;cursor:pointer}
.opt span{display:block;color:var(--muted);font-size:.875rem}
button{display:block;width:100%;min-height:48px;padding:12px 16px;border:2px solid var(--accent);border-radius:8px;font:inherit;font-weight:600;cursor:pointer}
.primary{background:var(--accent);color:var(--on-accent)}
.secondary{background:transparent;color:var(--accent)}
button:focus-visible,input:focus-visible{outline:3px solid var(--text);outline-offset:2px}
form+form{margin-top:16px}
</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{- if .Message}}
<p>{{.Message}}</p>
{{- end}}
{{- if .Flash}}
<p class="status" role="status">{{.Flash}}</p>
{{- end}}
{{- with .Prefs}}
{{- if .Subscribed}}
<p>You receive emails from us at <strong>{{.Email}}</strong>.</p>
{{- if $.Lists}}
<form method="post">
<input type="hidden" name="action" value="update">
<fieldset>
<legend>Mailing lists</legend>
{{- range $.Lists}}
<div class="opt">
<input type="checkbox" id="{{.InputID}}" name="list" value="{{.ID}}"{{if .Member}} checked{{end}}{{if .Description}} aria-describedby="{{.InputID}}-desc"{{end}}>
<div><label for="{{.InputID}}">{{.Name}}</label>{{if .Description}}<span id="{{.InputID}}-desc">{{.Description}}</span>{{end}}</div>
</div>
{{- end}}
</fieldset>
<button type="submit" class="secondary">Save preferences</button>
</form>
{{- end}}
<form method="post">
<input type="hidden" name="action" value="unsubscribe">
<button type="submit" class="primary">Unsubscribe from all emails</button>
</form>
{{- else}}
<p><strong>{{.Email}}</strong> is unsubscribed from all emails.</p>
<form method="post">
<input type="hidden" name="action" value="resubscribe">
<button type="submit" class="primary">Resubscribe</button>
</form>
{{- end}}
{{- end}}
</main>
</body>
</html>
`))
