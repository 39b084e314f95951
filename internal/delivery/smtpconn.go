package delivery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/wneessen/go-mail/smtp"
)

// Timeouts bound each step of an SMTP session. They follow RFC 5321
// §4.5.3.2; a context deadline shorter than a timeout wins. Zero fields take
// the defaults below.
type Timeouts struct {
	// Connect bounds the TCP connect (and the TLS handshake of smtps://).
	// Defaults to 30 seconds.
	Connect time.Duration
	// Greeting bounds the wait for the 220 greeting. Defaults to 5 minutes.
	Greeting time.Duration
	// Command bounds EHLO, STARTTLS, AUTH, MAIL, RCPT and RSET. Defaults to
	// 5 minutes.
	Command time.Duration
	// Data bounds the DATA command and each 64 KiB block of the body.
	// Defaults to 3 minutes.
	Data time.Duration
	// DataEnd bounds the wait for the reply to the final ".". Defaults to 10
	// minutes: the receiver may be scanning the message.
	DataEnd time.Duration
}

func (t Timeouts) withDefaults() Timeouts {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.Connect, 30*time.Second)
	def(&t.Greeting, 5*time.Minute)
	def(&t.Command, 5*time.Minute)
	def(&t.Data, 3*time.Minute)
	def(&t.DataEnd, 10*time.Minute)
	return t
}

// DialContextFunc dials a network connection, like (*net.Dialer).DialContext.
type DialContextFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// tlsMode is how a session uses TLS.
type tlsMode int

const (
	// tlsVerify: STARTTLS when offered, certificate verified.
	tlsVerify tlsMode = iota
	// tlsNoVerify: STARTTLS when offered, certificate not verified.
	tlsNoVerify
	// tlsOff: never STARTTLS.
	tlsOff
)

// dialParams describes how to open one SMTP session.
type dialParams struct {
	addr        string // host:port to dial
	serverName  string // name for TLS verification and AUTH
	helo        string
	dial        DialContextFunc
	implicitTLS bool        // smtps://: TLS from the first byte
	tlsConfig   *tls.Config // base TLS config (cloned)
	mode        tlsMode
	requireTLS  bool // fail unless the session ends up encrypted
	username    string
	password    string
	authMech    string // "", "PLAIN" or "LOGIN"
	plainAuth   bool   // allow AUTH without TLS
	timeouts    Timeouts
}

// openError is a failure to establish a session (before MAIL FROM).
type openError struct {
	stage string // dial, greeting, ehlo, starttls, auth
	reply reply
	// handshake is set when the TLS handshake of STARTTLS failed; the
	// connection is gone. verify is set when it failed on certificate
	// verification.
	handshake bool
	verify    bool
}

func (e *openError) Error() string {
	var b strings.Builder
	b.WriteString(e.stage)
	if e.reply.code != 0 {
		fmt.Fprintf(&b, ": %d", e.reply.code)
	}
	if e.reply.enhanced != "" {
		b.WriteString(" " + e.reply.enhanced)
	}
	if e.reply.message != "" {
		b.WriteString(" " + e.reply.message)
	}
	if e.reply.err != nil {
		b.WriteString(": " + e.reply.err.Error())
	}
	return b.String()
}

func (e *openError) Unwrap() error { return e.reply.err }

// conn is one established SMTP session, ready for MAIL FROM.
type conn struct {
	c        *smtp.Client
	raw      net.Conn
	host     string // server name, used in results
	key      string // pool key
	tls      bool
	verified bool
	uses     int
	timeouts Timeouts

	idleTimer *time.Timer // set while idle in a pool
}

// aLongTimeAgo is a deadline in the past, used to abort blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

func (c *conn) deadline(ctx context.Context, d time.Duration) {
	dl := time.Now().Add(d)
	if cd, ok := ctx.Deadline(); ok && cd.Before(dl) {
		dl = cd
	}
	_ = c.raw.SetDeadline(dl)
}

// watch aborts blocked I/O when ctx is done. The returned function stops
// watching and reports whether the connection is still sound.
func watch(ctx context.Context, raw net.Conn) func() bool {
	stop := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(aLongTimeAgo) })
	return func() bool { return stop() }
}

