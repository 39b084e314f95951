package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/senders"
)

// domainsPage lists the team's sending domains.
type domainsPage struct {
	Page
	Domains []senders.Domain
	Domain  string
}

// handleDomains handles "GET /domains".
func (d *Dashboard) handleDomains(w http.ResponseWriter, r *http.Request, u *User) {
	d.renderDomains(w, r, u, http.StatusOK, "", "")
}

func (d *Dashboard) renderDomains(w http.ResponseWriter, r *http.Request, u *User, status int, domain, errMsg string) {
	doms, err := d.deps.Senders.Domains(r.Context(), u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	data := &domainsPage{Page: d.page(r, "Sending domains", "domains"), Domains: doms, Domain: domain}
	data.Error = errMsg
	d.render(w, r, status, "domains", data)
}

// handleDomainAdd handles "POST /domains": a fresh DKIM key pair is made
// and the records to publish are shown.
func (d *Dashboard) handleDomainAdd(w http.ResponseWriter, r *http.Request, u *User) {
	name := r.PostFormValue("domain")
	dom, err := d.deps.Senders.Add(r.Context(), u.TeamID, name, false)
	if err != nil {
		if msg, ok := apperr.Message(err); ok {
			d.renderDomains(w, r, u, http.StatusUnprocessableEntity, name, msg)
			return
		}
		d.serverError(w, r, err)
		return
	}
	redirect(w, r, "/domains/"+dom.ID)
}

// recordCheck is the state of one DNS record after a check.
type recordCheck struct {
	senders.Record
	Status string // ok, missing, mismatch, error, unchecked
	Detail string // what is wrong, for people
	Found  []string
}

// domainPage shows a domain's records and their last check.
type domainPage struct {
	Page
	Domain    senders.Domain
	Records   []recordCheck
	CheckedAt time.Time
	Checked   bool
}

func (d *Dashboard) domainByID(ctx context.Context, teamID, id string) (senders.Domain, error) {
	doms, err := d.deps.Senders.Domains(ctx, teamID)
	if err != nil {
		return senders.Domain{}, err
	}
	for _, dm := range doms {
		if dm.ID == id {
			return dm, nil
		}
	}
	return senders.Domain{}, apperr.New(apperr.NotFound, "Domain not found.")
}

// handleDomain handles "GET /domains/{id}".
func (d *Dashboard) handleDomain(w http.ResponseWriter, r *http.Request, u *User) {
	dom, err := d.domainByID(r.Context(), u.TeamID, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	recs, err := d.deps.Senders.Records(dom)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	data := &domainPage{Page: d.page(r, dom.Domain, "domains"), Domain: dom}
	raw, at, err := d.store.domainCheck(r.Context(), dom.ID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	var last []recordCheck
	if raw != "" {
		_ = json.Unmarshal([]byte(raw), &last)
		data.Checked, data.CheckedAt = true, at
	}
	for _, rec := range recs {
		rc := recordCheck{Record: rec, Status: "unchecked"}
		for _, l := range last {
			if l.Name == rec.Name && l.Type == rec.Type && l.Purpose == rec.Purpose {
				rc.Status, rc.Detail, rc.Found = l.Status, l.Detail, l.Found
			}
		}
		data.Records = append(data.Records, rc)
	}
	d.render(w, r, http.StatusOK, "domain", data)
}

// handleDomainVerify handles "POST /domains/{id}/verify": live DNS lookups
// of every record; the domain is verified when all are right. Temporary DNS
// failures never unverify a domain.
func (d *Dashboard) handleDomainVerify(w http.ResponseWriter, r *http.Request, u *User) {
	ctx := r.Context()
	dom, err := d.domainByID(ctx, u.TeamID, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	recs, err := d.deps.Senders.Records(dom)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	checks, verified, err := d.verifyDomain(ctx, u.TeamID, dom.ID, recs)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if verified != nil {
		dom.Verified = *verified
	}
	data := &domainPage{Page: d.page(r, dom.Domain, "domains"), Domain: dom, Records: checks, Checked: true, CheckedAt: d.now().UTC()}
	if r.Header.Get("HX-Request") != "" {
		d.renderFragment(w, r, http.StatusOK, "domain", "records", data)
		return
	}
	d.render(w, r, http.StatusOK, "domain", data)
}

// verifyDomain looks up every record of a domain and stores the result:
// the domain is verified when all are right, unverified when one is wrong
// for sure; temporary DNS failures change nothing but the shown results
// (verified is nil then). The Verify button and the periodic re-check
// (RecheckDomains) both use it.
func (d *Dashboard) verifyDomain(ctx context.Context, teamID, domainID string, recs []senders.Record) ([]recordCheck, *bool, error) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	checks := make([]recordCheck, len(recs))
	allOK, temp := true, false
	for i, rec := range recs {
		checks[i] = checkRecord(lctx, d.deps.Resolver, rec)
		switch checks[i].Status {
		case "ok":
		case "error":
			allOK, temp = false, true
		default:
			allOK = false
		}
	}
	raw, _ := json.Marshal(checks)
	var verified *bool
	if allOK || !temp {
		verified = &allOK
	}
	if err := d.store.setDomainCheck(ctx, teamID, domainID, verified, string(raw)); err != nil {
		return nil, nil, err
	}
	return checks, verified, nil
}

// checkRecord looks rec up and says whether what is published matches.
func checkRecord(ctx context.Context, res *net.Resolver, rec senders.Record) recordCheck {
	rc := recordCheck{Record: rec}
	switch rec.Type {
	case "MX":
		mxs, err := res.LookupMX(ctx, rec.Name)
		if err != nil {
			return lookupFailed(rc, err)
		}
		want := mxHost(rec.Value)
		for _, mx := range mxs {
			h := strings.ToLower(strings.TrimSuffix(mx.Host, "."))
			rc.Found = append(rc.Found, fmt.Sprintf("%d %s", mx.Pref, mx.Host))
			if h == want {
				rc.Status = "ok"
			}
		}
		if rc.Status != "ok" {
			rc.Status, rc.Detail = "mismatch", fmt.Sprintf("An MX record exists but none points to %s.", want)
		}
		return rc
	case "TXT":
		txts, err := res.LookupTXT(ctx, rec.Name)
		if err != nil {
			return lookupFailed(rc, err)
		}
		rc.Found = txts
		switch {
		case strings.HasPrefix(rec.Value, "v=spf1"):
			return checkSPF(rc, txts)
		case strings.HasPrefix(rec.Value, "v=DKIM1"):
			return checkDKIM(rc, txts)
		case strings.HasPrefix(rec.Value, "v=DMARC1"):
			return checkDMARC(rc, txts)
		}
		for _, t := range txts {
			if t == rec.Value {
				rc.Status = "ok"
				return rc
			}
		}
		rc.Status, rc.Detail = "mismatch", "The TXT record differs from the value to publish."
		return rc
	}
	rc.Status, rc.Detail = "error", "Unknown record type."
	return rc
}

func lookupFailed(rc recordCheck, err error) recordCheck {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		rc.Status, rc.Detail = "missing", fmt.Sprintf("No %s record found at %s yet.", rc.Type, rc.Name)
		return rc
	}
	rc.Status, rc.Detail = "error", "The DNS lookup failed (temporary): try again in a minute."
	return rc
}

func mxHost(v string) string {
	f := strings.Fields(v)
	if len(f) == 0 {
		return ""
	}
	return strings.ToLower(strings.TrimSuffix(f[len(f)-1], "."))
}

// checkSPF wants exactly one v=spf1 record that contains every mechanism of
// the record to publish other than "all" (so a merged record passes).
func checkSPF(rc recordCheck, txts []string) recordCheck {
	var spf []string
	for _, t := range txts {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(t)), "v=spf1") {
			spf = append(spf, t)
		}
	}
	switch len(spf) {
	case 0:
		rc.Status, rc.Detail = "missing", "No SPF (v=spf1) record found at "+rc.Name+"."
		return rc
	case 1:
	default:
		rc.Status, rc.Detail = "mismatch", "There are several SPF records: merge them into one (receivers reject the domain's SPF otherwise)."
		return rc
	}
	have := map[string]bool{}
	for _, f := range strings.Fields(strings.ToLower(spf[0])) {
		have[f] = true
	}
	for _, f := range strings.Fields(strings.ToLower(rc.Value)) {
		if f == "v=spf1" || strings.HasSuffix(f, "all") {
			continue
		}
		if !have[f] {
			rc.Status, rc.Detail = "mismatch", fmt.Sprintf("The SPF record lacks %q: add it before the final all.", f)
			return rc
		}
	}
	rc.Status = "ok"
	return rc
}

