package bounce

import (
	"encoding/json"
	"regexp"
	"strings"
)

// parseFields parses "Name: value" groups separated by blank lines, with
// folded continuation lines. Used for delivery-status and feedback-report
// bodies, which are often sloppy.
func parseFields(body string) []header {
	var groups []header
	var cur header
	flush := func() {
		if len(cur) > 0 {
			groups = append(groups, cur)
		}
		cur = nil
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && len(cur) > 0 {
			cur[len(cur)-1].value += " " + strings.TrimSpace(line)
			continue
		}
		if name, ok := headerName(line); ok {
			cur = append(cur, field{name: name, value: strings.TrimSpace(line[len(name)+1:])})
			continue
		}
		if len(cur) > 0 {
			// Unfolded continuation of a long Diagnostic-Code.
			cur[len(cur)-1].value += " " + strings.TrimSpace(line)
		}
	}
	flush()
	return groups
}

var reTypePrefix = regexp.MustCompile(`^\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*;\s*`)

// stripType removes an RFC 3464 address/diagnostic type ("rfc822;",
// "smtp;", "dns;").
func stripType(v string) string {
	return strings.TrimSpace(reTypePrefix.ReplaceAllString(v, ""))
}

// ------------------------------------------------------------------ ARF

var (
	reComplaintSubject = regexp.MustCompile(`(?i)\b(complaint about message|abuse report|spam report|feedback[- ]loop|fbl report|email abuse report)\b`)
)

func (m *message) parseARF(rep *Report) bool {
	var fields []header
	for _, p := range m.arf {
		fields = append(fields, parseFields(p.body)...)
	}
	isARF := len(fields) > 0 || strings.EqualFold(m.root.params["report-type"], "feedback-report")
	if !isARF {
		// Feedback-Type fields in a plain text body (old or broken ARF).
		for _, t := range m.texts {
			if regexp.MustCompile(`(?im)^Feedback-Type:\s*\S+`).MatchString(t) {
				fields = append(fields, parseFields(t)...)
				isARF = true
				break
			}
		}
	}
	unsub := strings.EqualFold(strings.TrimSpace(m.root.header.get("X-Apple-Unsubscribe")), "true")
	if unsub {
		rep.Kind = KindComplaint
		rep.Reason = ReasonFeedback
		rep.Format = "arf"
		rep.FeedbackType = "unsubscribe"
		if as := findAddrs(m.root.header.get("From")); len(as) > 0 {
			rep.Recipients = []Recipient{{Address: as[0], Kind: KindComplaint, Reason: ReasonFeedback, Diagnostic: "unsubscribe"}}
		}
		return true
	}
	if !isARF {
		// Proprietary complaint shapes (Hotmail JMRP and similar): a
		// complaint subject from a provider with the message attached.
		if m.original == nil || !reComplaintSubject.MatchString(m.subject) {
			return false
		}
	}
	rep.Kind = KindComplaint
	rep.Reason = ReasonFeedback
	rep.Format = "arf"
	var rcpts []string
	for _, g := range fields {
		if v := g.get("Feedback-Type"); v != "" && rep.FeedbackType == "" {
			rep.FeedbackType = strings.ToLower(strings.TrimSpace(v))
		}
		for _, v := range g.values("Original-Rcpt-To") {
			rcpts = append(rcpts, findAddrs(v)...)
		}
		for _, v := range g.values("Removal-Recipient") {
			rcpts = append(rcpts, findAddrs(v)...)
		}
	}
	if rep.FeedbackType == "" {
		rep.FeedbackType = "abuse"
	}
	if len(rcpts) == 0 && m.original != nil {
		h := m.original.header
		for _, name := range []string{"X-HmXmrOriginalRecipient", "To", "Cc", "X-Original-To"} {
			for _, v := range h.values(name) {
				rcpts = append(rcpts, findAddrs(v)...)
			}
			if len(rcpts) > 0 {
				break
			}
		}
	}
	if len(rcpts) == 0 && m.original == nil {
		// Headers of the original pasted as text.
		for _, t := range m.texts {
			for _, line := range strings.Split(t, "\n") {
				if strings.HasPrefix(strings.ToLower(line), "to:") {
					rcpts = append(rcpts, findAddrs(line)...)
				}
			}
		}
	}
	for _, a := range rcpts {
		rep.Recipients = addRecipient(rep.Recipients, Recipient{
			Address: a, Kind: KindComplaint, Reason: ReasonFeedback, Action: "",
			Diagnostic: rep.FeedbackType,
		})
	}
	return true
}

// ------------------------------------------------------- Amazon SES JSON

