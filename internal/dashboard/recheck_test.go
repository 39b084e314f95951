package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/dashboard"
	"github.com/lasso-mail/lasso/internal/delivery/deliverytest"
	"github.com/lasso-mail/lasso/internal/senders"
	"github.com/lasso-mail/lasso/internal/testdb"
)

func TestDomainRecheck(t *testing.T) {
	dns := deliverytest.NewDNS(t)
	e := start(t, testdb.URL(t, "sqlite"), func(c *app.Config) { c.DNSServer = dns.Addr; c.PublicURL = "https://mail.lasso.test" })
	b := e.setup(t, "Acme", "owner@example.com")
	ctx := context.Background()
	b.get("/domains")
	p := b.post("/domains", url.Values{"domain": {"example.com"}})
	want(t, p, http.StatusSeeOther)
	domainPage := p.location
	tm, _ := e.app.Accounts.TeamByName(ctx, "Acme")
	dom := func() senders.Domain {
		ds, err := e.app.Senders.Domains(ctx, tm.ID)
		if err != nil || len(ds) != 1 {
			t.Fatalf("domains: %v %v", ds, err)
		}
		return ds[0]
	}
	recheck := func(wantN int) {
		t.Helper()
		n, err := e.app.Dashboard.RecheckDomains(ctx)
		if err != nil || n != wantN {
			t.Fatalf("RecheckDomains: %d domains, %v; want %d", n, err, wantN)
		}
	}
	publish := func(dkimOK bool) {
		recs, err := e.app.Senders.Records(dom())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			switch {
			case r.Type == "MX":
				dns.SetMX(r.Name, deliverytest.MX{Host: strings.Fields(r.Value)[1], Pref: 10})
			case r.Purpose == "DKIM" && !dkimOK:
				dns.SetTXT(r.Name, "v=DKIM1; k=rsa; p=AAAAwrongkey")
			default:
				dns.SetTXT(r.Name, r.Value)
			}
		}
	}

	// A new domain is checked on the next run, then every 10 minutes.
	recheck(1)
	want(t, b.get(domainPage), 200, "Last checked", `data-status="missing"`)
	recheck(0)
	publish(true)
	e.clock.Advance(dashboard.RecheckUnverified - time.Minute)
	recheck(0)
	if dom().Verified {
		t.Fatal("verified before its re-check")
	}
	e.clock.Advance(time.Minute)
	recheck(1)
	if !dom().Verified {
		t.Fatal("the re-check did not verify the domain")
	}
	want(t, b.get(domainPage), 200, "This domain can send")

	// Verified: once a day.
	e.clock.Advance(time.Hour)
	recheck(0)
	publish(false)
	e.clock.Advance(dashboard.RecheckVerified - time.Hour)
	recheck(1)
	if dom().Verified {
		t.Fatal("a wrong DKIM record did not unverify the domain")
	}
	want(t, b.get(domainPage), 200, `data-status="mismatch"`)

	// A temporary DNS failure never unverifies.
	publish(true)
	e.clock.Advance(dashboard.RecheckUnverified)
	recheck(1)
	recs, _ := e.app.Senders.Records(dom())
	for _, r := range recs {
		dns.SetServFail(r.Name, true)
	}
	e.clock.Advance(dashboard.RecheckVerified)
	recheck(1)
	if !dom().Verified {
		t.Fatal("a SERVFAIL unverified the domain")
	}

	// The worker the queue runs does the same.
	e.clock.Advance(dashboard.RecheckVerified)
	w := &dashboard.RecheckWorker{Dashboard: e.app.Dashboard}
	if err := w.Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
	recheck(0)
}
