// Package tracking does open and click tracking and unsubscribing for
// campaign and workflow email (transactional email is never tracked, spec §14).
//
// It has three parts, none of which touches storage:
//
//   - Signer makes and checks the HMAC-signed URLs: the open pixel
//     {base}/t/o/{sendID}/{sig}.gif, the click redirect
//     {base}/t/c/{sendID}/{sig}?u={url} (the signature covers the target, so
//     there is no open redirect) and the unsubscribe page
//     {base}/unsubscribe/{sendID}/{sig}, which is also the RFC 8058 one-click
//     POST target for the List-Unsubscribe header.
//   - Rewrite adds click tracking and the open pixel to a rendered HTML body,
//     once per recipient.
//   - Handler serves those URLs and reports what recipients do to a Recorder,
//     which the application implements (and which emits the email.opened,
//     email.clicked, email.unsubscribed and email.resubscribed webhooks of
//     spec §7.4).
//
// A sendID identifies one email to one recipient; the signed URL is the only
// credential the endpoints need (no cookies, no login).
package tracking

import (
	"context"
	"strings"
	"unicode/utf8"
)

// Recorder applies what recipients do. sendID identifies one email to one
// recipient. Errors of Opened and Clicked are logged, never shown.
type Recorder interface {
	// Opened records that the open pixel of the send was loaded. It is
	// called on every load; deduplicating is up to the implementation.
	Opened(ctx context.Context, sendID string) error
	// Clicked records a click on url in the send. It is called on every
	// click, before the redirect.
	Clicked(ctx context.Context, sendID, url string) error
	// Unsubscribe unsubscribes the recipient of the send (from everything, or
	// from one mailing list when listID != ""). It must be idempotent:
	// mailbox providers may repeat a one-click POST. Returns apperr.NotFound
	// for unknown sends.
	Unsubscribe(ctx context.Context, sendID, listID string) error
	// Resubscribe subscribes the recipient of the send again. Returns
	// apperr.NotFound for unknown sends.
	Resubscribe(ctx context.Context, sendID string) error
	// Preferences describes the recipient for the preferences page: masked
	// email, subscribed state, and the team's public lists with membership.
	// Returns apperr.NotFound for unknown sends.
	Preferences(ctx context.Context, sendID string) (Prefs, error)
}

// ListSubscriber is an optional interface of a Recorder: when implemented,
// the preferences page also offers the public lists the recipient is not on,
// and checking one calls SubscribeList. Without it, the page lists only the
// recipient's lists, to leave.
type ListSubscriber interface {
	SubscribeList(ctx context.Context, sendID, listID string) error
}

// Prefs is what the preferences page shows.
type Prefs struct {
	// Email is the recipient's address, already masked (see MaskEmail): the
	// page is reachable by anyone holding the link.
	Email string
	// Subscribed is false once the contact unsubscribed from everything.
	Subscribed bool
	// Lists are the team's public mailing lists.
	Lists []PrefList
}

// PrefList is one public mailing list on the preferences page.
type PrefList struct {
	ID, Name, Description string
	Member                bool
}

// MaskEmail hides most of the local part of addr, keeping its first
// character and the domain: "jane.doe@example.com" → "j***@example.com".
func MaskEmail(addr string) string {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return "***"
	}
	local, domain := addr[:at], addr[at:]
	if utf8.RuneCountInString(local) <= 1 {
		return "***" + domain
	}
	_, n := utf8.DecodeRuneInString(local)
	return local[:n] + "***" + domain
}