func dkimTags(v string) map[string]string {
	tags := map[string]string{}
	for _, part := range strings.Split(v, ";") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		tags[strings.TrimSpace(k)] = strings.Join(strings.Fields(val), "")
	}
	return tags
}

// checkDKIM compares the published public key (p=) with ours.
func checkDKIM(rc recordCheck, txts []string) recordCheck {
	want := dkimTags(rc.Value)["p"]
	for _, t := range txts {
		if dkimTags(t)["p"] == want {
			rc.Status = "ok"
			return rc
		}
	}
	rc.Status, rc.Detail = "mismatch", "A TXT record exists but its public key (p=) differs from this domain's key: copy the value again, whole."
	return rc
}

// checkDMARC accepts any DMARC policy (p=none is the suggested start).
func checkDMARC(rc recordCheck, txts []string) recordCheck {
	n := 0
	for _, t := range txts {
		if strings.HasPrefix(strings.TrimSpace(t), "v=DMARC1") {
			n++
		}
	}
	switch n {
	case 0:
		rc.Status, rc.Detail = "missing", "No DMARC (v=DMARC1) record found at "+rc.Name+"."
	case 1:
		rc.Status = "ok"
	default:
		rc.Status, rc.Detail = "mismatch", "There are several DMARC records: keep one."
	}
	return rc
}
