// Package delivery is the outbound MTA engine: it composes messages, signs
// them with DKIM and hands them to the next hop. It is a pure engine with no
// product knowledge and no database: it takes values and returns per-recipient
// results. Deciding what a result means for a contact (suppress, retry,
// count a bounce) belongs to the caller (internal/emails).
//
// It must not import any other internal package. Its test helpers live in
// internal/delivery/deliverytest, which only _test.go files may import.
//
// # Pipeline
//
//	raw, err := delivery.Compose(&delivery.Message{...})        // RFC 5322 + MIME
//	signed, err := delivery.SignDKIM(raw, rsaKey, ed25519Key)   // RFC 6376, RFC 8463
//	results := transport.Send(ctx, delivery.Envelope{From: verp, To: rcpts}, signed)
//
// Compose writes CRLF line endings, folds header fields near 78 octets and
// never writes a line longer than 998. Text parts are 7bit when they are
// ASCII with short lines and quoted-printable otherwise; attachments are
// base64. CR or LF in any header input is refused with ErrHeaderInjection,
// so header injection is impossible. Marketing mail sets
// Message.ListUnsubscribe to get List-Unsubscribe (RFC 2369) and
// List-Unsubscribe-Post (RFC 8058).
//
// SignDKIM signs with relaxed/relaxed canonicalisation and SHA-256, covering
// From, To, Cc, Reply-To, Subject, Date, Message-ID, MIME-Version,
// Content-Type, Content-Transfer-Encoding, List-Unsubscribe,
// List-Unsubscribe-Post, List-Id, Feedback-ID, In-Reply-To and References
// when present, over-signing all but the last two so that a second instance
// cannot be added in transit. Sign with RSA-2048 always and with Ed25519 in
// addition (never alone): not every receiver verifies Ed25519. Keys are
// created with GenerateDKIMKey, stored as PEM (MarshalDKIMKey,
// ParseDKIMKey) and published as DKIMRecord at DKIMRecordName.
//
// # Transports
//
// Every Transport returns exactly one Result per envelope recipient, in
// order, and never a transport-level error.
//
//   - MX delivers directly: MX lookup (falling back to the domain's own
//     A/AAAA records when it has no MX, RFC 5321 §5.1), hosts tried by
//     preference with equal preferences shuffled, connection failures moving
//     on to the next host. The default dialer refuses loopback, link-local
//     and multicast addresses (MXConfig.AllowLoopback), so a hostile MX
//     record cannot point delivery at ourselves or at local services.
//   - Relay sends everything through one smarthost configured by URL
//     (smtp:// with STARTTLS, smtps:// with implicit TLS, AUTH PLAIN or LOGIN).
//   - Capture writes .eml files into a directory: the local capture mailbox
//     used when neither relay nor MX delivery is configured.
//
// Both SMTP transports use github.com/wneessen/go-mail/smtp, whose client
// sends our EHLO name before STARTTLS (go-smtp's client says "EHLO
// localhost", which hardened receivers reject).
//
// # Classification and retry semantics
//
// A Result has a Status:
//
//   - StatusDelivered: the next hop answered 2xx to the end of DATA. It now
//     owns the message; a later bounce arrives as a DSN to the return path.
//   - StatusTemporary: retry later, with back-off. SMTP 4xx; connection,
//     TLS and I/O failures; DNS errors other than "does not exist" (SERVFAIL,
//     timeouts); every MX host unreachable; a cancelled or expired context;
//     relay AUTH failures and missing TLS (operator problems, not recipient
//     problems); 552 in reply to RCPT (RFC 5321 §4.5.3.1.10); and anything
//     not understood. The zero Status is temporary, so a forgotten result
//     never turns into a bounce.
//   - StatusPermanent: do not retry. SMTP 5xx to MAIL, RCPT or DATA; the
//     recipient domain does not exist (NXDOMAIN, or no MX and no address:
//     5.1.2); a null MX (RFC 7505: 5.1.10); an unusable address (5.1.3).
//
// Each Result keeps the raw reply code, the enhanced status code (RFC 3463,
// e.g. "5.1.1") and the reply text, so the caller can tell a hard bounce
// (the address does not exist: Result.BadAddress, from the enhanced code)
// from other permanent failures (policy, spam, content, size), which should
// not suppress the address. Failures without an SMTP reply have Code 0, an
// enhanced code synthesised here (4.4.1 no answer from host, 4.4.2 bad
// connection, 4.4.3 DNS failure, 4.4.4 MX host does not resolve, 4.4.7
// expired, 4.7.0 TLS/AUTH trouble, 4.7.10 TLS required, 5.1.2, 5.1.3,
// 5.1.10) and the cause in Result.Err, which is for logs, not for peers.
//
// One Send is one attempt: transports do not retry by themselves, except
// that MX tries the next MX host when a host cannot be reached or its
// session cannot be set up (greeting, EHLO or STARTTLS failure, including a
// 4xx/5xx greeting, counted as temporary). Once MAIL FROM has been answered,
// the answers of that host are final for the attempt. A rejected DATA
// applies to every recipient accepted by RCPT. If the connection drops
// after the message was sent but before the final reply, the result is
// temporary and a retry may duplicate the message (RFC 5321 §6.1 accepts
// this).
//
// # TLS policy
//
// Relay: STARTTLS is required when the URL has credentials or says
// tls=required, opportunistic with tls=opportunistic, off with tls=none
// (the only mode that allows AUTH without TLS). Certificates are always
// verified against the relay host name unless insecure_skip_verify=true;
// a verification failure is a temporary failure, never a silent downgrade.
//
// MX: opportunistic STARTTLS (RFC 3207, RFC 7435). When the server offers
// STARTTLS, the handshake verifies the certificate against the MX host name.
// If verification fails (most MX certificates do not match the MX name or
// are self-signed), the message is sent on a new connection with TLS but
// without verification; if the handshake itself fails, on a new connection
// in plaintext. The downgrade is remembered per MX host for
// MXConfig.TLSFallbackTTL (1 hour) so that the next messages do not pay for
// failed handshakes. Servers that do not offer STARTTLS get plaintext. MTA-STS
// (RFC 8461) and DANE (RFC 7672) are not implemented.
//
// # Connections and concurrency
//
// Both SMTP transports keep idle sessions for reuse (MX per MX host, Relay
// per relay) for IdleTimeout (10 s), at most MaxMessagesPerConn (100)
// transactions each. A reused session is checked with RSET before MAIL FROM;
// if that fails it is dropped and a new one dialled, without counting as a
// failure. MX bounds concurrent deliveries per recipient domain
// (MaxConnsPerDomain, 10); Relay bounds sessions to the relay (MaxConns, 10).
// Waiting for a slot respects the context.
//
// Every SMTP step has a timeout (see Timeouts; defaults follow RFC 5321
// §4.5.3.2) and the context's deadline, whichever is earlier; cancelling the
// context aborts blocked I/O at once.
package delivery
