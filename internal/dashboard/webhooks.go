package dashboard

import (
	"errors"
	"mime"
	"net/http"
	"strings"

	"github.com/emersion/go-message/mail"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/delivery"
	"github.com/lasso-mail/lasso/internal/emails"
	"github.com/lasso-mail/lasso/internal/webhooks"
)

// eventToggle is one event checkbox.
type eventToggle struct {
	Name string
	On   bool
}

// webhooksPage configures the team's endpoint and shows its deliveries.
type webhooksPage struct {
	Page
	Configured bool
	Endpoint   webhooks.Endpoint
	Events     []eventToggle
	Messages   []webhooks.Message
	URL        string
}

// secretFragment reveals the signing secret.
type secretFragment struct {
	Secret  string
	Rotated bool
}

// handleWebhooks handles "GET /webhooks".
func (d *Dashboard) handleWebhooks(w http.ResponseWriter, r *http.Request, u *User) {
	d.renderWebhooks(w, r, u, http.StatusOK, "", nil)
}

func (d *Dashboard) renderWebhooks(w http.ResponseWriter, r *http.Request, u *User, status int, errMsg string, form *webhooksPage) {
	ctx := r.Context()
	data := &webhooksPage{Page: d.page(r, "Webhooks", "webhooks")}
	ep, err := d.deps.Webhooks.Get(ctx, d.deps.DB, u.TeamID)
	switch {
	case err == nil:
		data.Configured, data.Endpoint, data.URL = true, ep, ep.URL
	case errors.Is(err, apperr.NotFound):
		ep.Events = webhooks.Events
	default:
		d.serverError(w, r, err)
		return
	}
	on := map[string]bool{}
	for _, e := range ep.Events {
		on[e] = true
	}
	if form != nil {
		data.URL = form.URL
		on = map[string]bool{}
		for _, e := range form.Events {
			on[e.Name] = e.On
		}
	}
	for _, e := range webhooks.Events {
		data.Events = append(data.Events, eventToggle{Name: e, On: on[e]})
	}
	if data.Messages, err = d.deps.Webhooks.Messages(ctx, u.TeamID, 50); err != nil {
		d.serverError(w, r, err)
		return
	}
	data.Error = errMsg
	d.render(w, r, status, "webhooks", data)
}

// handleWebhookSave handles "POST /webhooks".
func (d *Dashboard) handleWebhookSave(w http.ResponseWriter, r *http.Request, u *User) {
	_ = r.ParseForm()
	events := []string{}
	form := &webhooksPage{URL: r.PostFormValue("url")}
	chosen := map[string]bool{}
	for _, e := range r.PostForm["events"] {
		chosen[e] = true
	}
	for _, e := range webhooks.Events {
		if chosen[e] {
			events = append(events, e)
		}
		form.Events = append(form.Events, eventToggle{Name: e, On: chosen[e]})
	}
	if _, err := d.deps.Webhooks.Set(r.Context(), u.TeamID, form.URL, events); err != nil {
		if msg, ok := apperr.Message(err); ok {
			d.renderWebhooks(w, r, u, http.StatusUnprocessableEntity, msg, form)
			return
		}
		d.serverError(w, r, err)
		return
	}
	redirect(w, r, withFlash("/webhooks", "The webhook endpoint was saved."))
}

// handleWebhookEnabled handles "POST /webhooks/enabled".
func (d *Dashboard) handleWebhookEnabled(w http.ResponseWriter, r *http.Request, u *User) {
	on := r.PostFormValue("enabled") == "true"
	if err := d.deps.Webhooks.SetEnabled(r.Context(), u.TeamID, on); err != nil {
		d.fail(w, r, err)
		return
	}
	msg := "The webhook endpoint is paused."
	if on {
		msg = "The webhook endpoint is enabled."
	}
	redirect(w, r, withFlash("/webhooks", msg))
}

// handleWebhookSecret handles "POST /webhooks/secret" (htmx: reveal). A
// POST so that the CSRF check and same-origin rule apply to the secret.
func (d *Dashboard) handleWebhookSecret(w http.ResponseWriter, r *http.Request, u *User) {
	ep, err := d.deps.Webhooks.Get(r.Context(), d.deps.DB, u.TeamID)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.renderFragment(w, r, http.StatusOK, "webhooks", "secret", &secretFragment{Secret: ep.Secret})
}

