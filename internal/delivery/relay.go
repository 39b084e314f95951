package delivery

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// RelayConfig holds optional settings of a relay (smarthost) transport.
type RelayConfig struct {
	// Hostname is the name sent in EHLO. Defaults to the "helo" URL
	// parameter, then to "localhost". Relays usually accept any name from
	// authenticated clients, but set it to the sending host's FQDN.
	Hostname string
	// TLSConfig is the base for TLS (RootCAs for a private CA, client
	// certificates). ServerName is always the relay host.
	TLSConfig *tls.Config
	// DialContextFunc opens TCP connections. Defaults to net.Dialer.
	DialContextFunc DialContextFunc
	// MaxConns bounds concurrent sessions to the relay. Defaults to 10.
	MaxConns int
	// MaxIdle is the number of idle sessions kept for reuse. Defaults to
	// MaxConns; -1 disables reuse.
	MaxIdle int
	// IdleTimeout is how long an idle session is kept. Defaults to 10 seconds.
	IdleTimeout time.Duration
	// MaxMessagesPerConn is the number of transactions per session. Defaults
	// to 100.
	MaxMessagesPerConn int
	// Timeouts bounds each SMTP step; see Timeouts for the defaults.
	Timeouts Timeouts
	// Logger receives debug records. Defaults to discarding.
	Logger *slog.Logger
}

// RelayTLS is the TLS requirement of a relay URL.
type RelayTLS string

const (
	// RelayTLSRequired needs STARTTLS (or smtps://) with a verified
	// certificate. Default when the URL carries credentials.
	RelayTLSRequired RelayTLS = "required"
	// RelayTLSOpportunistic uses STARTTLS with a verified certificate when
	// offered, plaintext otherwise. Default without credentials.
	RelayTLSOpportunistic RelayTLS = "opportunistic"
	// RelayTLSNone never uses STARTTLS, and allows AUTH in plaintext.
	RelayTLSNone RelayTLS = "none"
)

// RelayURL is a parsed relay URL.
type RelayURL struct {
	// Host and Port of the relay.
	Host string
	Port int
	// ImplicitTLS is set for smtps:// (TLS from the first byte, RFC 8314).
	ImplicitTLS bool
	// TLS is the STARTTLS requirement for smtp://.
	TLS RelayTLS
	// InsecureSkipVerify disables certificate verification
	// (insecure_skip_verify=true).
	InsecureSkipVerify bool
	// Username and Password for AUTH; no AUTH when Username is empty.
	Username string
	Password string
	// AuthMechanism forces "PLAIN" or "LOGIN" (auth=plain|login); empty picks
	// PLAIN when offered, else LOGIN.
	AuthMechanism string
	// Helo is the EHLO name from the helo parameter.
	Helo string
}

// ParseRelayURL parses
//
//	smtp://[user[:pass]@]host[:port][?tls=required|opportunistic|none][&auth=plain|login][&helo=name][&insecure_skip_verify=true]
//	smtps://[user[:pass]@]host[:port][?...]
//
// smtp:// defaults to port 587 and smtps:// to 465. User and password must be
// percent-encoded. The password is never included in errors.
func ParseRelayURL(raw string) (RelayURL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return RelayURL{}, errors.New("delivery: relay URL does not parse")
	}
	var r RelayURL
	switch strings.ToLower(u.Scheme) {
	case "smtp":
		r.Port = 587
	case "smtps":
		r.Port = 465
		r.ImplicitTLS = true
	default:
		return RelayURL{}, fmt.Errorf("delivery: relay URL scheme %q is not smtp or smtps", u.Scheme)
	}
	r.Host = u.Hostname()
	if r.Host == "" {
		return RelayURL{}, errors.New("delivery: relay URL has no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return RelayURL{}, fmt.Errorf("delivery: relay URL port %q is invalid", p)
		}
		r.Port = n
	}
	if u.User != nil {
		r.Username = u.User.Username()
		r.Password, _ = u.User.Password()
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "tls", "auth", "helo", "insecure_skip_verify":
		default:
			return RelayURL{}, fmt.Errorf("delivery: unknown relay URL parameter %q", k)
		}
	}
	switch t := RelayTLS(strings.ToLower(q.Get("tls"))); t {
	case "":
		r.TLS = RelayTLSOpportunistic
		if r.Username != "" {
			r.TLS = RelayTLSRequired
		}
	case RelayTLSRequired, RelayTLSOpportunistic, RelayTLSNone:
		r.TLS = t
	default:
		return RelayURL{}, fmt.Errorf("delivery: relay URL tls=%q is not required, opportunistic or none", t)
	}
	if r.ImplicitTLS {
		r.TLS = RelayTLSRequired
	}
	switch m := strings.ToUpper(q.Get("auth")); m {
	case "", "PLAIN", "LOGIN":
		r.AuthMechanism = m
	default:
		return RelayURL{}, fmt.Errorf("delivery: relay URL auth=%q is not plain or login", q.Get("auth"))
	}
	r.Helo = q.Get("helo")
	if v := q.Get("insecure_skip_verify"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return RelayURL{}, fmt.Errorf("delivery: relay URL insecure_skip_verify=%q is not a boolean", v)
		}
		r.InsecureSkipVerify = b
	}
	return r, nil
}

