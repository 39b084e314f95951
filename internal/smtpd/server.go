// Package smtpd holds Lasso's two inbound SMTP listeners:
//
//   - the submission server (port 587), where applications send the Loops
//     SMTP payload (a JSON send request in the body) after STARTTLS and
//     AUTH with an API key; see NewSubmission;
//   - the bounce intake (port 25 of the return-path domain), which accepts
//     DSNs and feedback reports addressed to the VERP return path
//     bounce+<send id>@… and hands them to the app; see NewBounceIntake.
//
// Both are go-smtp servers wrapped in a Server with the same lifecycle:
// Start(ctx) / Stop(ctx) (graceful) / Close (immediate), or Listen + Serve.
// What they need from the app is the small interfaces Submitter and
// BounceHandler. Every error becomes an SMTP reply in one place, reply.go.
package smtpd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"
)

// ErrServerClosed is returned by Serve and Start after Stop or Close.
var ErrServerClosed = errors.New("smtpd: server closed")

// Limits bound what one client can hold. Zero values pick the defaults.
type Limits struct {
	// ReadTimeout closes a connection that sends nothing for this long (also
	// in the middle of DATA). Default 5 minutes (RFC 5321 §4.5.3.2).
	ReadTimeout time.Duration
	// WriteTimeout bounds each reply write. Default 1 minute.
	WriteTimeout time.Duration
	// MaxConnDuration is the longest a connection may stay open, however
	// busy. Default 30 minutes.
	MaxConnDuration time.Duration
	// MaxConnections is the number of simultaneous connections; more are
	// answered "421 4.7.0" and closed. Default 100.
	MaxConnections int
	// MaxRecipients is the number of RCPT TO per transaction; more get
	// "452 4.5.3". Default 50.
	MaxRecipients int
}

func (l Limits) withDefaults() Limits {
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = 5 * time.Minute
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = time.Minute
	}
	if l.MaxConnDuration <= 0 {
		l.MaxConnDuration = 30 * time.Minute
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = 100
	}
	if l.MaxRecipients <= 0 {
		l.MaxRecipients = 50
	}
	return l
}

// Server is one SMTP listener (submission or bounce intake).
//
// Use Start(ctx) and Stop(ctx), or Listen and Serve yourself. Stop and Close
// are safe before Start and safe to call twice.
type Server struct {
	name     string // "submission" or "bounce intake", for logs and errors
	addr     string
	limits   Limits
	log      *slog.Logger
	smtp     *smtp.Server
	needsTLS bool // refuse to serve without a TLS config

	// ctx is the parent of every call into the app; cancel aborts them when
	// Stop runs out of time.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	ln        net.Listener // bound by Listen, not yet served
	boundAddr net.Addr
	serving   []net.Listener // listeners passed to Serve
	conns     map[*trackedConn]struct{}
	stopped   bool
	serveDone chan struct{} // closed when Start's Serve goroutine returns
	stopDone  chan struct{} // closed when the first Stop returns
	force     chan struct{} // closed by Close: stop waiting for busy connections
	forceOnce sync.Once
}

// forceWait bounds how long Stop waits, once it has closed every connection
// and cancelled the calls into the app, for those calls to return.
const forceWait = 5 * time.Second

func newServer(name, addr, hostname string, limits Limits, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if hostname == "" {
		hostname = defaultHostname()
	}
	limits = limits.withDefaults()
	logger = logger.With(slog.String("component", "smtpd"), slog.String("listener", name))
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		name:     name,
		addr:     addr,
		limits:   limits,
		log:      logger,
		ctx:      ctx,
		cancel:   cancel,
		conns:    map[*trackedConn]struct{}{},
		stopDone: make(chan struct{}),
		force:    make(chan struct{}),
	}
	// The Backend is set by the constructor of each kind of server.
	srv := smtp.NewServer(nil)
	srv.Domain = hostname
	srv.MaxRecipients = limits.MaxRecipients
	// Timeouts are enforced per read and write by trackedConn, so that a
	// slow but progressing DATA is not cut off; go-smtp's own timeouts would
	// bound the whole DATA transfer from the DATA command on.
	srv.ReadTimeout = 0
	srv.WriteTimeout = 0
	srv.ErrorLog = errorLog{logger}
	s.smtp = srv
	return s
}

func defaultHostname() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}