// dialSession connects, reads the greeting, says EHLO, negotiates TLS and
// authenticates. Every failure is an *openError.
func dialSession(ctx context.Context, p dialParams) (*conn, error) {
	t := p.timeouts
	dctx, cancel := context.WithTimeout(ctx, t.Connect)
	raw, err := p.dial(dctx, "tcp", p.addr)
	cancel()
	if err != nil {
		return nil, &openError{stage: "dial", reply: connectReply(ctx, err)}
	}
	c := &conn{raw: raw, host: p.serverName, timeouts: t}
	sound := watch(ctx, raw)
	fail := func(stage string, r reply) (*conn, error) {
		sound()
		_ = raw.Close()
		return nil, &openError{stage: stage, reply: r}
	}

	var nc net.Conn = raw
	if p.implicitTLS {
		c.deadline(ctx, t.Connect)
		tc := tls.Client(raw, tlsConfigFor(p.tlsConfig, p.serverName, p.mode == tlsNoVerify))
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail("tls", localReply("4.7.0", "TLS handshake failed", err))
		}
		nc = tc
		c.tls, c.verified = true, p.mode != tlsNoVerify
	}

	c.deadline(ctx, t.Greeting)
	c.c, err = smtp.NewClient(nc, p.serverName)
	if err != nil {
		return fail("greeting", replyFromError(err, "4.4.2", "no greeting from server"))
	}
	c.deadline(ctx, t.Command)
	if err := c.c.Hello(p.helo); err != nil {
		return fail("ehlo", replyFromError(err, "4.4.2", "connection lost during EHLO"))
	}

	if !p.implicitTLS && p.mode != tlsOff {
		if ok, _ := c.c.Extension("STARTTLS"); ok {
			c.deadline(ctx, t.Command)
			err := c.c.StartTLS(tlsConfigFor(p.tlsConfig, p.serverName, p.mode == tlsNoVerify))
			state, switched := c.c.TLSConnectionState()
			switch {
			case err == nil:
				c.tls, c.verified = true, p.mode == tlsVerify
			case !switched:
				// STARTTLS refused (e.g. 454): still in plaintext and usable.
				if p.requireTLS {
					return fail("starttls", replyFromError(err, "4.7.10", "STARTTLS refused"))
				}
			case state.HandshakeComplete:
				// TLS is up but the EHLO that follows failed.
				return fail("ehlo", replyFromError(err, "4.4.2", "EHLO after STARTTLS failed"))
			default:
				sound()
				_ = raw.Close()
				return nil, &openError{
					stage:     "starttls",
					reply:     localReply("4.7.0", "TLS handshake failed", err),
					handshake: true,
					verify:    isVerifyError(err),
				}
			}
		}
	}
	if p.requireTLS && !c.tls {
		return fail("starttls", localReply("4.7.10", "server does not offer STARTTLS but TLS is required", nil))
	}

	if p.username != "" {
		c.deadline(ctx, t.Command)
		if err := c.auth(p); err != nil {
			r := replyFromError(err, "4.7.0", "authentication failed")
			r.temp = true // wrong credentials are fixed by the operator, not by bouncing mail
			return fail("auth", r)
		}
	}
	if !sound() {
		_ = raw.Close()
		return nil, &openError{stage: "ehlo", reply: replyFromError(ctx.Err(), "4.4.7", "cancelled")}
	}
	return c, nil
}

func (c *conn) auth(p dialParams) error {
	ok, params := c.c.Extension("AUTH")
	if !ok {
		return errors.New("server does not offer AUTH")
	}
	mechs := strings.Fields(strings.ToUpper(params))
	has := func(m string) bool {
		for _, x := range mechs {
			if x == m {
				return true
			}
		}
		return false
	}
	mech := p.authMech
	if mech == "" {
		switch {
		case has("PLAIN"):
			mech = "PLAIN"
		case has("LOGIN"):
			mech = "LOGIN"
		default:
			return fmt.Errorf("server offers neither PLAIN nor LOGIN (offers %q)", params)
		}
	}
	var a smtp.Auth
	switch mech {
	case "PLAIN":
		a = smtp.PlainAuth("", p.username, p.password, p.serverName, p.plainAuth)
	case "LOGIN":
		a = smtp.LoginAuth(p.username, p.password, p.serverName, p.plainAuth)
	default:
		return fmt.Errorf("unsupported AUTH mechanism %q", mech)
	}
	return c.c.Auth(a)
}

func tlsConfigFor(base *tls.Config, serverName string, skipVerify bool) *tls.Config {
	var cfg *tls.Config
	if base != nil {
		cfg = base.Clone()
	} else {
		cfg = &tls.Config{}
	}
	cfg.ServerName = serverName
	if skipVerify {
		cfg.InsecureSkipVerify = true
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	return cfg
}

func isVerifyError(err error) bool {
	var cve *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &cve) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}

// connectReply classifies a dial failure.
func connectReply(ctx context.Context, err error) reply {
	if ctx.Err() != nil {
		return localReply("4.4.7", "delivery time expired", err)
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		if de.IsNotFound {
			return localReply("4.4.4", "server host name does not resolve", err)
		}
		return localReply("4.4.3", "DNS lookup of server failed", err)
	}
	return localReply("4.4.1", "no answer from host", err)
}

