package bounce

import (
	"regexp"
	"strings"
)

var (
	reBounceFrom = regexp.MustCompile(`(?i)mailer[- ]?daemon|post_?master|mail delivery|mail ?administrator|mailadmin|mdaemon|` +
		`\bdaemon\b|mail system|microsoftexchange|delivery (status|subsystem|notification)|bounce`)
	reBounceSubject = regexp.MustCompile(`(?i)undeliver|undelivered|delivery (status notification|failure|failed|has failed|notification|report|problem|error|unsuccessful)|` +
		`returned mail|mail delivery failed|failure notice|non[- ]?deliver|could not be delivered|couldn'?t be delivered|\bbounce|not delivered|` +
		`mail system error|unzustellbar|nicht zustellbar|non remis|no entregado|message (not delivered|failure|rejected)|` +
		`warning: could not send|error sending|there was an error|returned to sender|mail failure|send failure|permanent error|` +
		`delivery fail|failed delivery|mail could not|nondeliverable|rejected:|notice of delivery|unable to deliver|不達|配信|エラー|` +
		`message you sent|notification de|ошибка|не доставлено|rapport de non|recapito|mensaje no`)
	reBounceBody = regexp.MustCompile(`(?i)could not be delivered|couldn'?t be delivered|was not delivered|wasn'?t delivered|undeliverable|delivery (has )?failed|` +
		`failed permanently|permanent (fatal )?error|qmail-send program|mail delivery software|unable to deliver|` +
		`delivery to the following recipient|following (e-?mail )?address(es)?( had)? (failed|had|permanent)|message (could not|was not|wasn'?t|cannot) (be )?delivered|` +
		`returned mail|not be delivered|delivery status notification|automatically generated delivery|non-?delivery|` +
		`rejected your message|error delivering|delivery failure|did not reach|could not deliver|cannot be delivered|` +
		`there was a (problem|temporary problem) delivering|has been rejected|not reach the following|failed to deliver|delivery problem|` +
		`transcript of session|mail system at host|message was rejected|your message to .{0,80} was|the following recipient|fatal errors|` +
		`delivery to the following|mail could not be delivered|you are not a member|not member of|invalid (user|recipient) address|no such user|user unknown|unknown user|` +
		`recipient address rejected|error message below|配信|送信できません|宛先不明`)
	reSeparator = regexp.MustCompile(`(?i)^[-=_*#~+\s>]*(?:` +
		`below this line is a copy of the message|this is a copy of the message|(?:here is |below is |following is )?a copy of (?:the|your) (?:original )?message|` +
		`(?:original|returned|bounced|rejected|undelivered|unsent|your) (?:message|e-?mail|mail)(?: headers?)?(?: (?:is |was )?(?:follows?|below|attached|included))?[-=_*\s:.]*$|` +
		`the original message (?:is |headers? )?(?:follows|below|attached|included)|message headers? follows?|headers? of (?:the|your) (?:original|returned) message|` +
		`returned (?:mail|message) follows|unsent message (?:below|follows)|undelivered message (?:headers? )?(?:follows|below)|original (?:message )?headers?[-=_*\s:.]*$|` +
		`content-type: message/rfc822|the header of the original message|bounced e-?mail:|` +
		`following is a copy|the first \d+ lines|text of (?:the|your) (?:original|returned) message|message text follows|` +
		`rfc822 headers|included is a copy|received: from )`)
	reHeaderStart = regexp.MustCompile(`^(Return-Path: ?<|Received: from |Received: by |DKIM-Signature: |Message-I[Dd]: ?<|X-Received: )`)
	reAddrLine    = regexp.MustCompile(`^\s*(?:[-*•>]\s*)?(?:<<<\s*)?(?:[45]\d\d[ -]\s*)?(?:"[^"]*"\s*)?<?(` + reAddr.String() + `)>?\s*(?::|\.\.\.|,|;|$|\s)`)
	rePhraseAddr  = regexp.MustCompile(`(?i)\b(?:to|for|recipients?|address|addressee|rcpt to|destinataire|empf[äa]nger|destinatario|mailbox|user|failed)(?:\s*:\s*|\s+|\s*<)(?:rfc822;\s*)?["']?<?(` + reAddr.String() + `)`)
	reListedAddr  = regexp.MustCompile(`^\s*<?` + reAddr.String() + `>?\s*(:.*|\.\.\..*|\s\(.*|\s\[.*)?$`)
	reHeaderLike  = regexp.MustCompile(`(?i)^\s*(to|cc|bcc|from|sender|reply-to|subject|sent|date|delivered-to|x-original-to|return-path|envelope-to)\s*:`)
	reRoleAddr    = regexp.MustCompile(`(?i)^(postmaster|mailer-daemon|abuse|hostmaster|webmaster|root|noreply|no-reply|donotreply|support|help|admin)@`)
	reBoilerplate = regexp.MustCompile(`(?i)for further assistance|postmaster|mail system|help desk|please contact|www\.|http`)
	reInformative = regexp.MustCompile(`[0-9]{3}|(?i)unknown|exist|full|quota|reject|denied|refused|invalid|error|fail|not|disabled|expired|blocked|spam|timed|time out|couldn|unable`)
)