// Listen binds the configured address. Start calls it; call it yourself to
// learn the address before serving (Serve then uses the same listener).
func (s *Server) Listen() (net.Listener, error) {
	return s.listen(context.Background())
}

func (s *Server) listen(ctx context.Context) (net.Listener, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, ErrServerClosed
	}
	if s.ln != nil {
		return s.ln, nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return nil, fmt.Errorf("smtp %s: listen %s: %w", s.name, s.addr, err)
	}
	s.ln, s.boundAddr = ln, ln.Addr()
	return ln, nil
}

// Addr is the address the server listens on, once Listen or Start has run.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.boundAddr
}

// Serve accepts connections on ln until Stop or Close, then returns nil.
func (s *Server) Serve(ln net.Listener) error {
	if s.needsTLS && s.smtp.TLSConfig == nil {
		ln.Close()
		return fmt.Errorf("smtp %s: a TLS config is required (AUTH is only offered after STARTTLS)", s.name)
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	if s.ln == ln {
		s.ln = nil
	}
	s.serving = append(s.serving, ln)
	if s.boundAddr == nil {
		s.boundAddr = ln.Addr()
	}
	s.mu.Unlock()
	err := s.smtp.Serve(&trackingListener{Listener: ln, s: s})
	if err != nil && s.isStopped() && errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Start listens on the configured address and serves in the background. It
// returns once the listener is bound. ctx bounds only the bind; the server
// runs until Stop or Close.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	stopped, started := s.stopped, s.serveDone != nil
	s.mu.Unlock()
	switch {
	case stopped:
		return ErrServerClosed
	case started:
		return nil
	}
	if s.needsTLS && s.smtp.TLSConfig == nil {
		return fmt.Errorf("smtp %s: a TLS config is required (AUTH is only offered after STARTTLS)", s.name)
	}
	ln, err := s.listen(ctx)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	s.mu.Lock()
	if s.serveDone != nil {
		s.mu.Unlock()
		return nil
	}
	s.serveDone = done
	s.mu.Unlock()
	go func() {
		defer close(done)
		if err := s.Serve(ln); err != nil && !errors.Is(err, ErrServerClosed) {
			s.log.Error("smtp server stopped", slog.Any("err", err))
		}
	}()
	s.log.Info("smtp listening", slog.String("addr", ln.Addr().String()))
	return nil
}

// Stop stops accepting connections, closes idle ones at once and lets the
// ones in the middle of DATA finish (their reply included). When ctx ends
// first, it closes everything, cancels the calls into the app and returns
// ctx.Err(). Stop waits for every connection goroutine to return.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		<-s.stopDone
		return nil
	}
	s.stopped = true
	listeners := s.serving
	if s.ln != nil {
		listeners = append(listeners, s.ln) // bound by Listen but never served
	}
	serveDone := s.serveDone
	s.ln, s.serving = nil, nil
	s.mu.Unlock()
	defer close(s.stopDone)
	defer s.cancel()

	// Closing the listeners ourselves also covers a Serve that has not yet
	// registered its listener with go-smtp.
	for _, ln := range listeners {
		ln.Close()
	}
	// Shutdown closes go-smtp's listeners and waits for its connection
	// goroutines; we make them end by closing their connections.
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		_ = s.smtp.Shutdown(context.Background())
	}()
	var err error
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		s.closeConns(false)
		select {
		case <-shut:
			break wait
		case <-ctx.Done():
			err = ctx.Err()
		case <-s.force:
			err = context.Canceled
		case <-tick.C:
			continue
		}
		// Out of time: close everything and cancel the calls into the app.
		s.closeConns(true)
		s.cancel()
		select {
		case <-shut:
		case <-time.After(forceWait):
			s.log.Error("smtp connections still busy after stop: a call into the app ignores its context")
		}
		break wait
	}
	if serveDone != nil {
		<-serveDone
	}
	return err
}

