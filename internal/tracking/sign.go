package tracking

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"net/url"
	"strings"
	"sync"
)

// MinSecretLen is the shortest secret NewSigner accepts.
const MinSecretLen = 16

// sigBytes is how much of the HMAC-SHA256 output a signature keeps (128 bits).
const sigBytes = 16

// SigLen is the length of an encoded signature: sigBytes in unpadded URL-safe
// base64.
const SigLen = (sigBytes*8 + 5) / 6

// Purposes, mixed into every MAC so that a signature made for one kind of
// link is never valid for another (the open pixel's signature, which any
// image proxy sees, must not unlock the unsubscribe page).
const (
	purposeOpen        = 'o'
	purposeClick       = 'c'
	purposeUnsubscribe = 'u'
)

// Signer makes and checks the signed tracking and unsubscribe URLs. A
// signature is the first 128 bits of HMAC-SHA256(secret, purpose, sendID[,
// target]) in unpadded URL-safe base64. It is safe for concurrent use.
type Signer struct {
	pool sync.Pool // of *macState
}

// macState is an HMAC keyed with the secret and a scratch buffer.
type macState struct {
	h   hash.Hash
	buf []byte
}

// NewSigner returns a Signer keyed with secret, which must be at least
// MinSecretLen bytes of random data (32 is recommended) and must stay the same
// across restarts: links in delivered emails carry its signatures.
func NewSigner(secret []byte) (*Signer, error) {
	if len(secret) < MinSecretLen {
		return nil, errors.New("tracking: signing secret shorter than 16 bytes")
	}
	key := append([]byte(nil), secret...)
	s := &Signer{}
	s.pool.New = func() any { return &macState{h: hmac.New(sha256.New, key), buf: make([]byte, 0, 256)} }
	return s, nil
}

// OpenURL returns the open-pixel URL {base}/t/o/{sendID}/{sig}.gif.
func (s *Signer) OpenURL(base, sendID string) string {
	var b strings.Builder
	b.Grow(len(base) + len(sendID) + SigLen + 12)
	b.WriteString(strings.TrimRight(base, "/"))
	b.WriteString("/t/o/")
	b.WriteString(url.PathEscape(sendID))
	b.WriteByte('/')
	b.Write(s.sign(nil, purposeOpen, sendID, ""))
	b.WriteString(".gif")
	return b.String()
}

// ClickURL returns the click-redirect URL {base}/t/c/{sendID}/{sig}?u={target}
// whose signature covers sendID and target, so the redirect target cannot be
// changed. target must be an absolute http or https URL; any other target is
// returned unchanged (not tracked).
func (s *Signer) ClickURL(base, sendID, target string) string {
	if !trackable(target) {
		return target
	}
	return string(s.appendClickURL(nil, strings.TrimRight(base, "/"), url.PathEscape(sendID), sendID, target))
}

// appendClickURL appends the click URL; base is already trimmed and
// escapedID is url.PathEscape(sendID).
func (s *Signer) appendClickURL(dst []byte, base, escapedID, sendID, target string) []byte {
	dst = append(dst, base...)
	dst = append(dst, "/t/c/"...)
	dst = append(dst, escapedID...)
	dst = append(dst, '/')
	dst = s.sign(dst, purposeClick, sendID, target)
	dst = append(dst, "?u="...)
	return appendQueryEscape(dst, target)
}

// UnsubscribeURL returns the unsubscribe and preferences URL
// {base}/unsubscribe/{sendID}/{sig}. A GET shows the preferences page; a POST
// with the body "List-Unsubscribe=One-Click" unsubscribes (RFC 8058), so it is
// the URL for both the List-Unsubscribe header and {system.unsubscribe_link}.
func (s *Signer) UnsubscribeURL(base, sendID string) string {
	var b strings.Builder
	b.Grow(len(base) + len(sendID) + SigLen + 14)
	b.WriteString(strings.TrimRight(base, "/"))
	b.WriteString("/unsubscribe/")
	b.WriteString(url.PathEscape(sendID))
	b.WriteByte('/')
	b.Write(s.sign(nil, purposeUnsubscribe, sendID, ""))
	return b.String()
}

// VerifyOpen reports whether sig is the open-pixel signature of sendID.
func (s *Signer) VerifyOpen(sendID, sig string) bool {
	return s.verify(purposeOpen, sendID, "", sig)
}

// VerifyClick reports whether sig is the click signature of sendID and target.
func (s *Signer) VerifyClick(sendID, target, sig string) bool {
	return s.verify(purposeClick, sendID, target, sig)
}

// VerifyUnsubscribe reports whether sig is the unsubscribe signature of sendID.
func (s *Signer) VerifyUnsubscribe(sendID, sig string) bool {
	return s.verify(purposeUnsubscribe, sendID, "", sig)
}

func (s *Signer) verify(purpose byte, sendID, target, sig string) bool {
	if len(sig) != SigLen || sendID == "" {
		return false
	}
	var buf [SigLen]byte
	want := s.sign(buf[:0], purpose, sendID, target)
	return subtle.ConstantTimeCompare(want, []byte(sig)) == 1
}

// sign appends the encoded signature of (purpose, sendID, target) to dst.
// The message is purpose, uvarint(len(sendID)), sendID, target: the length
// prefix keeps (sendID, target) pairs unambiguous.
func (s *Signer) sign(dst []byte, purpose byte, sendID, target string) []byte {
	m := s.pool.Get().(*macState)
	b := append(m.buf[:0], purpose)
	b = binary.AppendUvarint(b, uint64(len(sendID)))
	b = append(b, sendID...)
	b = append(b, target...)
	m.h.Reset()
	m.h.Write(b)
	b = m.h.Sum(b[:0])
	dst = base64.RawURLEncoding.AppendEncode(dst, b[:sigBytes])
	if cap(b) <= 4096 {
		m.buf = b[:0]
	}
	s.pool.Put(m)
	return dst
}

// trackable reports whether u is an absolute http or https URL with a host:
// the only targets that get a click redirect.
func trackable(u string) bool {
	if !hasPrefixFold(u, "http://") && !hasPrefixFold(u, "https://") {
		return false
	}
	p, err := url.Parse(u) // lowercases the scheme
	return err == nil && p.Host != "" && (p.Scheme == "http" || p.Scheme == "https")
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// appendQueryEscape appends url.QueryEscape(s) without an intermediate string.
func appendQueryEscape(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '~':
			dst = append(dst, c)
		case c == ' ':
			dst = append(dst, '+')
		default:
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}
