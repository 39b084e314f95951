package deliverytest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/miekg/dns"
)

// MX is one MX record.
type MX struct {
	Host string
	Pref uint16
}

// DNS is a fake authoritative DNS server on 127.0.0.1 (UDP and TCP, same
// port). Names without any record answer NXDOMAIN; names with records but
// none of the queried type answer NOERROR with no answers (NODATA).
type DNS struct {
	// Addr is the host:port of both listeners.
	Addr string

	mu       sync.Mutex
	records  map[string]map[uint16][]dns.RR
	servfail map[string]bool
	queries  int
}

// NewDNS starts a fake DNS server; it stops when the test ends.
func NewDNS(tb testing.TB) *DNS {
	tb.Helper()
	d := &DNS{records: map[string]map[uint16][]dns.RR{}, servfail: map[string]bool{}}

	var pc net.PacketConn
	var l net.Listener
	var err error
	for range 20 {
		pc, err = net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("deliverytest: dns listen udp: %v", err)
		}
		l, err = net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			break
		}
		pc.Close()
	}
	if err != nil {
		tb.Fatalf("deliverytest: dns listen tcp: %v", err)
	}
	d.Addr = pc.LocalAddr().String()

	h := dns.HandlerFunc(d.serve)
	udp := &dns.Server{PacketConn: pc, Handler: h}
	tcp := &dns.Server{Listener: l, Handler: h}
	var wg sync.WaitGroup
	for _, s := range []*dns.Server{udp, tcp} {
		started := make(chan struct{})
		s.NotifyStartedFunc = func() { close(started) }
		wg.Go(func() { _ = s.ActivateAndServe() })
		<-started
	}
	tb.Cleanup(func() {
		_ = udp.Shutdown()
		_ = tcp.Shutdown()
		wg.Wait()
	})
	return d
}

// Resolver returns a pure-Go resolver whose queries all go to this server.
func (d *DNS) Resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var nd net.Dialer
			if strings.HasPrefix(network, "tcp") {
				return nd.DialContext(ctx, "tcp", d.Addr)
			}
			return nd.DialContext(ctx, "udp", d.Addr)
		},
	}
}

// Queries returns the number of questions answered so far.
func (d *DNS) Queries() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.queries
}

func key(name string) string { return dns.Fqdn(strings.ToLower(name)) }

func (d *DNS) set(name string, t uint16, rrs []dns.RR) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := key(name)
	if d.records[k] == nil {
		d.records[k] = map[uint16][]dns.RR{}
	}
	if len(rrs) == 0 {
		delete(d.records[k], t)
		// Keep the (now empty) name: it still exists (NODATA, not NXDOMAIN).
		return
	}
	d.records[k][t] = rrs
}

func hdr(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: key(name), Rrtype: t, Class: dns.ClassINET, Ttl: 60}
}

// SetMX replaces the MX records of domain. MX{Host: "."} is a null MX
// (RFC 7505). With no records the name exists without MX (NODATA).
func (d *DNS) SetMX(domain string, mxs ...MX) {
	var rrs []dns.RR
	for _, m := range mxs {
		rrs = append(rrs, &dns.MX{Hdr: hdr(domain, dns.TypeMX), Preference: m.Pref, Mx: dns.Fqdn(m.Host)})
	}
	d.set(domain, dns.TypeMX, rrs)
}

// SetA replaces the A records of name.
func (d *DNS) SetA(name string, ips ...string) {
	var rrs []dns.RR
	for _, ip := range ips {
		rrs = append(rrs, &dns.A{Hdr: hdr(name, dns.TypeA), A: net.ParseIP(ip).To4()})
	}
	d.set(name, dns.TypeA, rrs)
}

// SetAAAA replaces the AAAA records of name.
func (d *DNS) SetAAAA(name string, ips ...string) {
	var rrs []dns.RR
	for _, ip := range ips {
		rrs = append(rrs, &dns.AAAA{Hdr: hdr(name, dns.TypeAAAA), AAAA: net.ParseIP(ip)})
	}
	d.set(name, dns.TypeAAAA, rrs)
}