// Close closes the listener and every connection now, cancels the calls into
// the app, and waits for the connection goroutines to return.
func (s *Server) Close() error {
	s.forceOnce.Do(func() { close(s.force) }) // also hurries a Stop in progress
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (s *Server) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// closeConns closes the idle connections, or all of them.
func (s *Server) closeConns(all bool) {
	s.mu.Lock()
	var toClose []*trackedConn
	for c := range s.conns {
		if all || c.state.Load() == connIdle {
			toClose = append(toClose, c)
		}
	}
	s.mu.Unlock()
	for _, c := range toClose {
		c.Close()
	}
}

// trackingListener registers every accepted connection and enforces
// MaxConnections.
type trackingListener struct {
	net.Listener
	s *Server
}

func (l *trackingListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		s := l.s
		now := time.Now()
		c := &trackedConn{
			Conn:         nc,
			s:            s,
			readTimeout:  s.limits.ReadTimeout,
			writeTimeout: s.limits.WriteTimeout,
			expires:      now.Add(s.limits.MaxConnDuration),
		}
		s.mu.Lock()
		switch {
		case s.stopped:
			s.mu.Unlock()
			nc.Close()
			continue
		case len(s.conns) >= s.limits.MaxConnections:
			s.mu.Unlock()
			_ = nc.SetWriteDeadline(now.Add(5 * time.Second))
			_, _ = nc.Write([]byte("421 4.7.0 Too many connections, try again later\r\n"))
			nc.Close()
			s.log.Warn("smtp connection refused: too many connections", slog.String("remote", nc.RemoteAddr().String()))
			continue
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		return c, nil
	}
}

// Connection states, for graceful shutdown.
const (
	connIdle         int32 = iota // between transactions (or mid-command): may be closed
	connInData                    // the app is handling a message
	connReplyPending              // the message is handled, its reply not yet written
)

// trackedConn is the raw connection under go-smtp (and under TLS after
// STARTTLS). It enforces idle timeouts per read and write, a maximum
// lifetime, and knows whether a message is being handled.
type trackedConn struct {
	net.Conn
	s            *Server
	readTimeout  time.Duration
	writeTimeout time.Duration
	expires      time.Time

	state           atomic.Int32
	closeAfterWrite atomic.Bool
	closeOnce       sync.Once
}

func (c *trackedConn) clamp(t time.Time) time.Time {
	if t.IsZero() || t.After(c.expires) {
		return c.expires
	}
	return t
}

func (c *trackedConn) Read(b []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(c.clamp(time.Now().Add(c.readTimeout)))
	return c.Conn.Read(b)
}

func (c *trackedConn) Write(b []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(c.clamp(time.Now().Add(c.writeTimeout)))
	n, err := c.Conn.Write(b)
	// The first write after a message was handled is its reply.
	c.state.CompareAndSwap(connReplyPending, connIdle)
	if c.closeAfterWrite.Load() {
		c.Close()
	}
	return n, err
}

func (c *trackedConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *trackedConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.clamp(t))
}
func (c *trackedConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.clamp(t))
}

func (c *trackedConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		err = c.Conn.Close()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
	return err
}

// beginData and endData bracket the handling of one message.
func (c *trackedConn) beginData() {
	if c != nil {
		c.state.Store(connInData)
	}
}

func (c *trackedConn) endData() {
	if c != nil {
		c.state.Store(connReplyPending)
	}
}

// closeAfterReply makes the connection close right after the next reply.
func (c *trackedConn) closeAfterReply() {
	if c != nil {
		c.closeAfterWrite.Store(true)
	}
}

func (c *trackedConn) remote() string {
	if c == nil {
		return ""
	}
	return c.RemoteAddr().String()
}

// trackedOf finds the trackedConn under a go-smtp connection.
func trackedOf(c *smtp.Conn) *trackedConn {
	nc := c.Conn()
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	t, _ := nc.(*trackedConn)
	return t
}

// errorLog sends go-smtp's own messages to slog: panics (recovered by
// go-smtp, answered 421) as errors, and the rest, mostly peers failing a TLS
// handshake or dropping the connection, at debug level: a public port sees
// plenty of those.
type errorLog struct{ log *slog.Logger }

func (l errorLog) Printf(format string, v ...any) { l.print(fmt.Sprintf(format, v...)) }

func (l errorLog) Println(v ...any) { l.print(fmt.Sprintln(v...)) }

func (l errorLog) print(msg string) {
	msg = strings.TrimSpace(msg)
	if strings.HasPrefix(msg, "panic") {
		l.log.Error("smtp panic", slog.String("detail", msg))
		return
	}
	l.log.Debug("smtp connection error", slog.String("detail", msg))
}