// handleWebhookRotate handles "POST /webhooks/rotate".
func (d *Dashboard) handleWebhookRotate(w http.ResponseWriter, r *http.Request, u *User) {
	s, err := d.deps.Webhooks.RotateSecret(r.Context(), u.TeamID)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.renderFragment(w, r, http.StatusOK, "webhooks", "secret", &secretFragment{Secret: s, Rotated: true})
}

// handleWebhookTest handles "POST /webhooks/test".
func (d *Dashboard) handleWebhookTest(w http.ResponseWriter, r *http.Request, u *User) {
	if err := d.deps.Webhooks.SendTest(r.Context(), u.TeamID); err != nil {
		d.fail(w, r, err)
		return
	}
	if r.Header.Get("HX-Request") != "" {
		d.handleWebhookLog(w, r, u)
		return
	}
	redirect(w, r, withFlash("/webhooks", "A test event was queued."))
}

// handleWebhookLog handles "GET /webhooks/log" (htmx: the delivery log,
// polled while the page is open).
func (d *Dashboard) handleWebhookLog(w http.ResponseWriter, r *http.Request, u *User) {
	msgs, err := d.deps.Webhooks.Messages(r.Context(), u.TeamID, 50)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	d.renderFragment(w, r, http.StatusOK, "webhooks", "log", &webhooksPage{Page: d.page(r, "Webhooks", "webhooks"), Messages: msgs})
}

// handleWebhookRetry handles "POST /webhooks/retry/{id}": one more delivery
// of a message, with the same webhook-id.
func (d *Dashboard) handleWebhookRetry(w http.ResponseWriter, r *http.Request, u *User) {
	if err := d.deps.Webhooks.Retry(r.Context(), u.TeamID, r.PathValue("id")); err != nil {
		d.fail(w, r, err)
		return
	}
	if r.Header.Get("HX-Request") != "" {
		d.handleWebhookLog(w, r, u)
		return
	}
	redirect(w, r, withFlash("/webhooks", "The delivery was queued again."))
}

// capturedRow is a message of the local mailbox.
type capturedRow struct {
	delivery.CapturedMessage
	SendID string
}

// outboxPage lists recent sends and the local capture mailbox.
type outboxPage struct {
	Page
	Sends    []sendRow
	Capture  bool
	Captured []capturedRow
}

// handleOutbox handles "GET /outbox".
func (d *Dashboard) handleOutbox(w http.ResponseWriter, r *http.Request, u *User) {
	ctx := r.Context()
	data := &outboxPage{Page: d.page(r, "Outbox", "outbox"), Capture: d.deps.Capture != nil}
	sends, err := d.deps.Emails.Recent(ctx, u.TeamID, 50)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	for _, s := range sends {
		h, err := d.deps.Emails.History(ctx, s.ID)
		if err != nil {
			d.serverError(w, r, err)
			return
		}
		data.Sends = append(data.Sends, sendRow{Send: s, History: h})
	}
	if d.deps.Capture != nil {
		msgs, err := d.capturedOfTeam(r, u, 50)
		if err != nil {
			d.serverError(w, r, err)
			return
		}
		data.Captured = msgs
	}
	d.render(w, r, http.StatusOK, "outbox", data)
}

// capturedOfTeam lists the newest captured messages that belong to the
// user's team: the mailbox is shared by the installation, and a message's
// VERP return path names its send, whose team must match.
func (d *Dashboard) capturedOfTeam(r *http.Request, u *User, limit int) ([]capturedRow, error) {
	all, err := d.deps.Capture.List()
	if err != nil {
		return nil, err
	}
	var out []capturedRow
	for _, m := range all {
		if len(out) >= limit {
			break
		}
		id := emails.SendIDFromReturnPath(m.From)
		if id == "" {
			continue
		}
		x, err := d.deps.Emails.Get(r.Context(), d.deps.DB, id)
		if err != nil || x.TeamID != u.TeamID {
			continue
		}
		out = append(out, capturedRow{CapturedMessage: m, SendID: id})
	}
	return out, nil
}

// sendPage shows one send and its status history.
type sendPage struct {
	Page
	Send     emails.Send
	History  []emails.Event
	Captured []capturedRow
}