// SetTXT replaces the TXT records of name, one record per value. Values
// longer than 255 octets are split into several strings of one record, as
// DNS requires (DKIM RSA keys are).
func (d *DNS) SetTXT(name string, values ...string) {
	var rrs []dns.RR
	for _, v := range values {
		var parts []string
		for len(v) > 255 {
			parts = append(parts, v[:255])
			v = v[255:]
		}
		parts = append(parts, v)
		rrs = append(rrs, &dns.TXT{Hdr: hdr(name, dns.TypeTXT), Txt: parts})
	}
	d.set(name, dns.TypeTXT, rrs)
}

// SetServFail makes every query for name fail with SERVFAIL (a temporary
// DNS error), or stops doing so.
func (d *DNS) SetServFail(name string, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.servfail[key(name)] = on
}

// Delete removes every record of name (it answers NXDOMAIN again).
func (d *DNS) Delete(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.records, key(name))
}

func (d *DNS) serve(w dns.ResponseWriter, req *dns.Msg) {
	resp := new(dns.Msg)
	resp.SetReply(req)
	resp.Authoritative = true
	d.mu.Lock()
	for _, q := range req.Question {
		d.queries++
		k := key(q.Name)
		if d.servfail[k] {
			resp.Rcode = dns.RcodeServerFailure
			break
		}
		types, ok := d.records[k]
		if !ok {
			resp.Rcode = dns.RcodeNameError
			resp.Ns = []dns.RR{&dns.SOA{
				Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 60},
				Ns:  "ns.test.", Mbox: "hostmaster.test.", Serial: 1, Refresh: 60, Retry: 60, Expire: 60, Minttl: 60,
			}}
			continue
		}
		for _, rr := range types[q.Qtype] {
			rr := dns.Copy(rr)
			rr.Header().Name = q.Name // echo the query's case
			resp.Answer = append(resp.Answer, rr)
		}
	}
	d.mu.Unlock()

	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = max(int(opt.UDPSize()), dns.MinMsgSize)
		}
		resp.Truncate(size)
	}
	_ = w.WriteMsg(resp)
}

// LookupTXT resolves TXT records through this server, as a DKIM verifier
// would.
func (d *DNS) LookupTXT(name string) ([]string, error) {
	return d.Resolver().LookupTXT(context.Background(), name)
}

// VerifyDKIM verifies every DKIM-Signature of msg with keys published in
// this server (see SetTXT and delivery.DKIMRecord). It returns one
// verification per signature; check each Err.
func (d *DNS) VerifyDKIM(msg []byte) ([]*dkim.Verification, error) {
	return dkim.VerifyWithOptions(bytes.NewReader(msg), &dkim.VerifyOptions{LookupTXT: d.LookupTXT})
}

// RequireDKIM fails the test unless msg carries at least one valid signature
// for each domain given and no invalid signature.
func (d *DNS) RequireDKIM(tb testing.TB, msg []byte, domains ...string) []*dkim.Verification {
	tb.Helper()
	vs, err := d.VerifyDKIM(msg)
	if err != nil {
		tb.Fatalf("deliverytest: dkim verify: %v", err)
	}
	if len(vs) == 0 {
		tb.Fatalf("deliverytest: message has no DKIM-Signature")
	}
	ok := map[string]int{}
	for _, v := range vs {
		if v.Err != nil {
			tb.Fatalf("deliverytest: dkim signature of %s invalid: %v", v.Domain, v.Err)
		}
		ok[strings.ToLower(v.Domain)]++
	}
	for _, dom := range domains {
		if ok[strings.ToLower(dom)] == 0 {
			tb.Fatalf("deliverytest: no valid DKIM signature for %s (got %v)", dom, fmt.Sprint(ok))
		}
	}
	return vs
}
