// Package deliverytest provides fakes for tests of code that sends mail: an
// SMTP sink (a real go-smtp server on 127.0.0.1) and a fake DNS server
// (miekg/dns on 127.0.0.1) with a *net.Resolver that uses it, plus a DKIM
// verifier that reads keys from the fake DNS.
//
// Only _test.go files may import this package.
package deliverytest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// SinkOpts configures a Sink. The zero value is a plain SMTP server that
// accepts everything.
type SinkOpts struct {
	// Addr to listen on. Defaults to "127.0.0.1:0".
	Addr string
	// TLS offers STARTTLS with a generated self-signed certificate for
	// TLSNames (see Sink.CertPool).
	TLS bool
	// TLSNames are the DNS names and IPs in the certificate. Defaults to
	// "localhost" and "127.0.0.1".
	TLSNames []string
	// ImplicitTLS serves TLS from the first byte (smtps, port 465 style)
	// instead of STARTTLS. Implies TLS.
	ImplicitTLS bool
	// Username and Password enable AUTH PLAIN and LOGIN; MAIL is refused
	// until the client authenticated.
	Username string
	Password string
	// AllowInsecureAuth allows AUTH before STARTTLS.
	AllowInsecureAuth bool
	// DataDelay is slept in DATA before answering, to make sessions overlap.
	DataDelay time.Duration
	// Domain is the server name in the greeting. Defaults to "sink.test".
	Domain string
	// DiscardData keeps envelopes but not message bytes (benchmarks).
	DiscardData bool
}

// Stage is the SMTP command a programmed reply answers.
type Stage int

const (
	StageRcpt Stage = iota // RCPT TO
	StageMail              // MAIL FROM
	StageData              // end of DATA
)

// Rule programs the sink to answer Reply instead of accepting.
type Rule struct {
	// Stage is the command to answer. Defaults to StageRcpt.
	Stage Stage
	// Recipient restricts the rule to one recipient (case-insensitive). For
	// StageData the rule applies when the transaction includes Recipient.
	// Empty matches any.
	Recipient string
	// Times is how often the rule fires before it is used up; 0 means
	// forever. Use it for "451 on the first N attempts, then accept".
	Times int
	// Code, Enhanced ("4.3.0") and Message form the reply.
	Code     int
	Enhanced string
	Message  string
}

// Message is one message received by the sink.
type Message struct {
	From string
	To   []string
	Data []byte
	// Helo is the EHLO name of the client, TLS whether the session was
	// encrypted, AuthUser the authenticated user, Conn the connection number
	// (1-based, in order of accept).
	Helo     string
	TLS      bool
	AuthUser string
	Conn     int
}

// Sink is a real SMTP server that records what it receives.
type Sink struct {
	// Addr is host:port; Host and Port its parts.
	Addr string
	Host string
	Port int

	opts     SinkOpts
	srv      *smtp.Server
	certPool *x509.CertPool

	mu          sync.Mutex
	cond        *sync.Cond
	msgs        []Message
	rules       []*Rule
	conns       int
	open        int
	helos       []string
	activeTx    int
	maxActiveTx int
}