// String returns the URL with the password redacted.
func (r RelayURL) String() string {
	u := url.URL{Scheme: "smtp", Host: net.JoinHostPort(r.Host, strconv.Itoa(r.Port))}
	if r.ImplicitTLS {
		u.Scheme = "smtps"
	}
	if r.Username != "" {
		u.User = url.UserPassword(r.Username, "xxxxx")
	}
	q := url.Values{}
	if !r.ImplicitTLS {
		q.Set("tls", string(r.TLS))
	}
	if r.AuthMechanism != "" {
		q.Set("auth", strings.ToLower(r.AuthMechanism))
	}
	if r.Helo != "" {
		q.Set("helo", r.Helo)
	}
	if r.InsecureSkipVerify {
		q.Set("insecure_skip_verify", "true")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Relay sends every message through one smarthost.
//
// It is safe for concurrent use. Call Close to release pooled sessions.
type Relay struct {
	url    RelayURL
	params dialParams
	pool   *pool
	slots  *limiter
	log    *slog.Logger
}

var _ Transport = (*Relay)(nil)

// NewRelay returns a relay transport for rawURL (see ParseRelayURL).
func NewRelay(rawURL string, cfg RelayConfig) (*Relay, error) {
	u, err := ParseRelayURL(rawURL)
	if err != nil {
		return nil, err
	}
	if cfg.Hostname == "" {
		cfg.Hostname = u.Helo
	}
	if cfg.Hostname == "" {
		cfg.Hostname = "localhost"
	}
	if err := checkHostname(cfg.Hostname); err != nil {
		return nil, err
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 10
	}
	if cfg.MaxIdle == 0 {
		cfg.MaxIdle = cfg.MaxConns
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Second
	}
	if cfg.MaxMessagesPerConn <= 0 {
		cfg.MaxMessagesPerConn = 100
	}
	dial := cfg.DialContextFunc
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	mode := tlsVerify
	switch {
	case u.TLS == RelayTLSNone && !u.ImplicitTLS:
		mode = tlsOff
	case u.InsecureSkipVerify:
		mode = tlsNoVerify
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Relay{
		url: u,
		params: dialParams{
			addr:        net.JoinHostPort(u.Host, strconv.Itoa(u.Port)),
			serverName:  u.Host,
			helo:        cfg.Hostname,
			dial:        dial,
			implicitTLS: u.ImplicitTLS,
			tlsConfig:   cfg.TLSConfig,
			mode:        mode,
			requireTLS:  u.TLS == RelayTLSRequired,
			username:    u.Username,
			password:    u.Password,
			authMech:    u.AuthMechanism,
			plainAuth:   u.TLS == RelayTLSNone,
			timeouts:    cfg.Timeouts.withDefaults(),
		},
		pool:  newPool(cfg.MaxIdle, cfg.IdleTimeout, cfg.MaxMessagesPerConn),
		slots: newLimiter(cfg.MaxConns),
		log:   log.With("component", "delivery.relay", "relay", u.Host),
	}, nil
}

// URL returns the parsed relay URL (String redacts the password).
func (r *Relay) URL() RelayURL { return r.url }

// Close QUITs pooled sessions.
func (r *Relay) Close() error {
	r.pool.close()
	return nil
}

// Send hands msg to the relay in one transaction for all recipients.
// Failures to reach or authenticate to the relay are temporary: they are
// fixed by the operator, not by bouncing mail.
func (r *Relay) Send(ctx context.Context, env Envelope, msg []byte) []Result {
	results := make([]Result, len(env.To))
	var idx []int
	var rcpts []string
	for i, rcpt := range env.To {
		if err := checkAddress(rcpt, false); err != nil {
			results[i] = localReply("5.1.3", "bad recipient address syntax", err).result(rcpt, "")
			continue
		}
		idx = append(idx, i)
		rcpts = append(rcpts, rcpt)
	}
	if len(rcpts) == 0 {
		return results
	}
	if err := checkAddress(env.From, true); err != nil {
		for _, i := range idx {
			results[i] = localReply("5.1.7", "bad sender address syntax", err).result(env.To[i], "")
		}
		return results
	}
	set := func(res []Result) []Result {
		for k, i := range idx {
			results[i] = res[k]
		}
		return results
	}

	release, err := r.slots.acquire(ctx, "")
	if err != nil {
		return set(allResults(rcpts, replyFromError(err, "4.4.7", "delivery time expired"), ""))
	}
	defer release()

	c, err := r.connect(ctx)
	if err != nil {
		var oe *openError
		p := localReply("4.4.1", "relay unreachable", err)
		if errors.As(err, &oe) {
			p = oe.reply
		}
		p.temp = true
		return set(allResults(rcpts, p, r.url.Host))
	}
	res, reusable := c.send(ctx, env.From, rcpts, msg)
	if reusable {
		r.pool.put(c)
	} else {
		c.close()
	}
	return set(res)
}

func (r *Relay) connect(ctx context.Context) (*conn, error) {
	for c := r.pool.get(""); c != nil; c = r.pool.get("") {
		err := c.reset(ctx)
		if err == nil {
			return c, nil
		}
		r.log.DebugContext(ctx, "pooled session unusable", slog.Any("error", err))
		c.close()
	}
	c, err := dialSession(ctx, r.params)
	if err != nil {
		return nil, err
	}
	return c, nil
}
