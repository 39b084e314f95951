package delivery

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/idna"
)

// MXConfig configures direct delivery. Only Hostname is required.
type MXConfig struct {
	// Hostname is the fully qualified name sent in EHLO. It should resolve to
	// the sending IP and match its PTR record. Required.
	Hostname string
	// Resolver resolves MX, A and AAAA records (also for dialing MX hosts).
	// Defaults to net.DefaultResolver. Tests use a *net.Resolver with
	// PreferGo and a Dial that reaches a fake DNS server.
	Resolver *net.Resolver
	// Port is the SMTP port of every MX host. Defaults to 25; tests point it
	// at a local sink.
	Port int
	// DialContextFunc opens TCP connections. Defaults to a net.Dialer that
	// uses Resolver and refuses loopback, unspecified, link-local and
	// multicast addresses (see AllowLoopback).
	DialContextFunc DialContextFunc
	// AllowLoopback lets the default dialer connect to loopback (and
	// link-local) addresses. Off by default: an MX record pointing at
	// 127.0.0.1 would otherwise make us deliver to ourselves or to local
	// services. Tests with a sink on 127.0.0.1 turn it on.
	AllowLoopback bool
	// TLSConfig is the base for STARTTLS (RootCAs, MinVersion, client
	// certificates). ServerName is always set to the MX host. Defaults to
	// the system roots and TLS 1.2 minimum.
	TLSConfig *tls.Config
	// DisableTLS never attempts STARTTLS. Meant for tests and for networks
	// where TLS is terminated elsewhere.
	DisableTLS bool
	// TLSFallbackTTL is how long the TLS downgrade found for an MX host
	// (unverified TLS, or plaintext after a failed handshake) is remembered
	// before verified TLS is tried again. Defaults to 1 hour.
	TLSFallbackTTL time.Duration
	// MaxConnsPerDomain bounds concurrent deliveries to one recipient domain
	// (one session each). Defaults to 10.
	MaxConnsPerDomain int
	// MaxIdlePerHost is the number of idle sessions kept per MX host for
	// reuse. Defaults to 2; -1 disables reuse.
	MaxIdlePerHost int
	// IdleTimeout is how long an idle session is kept. Defaults to 10
	// seconds, well below the 5 minutes a server must wait (RFC 5321
	// §4.5.3.2.7) and below the 30-60 s many large receivers allow.
	IdleTimeout time.Duration
	// MaxMessagesPerConn is the number of transactions per session before it
	// is closed. Defaults to 100.
	MaxMessagesPerConn int
	// Timeouts bounds each SMTP step; see Timeouts for the defaults.
	Timeouts Timeouts
	// Logger receives debug records about TLS downgrades and unusable pooled
	// sessions. Defaults to discarding.
	Logger *slog.Logger
}

// MX delivers straight to the recipient domain's mail exchangers.
//
// It is safe for concurrent use. Call Close to release pooled sessions.
type MX struct {
	cfg      MXConfig
	resolver *net.Resolver
	dial     DialContextFunc
	log      *slog.Logger
	pool     *pool
	limits   *limiter

	tlsMu    sync.Mutex
	tlsCache map[string]tlsFallback
}

type tlsFallback struct {
	mode  tlsMode
	until time.Time
}

var _ Transport = (*MX)(nil)