func (m *message) looksLikeBounce() bool {
	h := m.root.header
	if h.has("X-Failed-Recipients") {
		return true
	}
	if reBounceFrom.MatchString(m.from) || reBounceFrom.MatchString(h.get("Return-Path")) && !strings.Contains(h.get("Return-Path"), "@") {
		return true
	}
	if reBounceSubject.MatchString(m.subject) {
		return true
	}
	text := cutOriginal(strings.Join(m.texts, "\n"))
	return reBounceBody.MatchString(text)
}

// cutOriginal drops the returned original message (and everything after
// it) from a bounce text.
func cutOriginal(text string) string {
	before, _ := splitOriginal(text)
	return before
}

// splitOriginal splits a bounce text at the start of the returned original
// message (its separator line or its first header line).
func splitOriginal(text string) (string, string) {
	lines := strings.Split(text, "\n")
	seenContent := 0
	for i, line := range lines {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if seenContent > 0 && (reSeparator.MatchString(t) || reHeaderStart.MatchString(line)) {
			return strings.Join(lines[:i], "\n"), strings.Join(lines[i:], "\n")
		}
		seenContent++
	}
	return text, ""
}

// inlineOriginal parses the header of an original message that a bounce
// quotes inline (qmail, Exim, many others) rather than attaching it.
func inlineOriginal(text string) *part {
	_, after := splitOriginal(text)
	if after == "" {
		return nil
	}
	lines := strings.Split(after, "\n")
	for i := 0; i < len(lines) && i < 6; i++ {
		if _, ok := headerName(lines[i]); ok && !reSeparator.MatchString(strings.TrimSpace(lines[i])) || reHeaderStart.MatchString(lines[i]) {
			h, _, ok := splitHeader(strings.Join(lines[i:], "\n"))
			if ok && len(h) >= 2 {
				return &part{header: h, hasHeader: true, mediaType: "text/rfc822-headers"}
			}
			return nil
		}
	}
	return nil
}

type candidate struct {
	addr string
	line int
	role bool
}

