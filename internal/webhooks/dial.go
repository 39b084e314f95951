package webhooks

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Webhook URLs are set by team members, and an attempt's response is shown
// in the dashboard's delivery log: a URL pointing inside the network Lasso
// runs in (the cloud metadata service, an admin port on localhost) would
// let anyone with dashboard access read it. So by default deliveries go to
// public addresses only. The check runs when the connection is made, on
// the address actually dialled, so DNS answers that change between checks
// (rebinding) and redirects are covered too.

// NewClient returns the HTTP client deliveries use. Unless allowPrivate,
// it refuses to connect to loopback, private, link-local, shared (CGNAT),
// multicast and unspecified addresses. It ignores proxy settings, whose
// own address would otherwise be the one checked.
func NewClient(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if !allowPrivate {
		d.Control = refusePrivate
	}
	tr := &http.Transport{
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 15 * time.Second,
	}
	return &http.Client{Timeout: 15 * time.Second, Transport: tr}
}

var sharedSpace = netip.MustParsePrefix("100.64.0.0/10") // RFC 6598

// ErrPrivateAddress is the error of a delivery to a non-public address.
type ErrPrivateAddress struct{ Addr netip.Addr }

func (e *ErrPrivateAddress) Error() string {
	return fmt.Sprintf("refused to connect to %s: not a public address (start lasso serve with --webhook-allow-private to allow it)", e.Addr)
}

func refusePrivate(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook address %q: %w", address, err)
	}
	if a := ap.Addr().Unmap(); !public(a) {
		return &ErrPrivateAddress{Addr: a}
	}
	return nil
}

func public(a netip.Addr) bool {
	return a.IsValid() && a.IsGlobalUnicast() && !a.IsPrivate() && !sharedSpace.Contains(a) &&
		!(a.Is4() && a.As4()[0] == 0)
}