// NewMX returns an MX transport.
func NewMX(cfg MXConfig) (*MX, error) {
	if err := checkHostname(cfg.Hostname); err != nil {
		return nil, err
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Port == 0 {
		cfg.Port = 25
	}
	if cfg.TLSFallbackTTL <= 0 {
		cfg.TLSFallbackTTL = time.Hour
	}
	if cfg.MaxConnsPerDomain <= 0 {
		cfg.MaxConnsPerDomain = 10
	}
	if cfg.MaxIdlePerHost == 0 {
		cfg.MaxIdlePerHost = 2
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Second
	}
	if cfg.MaxMessagesPerConn <= 0 {
		cfg.MaxMessagesPerConn = 100
	}
	cfg.Timeouts = cfg.Timeouts.withDefaults()
	m := &MX{
		cfg:      cfg,
		resolver: cfg.Resolver,
		dial:     cfg.DialContextFunc,
		log:      cfg.Logger,
		pool:     newPool(cfg.MaxIdlePerHost, cfg.IdleTimeout, cfg.MaxMessagesPerConn),
		limits:   newLimiter(cfg.MaxConnsPerDomain),
		tlsCache: map[string]tlsFallback{},
	}
	if m.dial == nil {
		d := &net.Dialer{Resolver: cfg.Resolver}
		if !cfg.AllowLoopback {
			d.ControlContext = refuseLocal
		}
		m.dial = d.DialContext
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.log = m.log.With("component", "delivery.mx")
	return m, nil
}

// Close QUITs pooled sessions. Sessions in use are closed when their
// transaction ends.
func (m *MX) Close() error {
	m.pool.close()
	return nil
}

// Send delivers msg to every recipient. Recipients are grouped by domain;
// each domain is delivered in one transaction, domains in parallel.
func (m *MX) Send(ctx context.Context, env Envelope, msg []byte) []Result {
	results := make([]Result, len(env.To))
	type group struct {
		idx   []int
		rcpts []string
	}
	groups := map[string]*group{}
	var order []string
	for i, rcpt := range env.To {
		domain, err := recipientDomain(rcpt)
		if err != nil {
			results[i] = localReply("5.1.3", "bad recipient address syntax", err).result(rcpt, "")
			continue
		}
		g := groups[domain]
		if g == nil {
			g = &group{}
			groups[domain] = g
			order = append(order, domain)
		}
		g.idx = append(g.idx, i)
		// RCPT TO carries the A-label domain (RFC 5890) so that only a
		// non-ASCII local part needs SMTPUTF8.
		g.rcpts = append(g.rcpts, rcpt[:strings.LastIndexByte(rcpt, '@')+1]+domain)
	}
	if err := checkAddress(env.From, true); err != nil {
		r := localReply("5.1.7", "bad sender address syntax", err)
		for i, rcpt := range env.To {
			results[i] = r.result(rcpt, "")
		}
		return results
	}
	deliver := func(domain string) {
		g := groups[domain]
		for k, r := range m.deliverDomain(ctx, domain, env.From, g.rcpts, msg) {
			r.Recipient = env.To[g.idx[k]]
			results[g.idx[k]] = r
		}
	}
	if len(order) == 1 {
		deliver(order[0])
		return results
	}
	var wg sync.WaitGroup
	for _, domain := range order {
		wg.Go(func() { deliver(domain) })
	}
	wg.Wait()
	return results
}

func (m *MX) deliverDomain(ctx context.Context, domain, from string, rcpts []string, msg []byte) []Result {
	release, err := m.limits.acquire(ctx, domain)
	if err != nil {
		return allResults(rcpts, replyFromError(err, "4.4.7", "delivery time expired"), "")
	}
	defer release()

	hosts, fail := m.lookup(ctx, domain)
	if hosts == nil {
		return allResults(rcpts, fail, "")
	}
	var last reply
	lastHost := ""
	for _, host := range hosts {
		c, err := m.connect(ctx, host)
		if err != nil {
			var oe *openError
			if errors.As(err, &oe) {
				last = oe.reply
			} else {
				last = localReply("4.4.1", "no answer from host", err)
			}
			// A session that never reached MAIL FROM says nothing final
			// about the recipients: try the next MX, and if none works,
			// retry later (like Postfix's smtp_skip_5xx_greeting).
			last.temp = true
			lastHost = host
			if ctx.Err() != nil {
				break
			}
			continue
		}
		res, reusable := c.send(ctx, from, rcpts, msg)
		if reusable {
			m.pool.put(c)
		} else {
			c.close()
		}
		return res
	}
	if ctx.Err() != nil {
		last = replyFromError(ctx.Err(), "4.4.7", "delivery time expired")
	}
	return allResults(rcpts, last, lastHost)
}

// lookup returns the MX hosts of domain in the order to try, or nil and the
// reply that fails every recipient.
func (m *MX) lookup(ctx context.Context, domain string) ([]string, reply) {
	mxs, err := m.resolver.LookupMX(ctx, domain)
	if len(mxs) == 0 {
		var de *net.DNSError
		if err != nil && !(errors.As(err, &de) && de.IsNotFound) {
			return nil, localReply("4.4.3", "DNS lookup of MX records failed", err)
		}
		// No MX records (NODATA) or no such domain: RFC 5321 §5.1 implicit
		// MX, the domain's own A/AAAA records.
		addrs, err := m.resolver.LookupIPAddr(ctx, domain)
		if err == nil && len(addrs) > 0 {
			return []string{domain}, reply{}
		}
		if err == nil || (errors.As(err, &de) && de.IsNotFound) {
			return nil, localReply("5.1.2", "recipient domain does not exist or has no mail server", err)
		}
		return nil, localReply("4.4.3", "DNS lookup of domain address failed", err)
	}
	// RFC 7505 null MX: the domain accepts no mail.
	if len(mxs) == 1 && (mxs[0].Host == "." || mxs[0].Host == "") {
		return nil, reply{code: 0, enhanced: "5.1.10", message: "recipient domain does not accept mail (null MX)"}
	}
	// Sort by preference; shuffle hosts of equal preference to spread load.
	mxs = slices.Clone(mxs)
	rand.Shuffle(len(mxs), func(i, j int) { mxs[i], mxs[j] = mxs[j], mxs[i] })
	slices.SortStableFunc(mxs, func(a, b *net.MX) int { return int(a.Pref) - int(b.Pref) })
	hosts := make([]string, 0, len(mxs))
	for _, mx := range mxs {
		h := strings.ToLower(strings.TrimSuffix(mx.Host, "."))
		if h == "" || slices.Contains(hosts, h) {
			continue
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return nil, localReply("4.4.3", "no usable MX records", err)
	}
	return hosts, reply{}
}

// connect returns a session to host: a pooled one if it still answers RSET,
// otherwise a new one, applying the TLS policy described in the package doc.
func (m *MX) connect(ctx context.Context, host string) (*conn, error) {
	key := strings.ToLower(host)
	for c := m.pool.get(key); c != nil; c = m.pool.get(key) {
		err := c.reset(ctx)
		if err == nil {
			return c, nil
		}
		m.log.DebugContext(ctx, "pooled session unusable", slog.String("host", host), slog.Any("error", err))
		c.close()
		if ctx.Err() != nil {
			return nil, &openError{stage: "dial", reply: replyFromError(ctx.Err(), "4.4.7", "cancelled")}
		}
	}

	mode := tlsOff
	if !m.cfg.DisableTLS {
		mode = m.tlsMode(key)
	}
	for {
		c, err := dialSession(ctx, dialParams{
			addr:       net.JoinHostPort(host, strconv.Itoa(m.cfg.Port)),
			serverName: host,
			helo:       m.cfg.Hostname,
			dial:       m.dial,
			tlsConfig:  m.cfg.TLSConfig,
			mode:       mode,
			timeouts:   m.cfg.Timeouts,
		})
		if err == nil {
			c.key = key
			return c, nil
		}
		var oe *openError
		if !errors.As(err, &oe) || !oe.handshake || ctx.Err() != nil || mode == tlsOff {
			return nil, err
		}
		// Most MX certificates do not match the MX name or are self-signed,
		// and opportunistic TLS (RFC 3207 §4.1, RFC 7435) prefers an
		// encrypted but unauthenticated session to plaintext. A handshake
		// that fails for other reasons falls back to plaintext.
		next := tlsOff
		if mode == tlsVerify && oe.verify {
			next = tlsNoVerify
		}
		m.log.DebugContext(ctx, "tls downgrade", slog.String("host", host),
			slog.String("to", next.String()), slog.Any("error", err))
		m.setTLSMode(key, next)
		mode = next
	}
}

func (m *MX) tlsMode(host string) tlsMode {
	m.tlsMu.Lock()
	defer m.tlsMu.Unlock()
	f, ok := m.tlsCache[host]
	if !ok || time.Now().After(f.until) {
		return tlsVerify
	}
	return f.mode
}

func (m *MX) setTLSMode(host string, mode tlsMode) {
	m.tlsMu.Lock()
	defer m.tlsMu.Unlock()
	now := time.Now()
	if len(m.tlsCache) > 10000 {
		for h, f := range m.tlsCache {
			if now.After(f.until) {
				delete(m.tlsCache, h)
			}
		}
	}
	m.tlsCache[host] = tlsFallback{mode: mode, until: now.Add(m.cfg.TLSFallbackTTL)}
}

func (t tlsMode) String() string {
	switch t {
	case tlsVerify:
		return "verified_tls"
	case tlsNoVerify:
		return "unverified_tls"
	default:
		return "plaintext"
	}
}

// refuseLocal is a net.Dialer control hook that refuses addresses an MX
// record must not point at.
func refuseLocal(_ context.Context, _, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() {
		return fmt.Errorf("refusing to deliver to local address %s", ip)
	}
	return nil
}

// recipientDomain returns the lower-cased ASCII (A-label) domain of a
// recipient address.
func recipientDomain(addr string) (string, error) {
	if err := checkAddress(addr, false); err != nil {
		return "", err
	}
	at := strings.LastIndexByte(addr, '@')
	domain := strings.ToLower(strings.TrimSuffix(addr[at+1:], "."))
	if !isASCII(domain) {
		a, err := idna.Lookup.ToASCII(domain)
		if err != nil {
			return "", fmt.Errorf("domain %q: %w", domain, err)
		}
		domain = a
	}
	if strings.HasPrefix(domain, "[") {
		return "", fmt.Errorf("address literal %q is not supported", domain)
	}
	return domain, nil
}

// checkAddress validates an envelope address enough to keep the SMTP dialog
// well-formed. Empty is allowed for the sender only (null return path).
func checkAddress(addr string, sender bool) error {
	if addr == "" {
		if sender {
			return nil
		}
		return errors.New("empty address")
	}
	if strings.ContainsAny(addr, "\r\n<> \t") {
		return fmt.Errorf("address %q contains forbidden characters", addr)
	}
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at == len(addr)-1 {
		return fmt.Errorf("address %q has no local part or domain", addr)
	}
	if len(addr) > 254 {
		return fmt.Errorf("address %q is longer than 254 bytes", addr)
	}
	return nil
}

func checkHostname(h string) error {
	if h == "" {
		return errors.New("delivery: Hostname (EHLO name) is required")
	}
	if strings.ContainsAny(h, "\r\n \t") {
		return fmt.Errorf("delivery: invalid Hostname %q", h)
	}
	return nil
}