// textRecipients finds the recipients a free-text bounce talks about.
func (m *message) textRecipients(lines []string) []candidate {
	var cands, excluded []candidate
	seen := map[string]bool{}
	strict := false
	add := func(a string, line int) {
		a = cleanAddr(a)
		if a == "" {
			return
		}
		k := strings.ToLower(a)
		if seen[k] {
			return
		}
		if m.exclude[k] || m.excludeOrig[k] {
			if !strict && reListedAddr.MatchString(lines[line]) {
				seen[k] = true
				excluded = append(excluded, candidate{addr: a, line: line, role: reRoleAddr.MatchString(a)})
			}
			return
		}
		seen[k] = true
		cands = append(cands, candidate{addr: a, line: line, role: reRoleAddr.MatchString(a)})
	}
	for i, line := range lines {
		if mm := reAddrLine.FindStringSubmatchIndex(line); mm != nil && !pathBefore(line, mm[2]) {
			strict = false
			add(line[mm[2]:mm[3]], i)
			continue
		}
		strict = true
		if reHeaderLike.MatchString(line) {
			continue // "To: x" in a summary of the original message
		}
		for _, mm := range rePhraseAddr.FindAllStringSubmatchIndex(line, -1) {
			if !pathBefore(line, mm[2]) {
				add(line[mm[2]:mm[3]], i)
			}
		}
	}
	if len(cands) == 0 {
		// Any address in the explanation that is not the sender's.
		strict = true
		for i, line := range lines {
			for _, a := range findAddrs(line) {
				add(a, i)
			}
		}
	}
	if len(cands) == 0 && len(excluded) > 0 {
		// The only addresses listed as recipients are also sender-side
		// addresses (bounces to oneself, forwarding, anonymised samples).
		cands = excluded
	}
	// Drop role addresses (postmaster@ in boilerplate) when real ones exist.
	nonRole := 0
	for _, c := range cands {
		if !c.role {
			nonRole++
		}
	}
	if nonRole > 0 && nonRole < len(cands) {
		var out []candidate
		for _, c := range cands {
			if !c.role || !reBoilerplate.MatchString(lines[c.line]) {
				out = append(out, c)
			}
		}
		cands = out
	}
	return cands
}

func pathBefore(s string, i int) bool {
	return i > 0 && (s[i-1] == '/' || s[i-1] == '|' || s[i-1] == '\\')
}

// addrLines returns the indexes of all lines mentioning addr.
func addrLines(lines []string, addr string) []int {
	var out []int
	la := strings.ToLower(addr)
	for i, l := range lines {
		if strings.Contains(strings.ToLower(l), la) {
			out = append(out, i)
		}
	}
	return out
}

func (m *message) parseText(rep *Report) bool {
	if !m.looksLikeBounce() {
		return false
	}
	full := strings.Join(m.texts, "\n")
	text := cutOriginal(full)
	lines := strings.Split(text, "\n")

	cands := m.textRecipients(lines)
	if v := m.root.header.values("X-Failed-Recipients"); len(v) > 0 && len(cands) == 0 {
		seen := map[string]bool{}
		for _, val := range v {
			for _, a := range findAddrs(val) {
				k := strings.ToLower(a)
				if seen[k] {
					continue
				}
				seen[k] = true
				ln := -1
				if idx := addrLines(lines, a); len(idx) > 0 {
					ln = idx[0]
				}
				cands = append(cands, candidate{addr: a, line: ln})
			}
		}
	}
	if len(cands) > maxRecipients {
		cands = cands[:maxRecipients]
	}
	if len(cands) == 0 {
		// Fall back to the recipients of the returned original.
		var addrs []string
		if m.original != nil {
			for _, name := range []string{"X-Original-To", "To", "Cc"} {
				for _, v := range m.original.header.values(name) {
					addrs = append(addrs, findAddrs(v)...)
				}
				if len(addrs) > 0 {
					break
				}
			}
		}
		if len(addrs) == 0 {
			for _, name := range []string{"X-Original-To", "Original-Recipient", "Final-Recipient"} {
				addrs = append(addrs, findAddrs(m.root.header.get(name))...)
			}
		}
		if len(addrs) == 0 {
			// Headers of the original that were pasted as text.
			for _, l := range strings.Split(full, "\n") {
				if strings.HasPrefix(l, "To:") {
					addrs = append(addrs, findAddrs(l)...)
					break
				}
			}
		}
		seen := map[string]bool{}
		for _, a := range addrs {
			k := strings.ToLower(a)
			if seen[k] || m.exclude[k] {
				continue
			}
			seen[k] = true
			cands = append(cands, candidate{addr: a, line: -1})
		}
	}

	rep.Format = "text"
	wholeDiag := diagnosticFromBlock(text)
	if len(cands) == 0 {
		status := findStatus(text)
		code := replyCode(text)
		reason := classifyReason(text, status, code)
		rep.Kind = kindOf(reason, status, code)
		rep.Reason = reason
		rep.Status = status
		rep.Diagnostic = wholeDiag
		return true
	}
	// Sort candidate line starts to cut blocks.
	starts := make([]int, 0, len(cands))
	for _, c := range cands {
		for _, ln := range addrLines(lines, c.addr) {
			starts = append(starts, ln)
		}
	}
	for _, c := range cands {
		block := ""
		if c.line >= 0 {
			end := len(lines)
			for _, s := range starts {
				if s > c.line && s < end && !strings.Contains(strings.ToLower(lines[s]), strings.ToLower(c.addr)) {
					end = s
				}
			}
			end = blockEnd(lines, c.line, end)
			block = strings.Join(lines[c.line:end], "\n")
		}
		src := block
		if !informative(block, c.addr) || len(cands) == 1 {
			if len(cands) == 1 {
				src = block + "\n" + text
			} else {
				src = text
			}
		}
		status := findStatus(block)
		if status == "" {
			status = findStatus(src)
		}
		code := replyCode(stripAddrs(block))
		if code == 0 {
			code = replyCode(stripAddrs(src))
		}
		reason := classifyReason(block, status, code)
		if reason == ReasonUndefined || !informative(block, c.addr) || len(cands) == 1 && !strongMatch(block) {
			if r2 := classifyReason(src, status, code); r2 != ReasonUndefined || reason == ReasonUndefined {
				reason = r2
			}
		}
		reason = adjustPhase(reason, status, src)
		diag := diagnosticFromBlock(block)
		if diag == "" || len(cands) == 1 && !reSMTPLine.MatchString(block) && reSMTPLine.MatchString(text) {
			diag = wholeDiag
		}
		rep.Recipients = addRecipient(rep.Recipients, Recipient{
			Address: c.addr, Kind: kindOf(reason, status, code), Reason: reason,
			Status: status, Diagnostic: diag, Action: "failed", RemoteMTA: remoteHost(src),
		})
	}
	return true
}