// NewSink starts a sink; it stops when the test ends. Pass at most one
// SinkOpts.
func NewSink(tb testing.TB, opts ...SinkOpts) *Sink {
	tb.Helper()
	var o SinkOpts
	if len(opts) > 1 {
		tb.Fatal("deliverytest: NewSink takes at most one SinkOpts")
	}
	if len(opts) == 1 {
		o = opts[0]
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Domain == "" {
		o.Domain = "sink.test"
	}
	s := &Sink{opts: o}
	s.cond = sync.NewCond(&s.mu)

	srv := smtp.NewServer(&backend{s: s})
	srv.Domain = o.Domain
	srv.AllowInsecureAuth = o.AllowInsecureAuth
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.MaxMessageBytes = 50 << 20
	srv.MaxRecipients = 1000
	srv.ErrorLog = log.New(io.Discard, "", 0)
	if o.ImplicitTLS {
		o.TLS = true
	}
	if o.TLS {
		names := o.TLSNames
		if len(names) == 0 {
			names = []string{"localhost", "127.0.0.1"}
		}
		cert, pool, err := SelfSignedCert(names...)
		if err != nil {
			tb.Fatalf("deliverytest: certificate: %v", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.certPool = pool
	}
	s.srv = srv

	l, err := net.Listen("tcp", o.Addr)
	if err != nil {
		tb.Fatalf("deliverytest: listen: %v", err)
	}
	s.Addr = l.Addr().String()
	host, port, _ := net.SplitHostPort(s.Addr)
	s.Host = host
	s.Port, _ = strconv.Atoi(port)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var sl net.Listener = &countingListener{Listener: l, s: s}
		if o.ImplicitTLS {
			sl = tls.NewListener(sl, srv.TLSConfig)
		}
		_ = srv.Serve(sl)
	}()
	tb.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return s
}

// CertPool returns a pool that trusts the sink's certificate (nil without
// TLS).
func (s *Sink) CertPool() *x509.CertPool { return s.certPool }

// Program adds a reply rule. Rules are checked in the order added.
func (s *Sink) Program(r Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &r)
}

// Messages returns a copy of the messages received so far.
func (s *Sink) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.msgs))
	copy(out, s.msgs)
	return out
}

// WaitMessages waits until at least n messages arrived and returns them; it
// fails the test after timeout.
func (s *Sink) WaitMessages(tb testing.TB, n int, timeout time.Duration) []Message {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	t := time.AfterFunc(timeout, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer t.Stop()
	s.mu.Lock()
	for len(s.msgs) < n && time.Now().Before(deadline) {
		s.cond.Wait()
	}
	got := len(s.msgs)
	s.mu.Unlock()
	if got < n {
		tb.Fatalf("deliverytest: got %d messages, want %d within %v", got, n, timeout)
	}
	return s.Messages()
}

// Connections returns the number of TCP connections accepted so far.
func (s *Sink) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// OpenConnections returns the number of connections currently open.
func (s *Sink) OpenConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// WaitClosed waits until no connection is open; it fails the test after
// timeout (a leaked connection).
func (s *Sink) WaitClosed(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for s.OpenConnections() > 0 {
		if time.Now().After(deadline) {
			tb.Fatalf("deliverytest: %d connections still open after %v", s.OpenConnections(), timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// MaxConcurrentTransactions returns the highest number of mail transactions
// (MAIL FROM to end of DATA or RSET) that were in progress at once.
func (s *Sink) MaxConcurrentTransactions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxActiveTx
}

// Helos returns the EHLO/HELO names seen, in order.
func (s *Sink) Helos() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.helos...)
}

// match returns the reply of the first live rule for stage and recipients,
// consuming one use.
func (s *Sink) match(stage Stage, rcpts []string) *smtp.SMTPError {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.rules {
		if r.Stage != stage {
			continue
		}
		if r.Recipient != "" {
			found := false
			for _, rc := range rcpts {
				if strings.EqualFold(rc, r.Recipient) {
					found = true
				}
			}
			if !found {
				continue
			}
		}
		if r.Times > 0 {
			r.Times--
			if r.Times == 0 {
				s.rules = append(s.rules[:i:i], s.rules[i+1:]...)
			}
		}
		return smtpError(r.Code, r.Enhanced, r.Message)
	}
	return nil
}

func smtpError(code int, enhanced, msg string) *smtp.SMTPError {
	e := &smtp.SMTPError{Code: code, EnhancedCode: smtp.NoEnhancedCode, Message: msg}
	if enhanced != "" {
		var a, b, c int
		if _, err := fmt.Sscanf(enhanced, "%d.%d.%d", &a, &b, &c); err == nil {
			e.EnhancedCode = smtp.EnhancedCode{a, b, c}
		}
	}
	if e.Message == "" {
		e.Message = "programmed reply"
	}
	return e
}

type countingListener struct {
	net.Listener
	s *Sink
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.s.mu.Lock()
	l.s.conns++
	l.s.open++
	n := l.s.conns
	l.s.mu.Unlock()
	return &countingConn{Conn: c, s: l.s, n: n}, nil
}

type countingConn struct {
	net.Conn
	s    *Sink
	n    int
	once sync.Once
}

func (c *countingConn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		c.s.open--
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}

type backend struct{ s *Sink }

func (b *backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	n := 0
	raw := c.Conn()
	if tc, ok := raw.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	if cc, ok := raw.(*countingConn); ok {
		n = cc.n
	}
	_, isTLS := c.TLSConnectionState()
	b.s.mu.Lock()
	b.s.helos = append(b.s.helos, c.Hostname())
	b.s.mu.Unlock()
	return &session{s: b.s, helo: c.Hostname(), tls: isTLS, conn: n}, nil
}

type session struct {
	s        *Sink
	helo     string
	tls      bool
	conn     int
	authUser string
	from     string
	to       []string
	inTx     bool
}

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain, sasl.Login}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	check := func(user, pass string) error {
		if user != ss.s.opts.Username || pass != ss.s.opts.Password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "authentication failed"}
		}
		ss.authUser = user
		return nil
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(identity, user, pass string) error {
			return check(user, pass)
		}), nil
	case sasl.Login:
		return &loginServer{check: check}, nil
	}
	return nil, errors.New("unsupported mechanism")
}