type sesNotification struct {
	NotificationType string `json:"notificationType"`
	EventType        string `json:"eventType"`
	Bounce           *struct {
		BounceType        string `json:"bounceType"`
		BounceSubType     string `json:"bounceSubType"`
		ReportingMTA      string `json:"reportingMTA"`
		BouncedRecipients []struct {
			EmailAddress   string `json:"emailAddress"`
			Action         string `json:"action"`
			Status         string `json:"status"`
			DiagnosticCode string `json:"diagnosticCode"`
		} `json:"bouncedRecipients"`
	} `json:"bounce"`
	Complaint *struct {
		ComplainedRecipients []struct {
			EmailAddress string `json:"emailAddress"`
		} `json:"complainedRecipients"`
		ComplaintFeedbackType string `json:"complaintFeedbackType"`
	} `json:"complaint"`
	Delivery *struct {
		Recipients   []string `json:"recipients"`
		SMTPResponse string   `json:"smtpResponse"`
		ReportingMTA string   `json:"reportingMTA"`
	} `json:"delivery"`
	Mail *struct {
		MessageID string `json:"messageId"`
		Headers   []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"headers"`
	} `json:"mail"`
}

var reSNSWrap = regexp.MustCompile(`!\n ?`)

type snsEnvelope struct {
	Type    string `json:"Type"`
	Message string `json:"Message"`
}

func (m *message) parseSES(rep *Report) bool {
	texts := m.texts
	for _, t := range m.texts {
		// An SNS envelope carries the SES notification as a JSON string.
		i := strings.Index(t, `"Message"`)
		if i < 0 || !strings.Contains(t, `notificationType`) {
			continue
		}
		j := strings.LastIndex(t[:i], "{")
		if j < 0 {
			continue
		}
		js := reSNSWrap.ReplaceAllString(t[j:], "")
		var env snsEnvelope
		if json.NewDecoder(strings.NewReader(js)).Decode(&env) != nil {
			js = strings.ReplaceAll(js, "\n ", "")
			if json.NewDecoder(strings.NewReader(js)).Decode(&env) != nil {
				continue
			}
		}
		if env.Message != "" {
			texts = append([]string{env.Message}, texts...)
		}
	}
	for _, t := range texts {
		i := strings.Index(t, `{"notificationType"`)
		if i < 0 {
			i = strings.Index(t, `{"eventType"`)
		}
		if i < 0 {
			continue
		}
		js := t[i:]
		// Amazon SNS mails wrap long lines with "!\n ".
		js = reSNSWrap.ReplaceAllString(js, "")
		var n sesNotification
		dec := json.NewDecoder(strings.NewReader(js))
		if err := dec.Decode(&n); err != nil {
			// Try joining all lines.
			js2 := strings.ReplaceAll(js, "\n", "")
			if err2 := json.NewDecoder(strings.NewReader(js2)).Decode(&n); err2 != nil {
				continue
			}
		}
		typ := strings.ToLower(n.NotificationType + n.EventType)
		rep.Format = "ses-json"
		if n.Mail != nil {
			rep.OriginalMessageID = n.Mail.MessageID
			if len(n.Mail.Headers) > 0 {
				rep.OriginalHeaders = map[string][]string{}
				for _, h := range n.Mail.Headers {
					k := canonicalKey(h.Name)
					rep.OriginalHeaders[k] = append(rep.OriginalHeaders[k], h.Value)
				}
				if id := rep.OriginalHeader("Message-Id"); id != "" {
					rep.OriginalMessageID = strings.Trim(id, "<> ")
				}
			}
		}
		switch {
		case strings.Contains(typ, "complaint") && n.Complaint != nil:
			rep.Kind = KindComplaint
			rep.Reason = ReasonFeedback
			rep.FeedbackType = n.Complaint.ComplaintFeedbackType
			if rep.FeedbackType == "" {
				rep.FeedbackType = "abuse"
			}
			for _, r := range n.Complaint.ComplainedRecipients {
				rep.Recipients = addRecipient(rep.Recipients, Recipient{Address: r.EmailAddress, Kind: KindComplaint, Reason: ReasonFeedback})
			}
		case strings.Contains(typ, "delivery") && n.Delivery != nil:
			rep.Kind = KindNotBounce
			rep.Reason = ReasonDelivered
			for _, a := range n.Delivery.Recipients {
				rep.Recipients = addRecipient(rep.Recipients, Recipient{
					Address: a, Kind: KindNotBounce, Reason: ReasonDelivered, Action: "delivered",
					Status: findStatus(n.Delivery.SMTPResponse), Diagnostic: n.Delivery.SMTPResponse,
					RemoteMTA: stripType(n.Delivery.ReportingMTA),
				})
			}
		case strings.Contains(typ, "bounce") && n.Bounce != nil:
			for _, r := range n.Bounce.BouncedRecipients {
				diag := stripType(r.DiagnosticCode)
				st := r.Status
				if !validStatus(st) {
					st = findStatus(diag)
				}
				code := replyCode(diag)
				reason := classifyReason(diag, st, code)
				if reason == ReasonUndefined {
					switch {
					case strings.EqualFold(n.Bounce.BounceSubType, "Suppressed"), strings.EqualFold(n.Bounce.BounceSubType, "OnAccountSuppressionList"):
						reason = ReasonUserUnknown
					case strings.EqualFold(n.Bounce.BounceSubType, "MailboxFull"):
						reason = ReasonMailboxFull
					case strings.EqualFold(n.Bounce.BounceSubType, "MessageTooLarge"):
						reason = ReasonTooLarge
					case strings.EqualFold(n.Bounce.BounceSubType, "ContentRejected"):
						reason = ReasonContentError
					case strings.EqualFold(n.Bounce.BounceSubType, "NoEmail"):
						reason = ReasonUserUnknown
					}
				}
				k := kindOf(reason, st, code)
				rep.Recipients = addRecipient(rep.Recipients, Recipient{
					Address: r.EmailAddress, Kind: k, Reason: reason, Status: st,
					Diagnostic: collapse(diag, 1000), Action: r.Action, RemoteMTA: stripType(n.Bounce.ReportingMTA),
				})
			}
		default:
			rep.Format = ""
			continue
		}
		return true
	}
	return false
}

// ------------------------------------------------------------------ DSN

func (m *message) dsnGroups() []header {
	var groups []header
	for _, p := range m.dsn {
		groups = append(groups, parseFields(p.body)...)
	}
	if len(groups) == 0 {
		// DSN fields pasted into a text part.
		for _, t := range m.texts {
			if regexp.MustCompile(`(?im)^(Final|Original)-Recipient:\s*\S`).MatchString(t) {
				groups = append(groups, parseFields(t)...)
			}
		}
	}
	// Split groups that hold several recipients without a blank line.
	var out []header
	for _, g := range groups {
		var cur header
		seen := false
		for _, f := range g {
			if strings.EqualFold(f.name, "Final-Recipient") {
				if seen {
					out = append(out, cur)
					cur = nil
				}
				seen = true
			}
			cur = append(cur, f)
		}
		out = append(out, cur)
	}
	return out
}

func (m *message) parseDSN(rep *Report) bool {
	groups := m.dsnGroups()
	if len(groups) == 0 {
		return false
	}
	human := strings.Join(m.texts, "\n")
	human = cutOriginal(human)
	var failed, ok []Recipient
	nRcpt := 0
	var all []string
	for _, g := range groups {
		if g.has("Final-Recipient") || g.has("Original-Recipient") {
			nRcpt++
			all = append(all, dsnAddress(g.get("Final-Recipient")))
		}
	}
	if len(groups) > maxRecipients {
		groups = groups[:maxRecipients]
	}
	for _, g := range groups {
		addr := dsnAddress(g.get("Final-Recipient"))
		if addr == "" {
			addr = dsnAddress(g.get("Original-Recipient"))
		}
		if addr == "" {
			addr = dsnAddress(g.get("X-Actual-Recipient"))
		}
		if addr == "" {
			continue
		}
		action := strings.ToLower(strings.TrimSpace(g.get("Action")))
		if i := strings.IndexAny(action, " ("); i > 0 {
			action = action[:i]
		}
		status := statusField(g.get("Status"))
		diag := stripType(g.get("Diagnostic-Code"))
		if diag == "" {
			diag = strings.TrimSpace(g.get("X-Diagnostic"))
		}
		remote := stripType(g.get("Remote-MTA"))
		code := replyCode(stripAddrs(diag))
		if st := findStatus(diag); st != "" && (status == "" || st[0] == status[0]) {
			// The remote server's own code is more precise than the
			// reporting MTA's summary.
			status = st
		}
		success := action == "delivered" || action == "relayed" || action == "expanded" || action == "deliverable" ||
			(action == "" && strings.HasPrefix(status, "2."))
		if success {
			ok = addRecipient(ok, Recipient{Address: addr, Kind: KindNotBounce, Reason: ReasonDelivered,
				Status: status, Diagnostic: collapse(diag, 1000), Action: action, RemoteMTA: remote})
			continue
		}
		block := recipientBlock(human, addr, all...)
		ctx := block
		if nRcpt == 1 && len(human) < 8000 {
			ctx = human
		}
		text := diag
		reason := classifyReason(text, status, code)
		if diag == "" || reason == ReasonUndefined || (statusReason(status) == "" && !strongMatch(diag)) {
			text = diag + "\n" + ctx
			if code == 0 {
				code = replyCode(stripAddrs(text))
			}
			if status == "" {
				status = findStatus(text)
			}
			r2 := classifyReason(text, status, code)
			if reason == ReasonUndefined || diag == "" {
				reason = r2
			}
		}
		reason = adjustPhase(reason, status, diag+"\n"+ctx)
		if diag == "" {
			diag = diagnosticFromBlock(block)
		}
		if action == "" {
			action = "failed"
		}
		k := kindOf(reason, status, code)
		failed = addRecipient(failed, Recipient{Address: addr, Kind: k, Reason: reason, Status: status,
			Diagnostic: collapse(diag, 1000), Action: action, RemoteMTA: remote})
	}
	switch {
	case len(failed) > 0:
		rep.Recipients = failed
	case len(ok) > 0:
		rep.Recipients = ok
		rep.Kind = KindNotBounce
		rep.Reason = ReasonDelivered
	default:
		return false
	}
	rep.Format = "dsn"
	return true
}

func strongMatch(text string) bool {
	return matchRules(strongRules, normalizeText(text)) != ""
}

func genericStatus(s string) bool {
	return strings.HasSuffix(s, ".0.0")
}

// dsnAddress extracts the address of a Final-Recipient style field.
func dsnAddress(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return ""
	}
	if i := strings.IndexByte(v, ';'); i >= 0 {
		v = strings.TrimSpace(v[i+1:])
	}
	if as := findAddrs(v); len(as) > 0 {
		return as[0]
	}
	return ""
}

func mentionsOther(line, addr string, others []string) bool {
	l := strings.ToLower(line)
	if strings.Contains(l, strings.ToLower(addr)) {
		return false
	}
	for _, o := range others {
		if o != "" && strings.Contains(l, strings.ToLower(o)) {
			return true
		}
	}
	return false
}

// recipientBlock returns the lines of text that talk about addr: from the
// first line mentioning it to the next blank line after some content.
func recipientBlock(text, addr string, others ...string) string {
	if text == "" || addr == "" {
		return ""
	}
	lower := strings.ToLower(text)
	i := strings.Index(lower, strings.ToLower(addr))
	if i < 0 {
		return ""
	}
	start := strings.LastIndexByte(text[:i], '\n') + 1
	lines := strings.Split(text[start:], "\n")
	var out []string
	content := 0
	for n, line := range lines {
		if n > 25 {
			break
		}
		if n > 0 && mentionsOther(line, addr, others) {
			break
		}
		if strings.TrimSpace(line) == "" {
			if content >= 2 {
				break
			}
			continue
		}
		out = append(out, line)
		content++
	}
	return strings.Join(out, "\n")
}

// ------------------------------------------------------------ auto-reply

var (
	reAutoSubject = regexp.MustCompile(`(?i)(out of (the )?office|\bauto(matic|matische)?[- ]?(reply|response|responder|antwort|answer)|\bautoreply|\bvacation\b|` +
		`\baway from\b|\bon (vacation|leave|holiday)|abwesenheit|r[ée]ponse automatique|absence|\bOOO\b|自動応答|自動返信|不在|` +
		`risposta automatica|respuesta autom[áa]tica|resposta autom[áa]tica|automatisch antwoord|\baway until\b|i am away|i'?m away)`)
)

func (m *message) isAutoReply() bool {
	h := m.root.header
	as := strings.ToLower(h.get("Auto-Submitted"))
	if strings.Contains(as, "auto-replied") || strings.Contains(as, "auto-notified") {
		return true
	}
	if h.has("X-Autoreply") || h.has("X-Autorespond") || h.has("X-Autoresponder") || h.has("X-Auto-Reply") ||
		strings.EqualFold(h.get("X-Apple-Action"), "VACATION") || h.has("X-Vacation") {
		return true
	}
	prec := strings.ToLower(h.get("Precedence"))
	if strings.Contains(prec, "auto_reply") || strings.Contains(prec, "auto-reply") {
		return true
	}
	if reAutoSubject.MatchString(m.subject) {
		return true
	}
	return false
}

func (m *message) parseAutoReply(rep *Report) {
	rep.Kind = KindAutoReply
	rep.Reason = ReasonVacation
	rep.Format = "auto-reply"
	h := m.root.header
	var addrs []string
	for _, name := range []string{"From", "Reply-To", "Sender", "Return-Path"} {
		addrs = findAddrs(h.get(name))
		if len(addrs) > 0 {
			break
		}
	}
	if len(addrs) > 0 {
		rep.Recipients = []Recipient{{Address: addrs[0], Kind: KindAutoReply, Reason: ReasonVacation,
			Diagnostic: collapse(m.subject, 200)}}
	}
}