var reCodeStart = regexp.MustCompile(`^[45]\d\d[ -]`)

// blockEnd shortens the block lines[start:end] at the first blank line once
// the block has an explanation, or at a new unindented reply line once it
// has a reply code.
func blockEnd(lines []string, start, end int) int {
	content, hasCode := 0, false
	for i := start; i < end; i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" {
			if content >= 2 {
				return i
			}
			continue
		}
		if i > start && hasCode && reCodeStart.MatchString(l) {
			return i
		}
		if reReplyCode.MatchString(stripAddrs(l)) {
			hasCode = true
		}
		content++
	}
	return end
}

func stripAddrs(s string) string {
	return reAddrStrip.ReplaceAllString(s, " ")
}

// informative reports whether block says more than the address itself.
func informative(block, addr string) bool {
	b := strings.ReplaceAll(strings.ToLower(block), strings.ToLower(addr), " ")
	return reInformative.MatchString(stripAddrs(b))
}

var (
	reSMTPLine  = regexp.MustCompile(`(?m)^\s*(?:<<<\s*|>>>\s*)?[245]\d\d[ -]|said:|\bsaid\b|(?i)reason:|error:|diagnostic|\(#[245]\.`)
	reRemoteMTA = regexp.MustCompile(`(?i)(?:host|server|talking to|from|by)\s+([a-z0-9][a-z0-9.-]*\.[a-z]{2,})\.?\s*\[?[0-9a-f.:]*\]?\s*(?:said|:|\]|\()`)
)

// diagnosticFromBlock picks the most relevant part of a bounce text: from
// the first line that carries an SMTP reply, else the whole block.
func diagnosticFromBlock(block string) string {
	block = strings.TrimSpace(block)
	if block == "" {
		return ""
	}
	lines := strings.Split(block, "\n")
	for i, l := range lines {
		if reSMTPLine.MatchString(l) {
			end := i + 6
			if end > len(lines) {
				end = len(lines)
			}
			var out []string
			for _, x := range lines[i:end] {
				if strings.TrimSpace(x) == "" && len(out) > 0 {
					break
				}
				out = append(out, x)
			}
			return collapse(strings.Join(out, " "), 1000)
		}
	}
	return collapse(block, 1000)
}

func remoteHost(s string) string {
	if mm := reRemoteMTA.FindStringSubmatch(s); mm != nil {
		return strings.ToLower(mm[1])
	}
	return ""
}