// send runs one mail transaction. It returns one result per rcpt and whether
// the session can carry another transaction.
func (c *conn) send(ctx context.Context, from string, rcpts []string, msg []byte) ([]Result, bool) {
	sound := watch(ctx, c.raw)
	results, reusable := c.transaction(ctx, from, rcpts, msg)
	if !sound() {
		reusable = false
	}
	if reusable {
		// Tidy after failures so the next transaction starts clean. After a
		// successful DATA the session is already back in its initial state.
		for _, r := range results {
			if !r.Delivered() {
				c.deadline(ctx, c.timeouts.Command)
				if err := c.c.Reset(); err != nil {
					reusable = false
				}
				break
			}
		}
	}
	return results, reusable
}

func (c *conn) transaction(ctx context.Context, from string, rcpts []string, msg []byte) ([]Result, bool) {
	c.c.SkipSMTPUTF8(!needsSMTPUTF8(from, rcpts))

	c.deadline(ctx, c.timeouts.Command)
	if err := c.c.Mail("<" + from + ">"); err != nil {
		r := replyFromError(err, "4.4.2", "connection lost during MAIL FROM")
		return allResults(rcpts, r, c.host), r.code != 0 && r.code != 421
	}

	results := make([]Result, len(rcpts))
	var accepted []int
	for i, rcpt := range rcpts {
		c.deadline(ctx, c.timeouts.Command)
		err := c.c.Rcpt("<" + rcpt + ">")
		if err == nil {
			accepted = append(accepted, i)
			continue
		}
		r := replyFromError(err, "4.4.2", "connection lost during RCPT TO")
		if r.code == 552 {
			// RFC 5321 §4.5.3.1.10: treat 552 on RCPT ("too many
			// recipients", often "mailbox full") as temporary.
			r.temp = true
		}
		results[i] = r.result(rcpt, c.host)
		if r.code == 0 || r.code == 421 {
			// Session lost: every recipient not answered yet, and every
			// accepted one, gets this temporary failure.
			for j := range rcpts {
				if j > i || contains(accepted, j) {
					results[j] = r.result(rcpts[j], c.host)
				}
			}
			return results, false
		}
	}
	if len(accepted) == 0 {
		return results, true
	}
	setAccepted := func(r reply) {
		for _, i := range accepted {
			results[i] = r.result(rcpts[i], c.host)
		}
	}

	c.deadline(ctx, c.timeouts.Data)
	w, err := c.c.Data()
	if err != nil {
		r := replyFromError(err, "4.4.2", "connection lost during DATA")
		setAccepted(r)
		return results, r.code != 0 && r.code != 421
	}
	if err := c.writeBody(ctx, w, msg); err != nil {
		setAccepted(replyFromError(err, "4.4.2", "connection lost while sending the message"))
		return results, false
	}
	c.deadline(ctx, c.timeouts.DataEnd)
	if err := w.Close(); err != nil {
		r := replyFromError(err, "4.4.2", "connection lost after sending the message")
		setAccepted(r)
		return results, r.code != 0 && r.code != 421
	}
	text := ""
	if dc, ok := w.(*smtp.DataCloser); ok {
		text = dc.ServerResponse()
	}
	setAccepted(parseReply(250, text))
	c.uses++
	return results, true
}

func (c *conn) writeBody(ctx context.Context, w io.Writer, msg []byte) error {
	const block = 64 << 10
	for len(msg) > 0 {
		n := min(block, len(msg))
		c.deadline(ctx, c.timeouts.Data)
		if _, err := w.Write(msg[:n]); err != nil {
			return err
		}
		msg = msg[n:]
	}
	return nil
}

// reset prepares a pooled session for reuse and checks that it is alive.
func (c *conn) reset(ctx context.Context) error {
	sound := watch(ctx, c.raw)
	c.deadline(ctx, c.timeouts.Command)
	err := c.c.Reset()
	if !sound() && err == nil {
		err = ctx.Err()
	}
	return err
}

// quit ends the session politely, bounded by a short deadline.
func (c *conn) quit() {
	_ = c.raw.SetDeadline(time.Now().Add(2 * time.Second))
	if err := c.c.Quit(); err != nil {
		_ = c.c.Close()
	}
	_ = c.raw.Close()
}

// close drops the session without QUIT.
func (c *conn) close() {
	if c.c != nil {
		_ = c.c.Close()
	}
	_ = c.raw.Close()
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func needsSMTPUTF8(from string, rcpts []string) bool {
	if !isASCII(from) {
		return true
	}
	for _, r := range rcpts {
		if !isASCII(r) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