// handleSend handles "GET /outbox/{id}".
func (d *Dashboard) handleSend(w http.ResponseWriter, r *http.Request, u *User) {
	x, err := d.deps.Emails.Get(r.Context(), d.deps.DB, r.PathValue("id"))
	if err != nil || x.TeamID != u.TeamID {
		d.notFound(w, r)
		return
	}
	h, err := d.deps.Emails.History(r.Context(), x.ID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	data := &sendPage{Page: d.page(r, "Email to "+x.Recipient, "outbox"), Send: *x, History: h}
	if d.deps.Capture != nil {
		all, err := d.capturedOfTeam(r, u, 200)
		if err == nil {
			for _, c := range all {
				if c.SendID == x.ID {
					data.Captured = append(data.Captured, c)
				}
			}
		}
	}
	d.render(w, r, http.StatusOK, "send", data)
}

// capturedPage shows a captured message: headers, text and HTML preview.
type capturedPage struct {
	Page
	ID      string
	Headers [][2]string
	Text    string
	HasHTML bool
	Raw     string
}

func (d *Dashboard) readCaptured(r *http.Request, u *User) ([]byte, bool) {
	if d.deps.Capture == nil {
		return nil, false
	}
	id := r.PathValue("id")
	raw, err := d.deps.Capture.Read(id)
	if err != nil {
		return nil, false
	}
	mr, err := mail.CreateReader(strings.NewReader(string(raw)))
	if err != nil {
		return nil, false
	}
	rp := strings.Trim(mr.Header.Get("Return-Path"), "<>")
	sid := emails.SendIDFromReturnPath(rp)
	x, err := d.deps.Emails.Get(r.Context(), d.deps.DB, sid)
	if sid == "" || err != nil || x.TeamID != u.TeamID {
		return nil, false
	}
	return raw, true
}

// handleCaptured handles "GET /mailbox/{id}".
func (d *Dashboard) handleCaptured(w http.ResponseWriter, r *http.Request, u *User) {
	raw, ok := d.readCaptured(r, u)
	if !ok {
		d.notFound(w, r)
		return
	}
	data := &capturedPage{Page: d.page(r, "Captured message", "outbox"), ID: r.PathValue("id")}
	if len(raw) > 256<<10 {
		data.Raw = string(raw[:256<<10]) + "\n…"
	} else {
		data.Raw = string(raw)
	}
	text, html, hdr := parseMessage(raw)
	data.Text, data.HasHTML, data.Headers = text, html != "", hdr
	d.render(w, r, http.StatusOK, "captured", data)
}

// handleCapturedHTML handles "GET /mailbox/{id}/html": the HTML part, in a
// sandboxed frame with no script and no network access.
func (d *Dashboard) handleCapturedHTML(w http.ResponseWriter, r *http.Request, u *User) {
	raw, ok := d.readCaptured(r, u)
	if !ok {
		d.notFound(w, r)
		return
	}
	_, html, _ := parseMessage(raw)
	w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(html))
}

// parseMessage returns the text and HTML bodies and the main headers.
func parseMessage(raw []byte) (text, html string, hdr [][2]string) {
	mr, err := mail.CreateReader(strings.NewReader(string(raw)))
	if err != nil {
		return string(raw), "", nil
	}
	dec := new(mime.WordDecoder)
	for _, k := range []string{"From", "To", "Subject", "Date", "Message-Id", "X-Lasso-Send-Id", "DKIM-Signature"} {
		if v := mr.Header.Get(k); v != "" {
			if dv, err := dec.DecodeHeader(v); err == nil {
				v = dv
			}
			if len(v) > 120 {
				v = v[:120] + "…"
			}
			hdr = append(hdr, [2]string{k, v})
		}
	}
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		if _, ok := p.Header.(*mail.InlineHeader); !ok {
			continue
		}
		ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		b := new(strings.Builder)
		buf := make([]byte, 32<<10)
		for b.Len() < 1<<20 {
			n, rerr := p.Body.Read(buf)
			b.Write(buf[:n])
			if rerr != nil {
				break
			}
		}
		switch ct {
		case "text/plain", "":
			if text == "" {
				text = b.String()
			}
		case "text/html":
			if html == "" {
				html = b.String()
			}
		}
	}
	return text, html, hdr
}