func (ss *session) beginTx() {
	if ss.inTx {
		return
	}
	ss.inTx = true
	ss.s.mu.Lock()
	ss.s.activeTx++
	ss.s.maxActiveTx = max(ss.s.maxActiveTx, ss.s.activeTx)
	ss.s.mu.Unlock()
}

func (ss *session) endTx() {
	if !ss.inTx {
		return
	}
	ss.inTx = false
	ss.s.mu.Lock()
	ss.s.activeTx--
	ss.s.mu.Unlock()
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.Username != "" && ss.authUser == "" {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "authentication required"}
	}
	if e := ss.s.match(StageMail, nil); e != nil {
		return e
	}
	ss.beginTx()
	ss.from = from
	ss.to = nil
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if e := ss.s.match(StageRcpt, []string{to}); e != nil {
		return e
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	defer ss.endTx()
	var buf bytes.Buffer
	var dst io.Writer = &buf
	if ss.s.opts.DiscardData {
		dst = io.Discard
	}
	if _, err := io.Copy(dst, r); err != nil {
		return err
	}
	if d := ss.s.opts.DataDelay; d > 0 {
		time.Sleep(d)
	}
	if e := ss.s.match(StageData, ss.to); e != nil {
		return e
	}
	ss.s.mu.Lock()
	ss.s.msgs = append(ss.s.msgs, Message{
		From: ss.from, To: append([]string(nil), ss.to...), Data: buf.Bytes(),
		Helo: ss.helo, TLS: ss.tls, AuthUser: ss.authUser, Conn: ss.conn,
	})
	ss.s.cond.Broadcast()
	ss.s.mu.Unlock()
	return nil
}

func (ss *session) Reset() {
	ss.endTx()
	ss.from, ss.to = "", nil
}

func (ss *session) Logout() error {
	ss.endTx()
	return nil
}

// loginServer is the server side of AUTH LOGIN (go-sasl only has a client).
type loginServer struct {
	check func(user, pass string) error
	user  string
	step  int
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	switch l.step {
	case 0:
		l.step++
		if response == nil {
			return []byte("Username:"), false, nil
		}
		l.user = string(response)
		l.step++
		return []byte("Password:"), false, nil
	case 1:
		l.user = string(response)
		l.step++
		return []byte("Password:"), false, nil
	case 2:
		l.step++
		return nil, true, l.check(l.user, string(response))
	}
	return nil, false, errors.New("unexpected LOGIN step")
}
