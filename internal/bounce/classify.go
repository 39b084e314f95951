package bounce

import (
	"regexp"
	"strconv"
	"strings"
)

// Reason names. They are finer-grained than Kind and are what the
// classifier decides first; Kind is derived from the reason.
const (
	ReasonUserUnknown     = "userunknown"
	ReasonHostUnknown     = "hostunknown"
	ReasonHasMoved        = "hasmoved"
	ReasonNotAccept       = "notaccept"
	ReasonMailboxFull     = "mailboxfull"
	ReasonSuspend         = "suspend"
	ReasonExpired         = "expired"
	ReasonFiltered        = "filtered"
	ReasonBlocked         = "blocked"
	ReasonSpamDetected    = "spamdetected"
	ReasonPolicyViolation = "policyviolation"
	ReasonSecurityError   = "securityerror"
	ReasonAuthFailure     = "authfailure"
	ReasonRequirePTR      = "requireptr"
	ReasonBadReputation   = "badreputation"
	ReasonNoRelaying      = "norelaying"
	ReasonRateLimited     = "ratelimited"
	ReasonTooLarge        = "mesgtoobig"
	ReasonExceedLimit     = "exceedlimit"
	ReasonSystemFull      = "systemfull"
	ReasonSystemError     = "systemerror"
	ReasonNetworkError    = "networkerror"
	ReasonMailerError     = "mailererror"
	ReasonContentError    = "contenterror"
	ReasonSyntaxError     = "syntaxerror"
	ReasonNotCompliantRFC = "notcompliantrfc"
	ReasonFailedSTARTTLS  = "failedstarttls"
	ReasonRejected        = "rejected"
	ReasonOnHold          = "onhold"
	ReasonUndefined       = "undefined"
	ReasonDelivered       = "delivered"
	ReasonFeedback        = "feedback"
	ReasonVacation        = "vacation"
)

type reasonRule struct {
	reason string
	re     *regexp.Regexp
}

func rules(pairs ...string) []reasonRule {
	out := make([]reasonRule, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		// Patterns are lower case; normalizeText lower-cases the input,
		// which is much cheaper than case-folding in the matcher.
		out = append(out, reasonRule{pairs[i], regexp.MustCompile(pairs[i+1])})
	}
	return out
}

// strongRules are checked in order against the (address-stripped,
// whitespace-collapsed) diagnostic text. A match here beats the enhanced
// status code, because servers often send a generic or wrong code with a
// precise text.
var strongRules = rules(
	ReasonRejected, `(domain of sender|sender (address|domain)|envelope sender).{0,60}(does not exist|not exist|unknown|not found|must resolve|not resolv|invalid|rejected|not allowed|denied)|`+
		`(group|groupe|gruppe|grupo).{0,120}(may not exist|might not exist|n'existe pas|existiert nicht|no existe)|グループ.{0,60}存在しない|not a member of|you are not (allowed|permitted|authori[sz]ed) to (post|send)|only members can post|`+
		`(sender|from) (address )?(verification|verify) failed`,
	ReasonRateLimited, `too many (recipients|messages|connections|mails|emails) (this|per|in the last|in this) (hour|day|minute|session)|\brate[- ]?limit|sending (rate|quota) exceeded|connection frequency limited`,
	ReasonFiltered, `recipient'?s? (preferences|settings|privacy)|refused due to recipient`,
	ReasonNetworkError, `malformed or unexpected name server reply|host not found, try again|name service error.{0,100}try again|\bservfail\b|temporary (dns|name service|lookup) (error|failure)|dns (lookup )?(timeout|timed out)`,
	ReasonFiltered, `\bfilter(ed)? (by|because)|content filter|rejected by (the )?(recipient'?s? )?(filter|rule)|blocked by (the )?(recipient|user)'?s? (filter|rule|setting)`,
	ReasonMailboxFull, `mail ?box (is |was )?(currently )?full|mail ?box.{0,40}\b(is|was) full|\bfull mail ?box|`+
		`over ?quota|\bquota (exceeded|exceed|full|violation)|exceed(s|ed)? (his|her|their|its|the|your|the user'?s?|the recipient'?s?)? ?(mail ?box |storage |disk )?(quota|storage)|`+
		`(mail ?box|storage|disk|account) (size )?(quota|limit) (exceeded|reached)|mail ?box size limit|(mailbox|inbox|account|mail ?folder) (is )?(over|at) (its )?(quota|capacity|the limit)|`+
		`\bnot enough (disk )?(space|storage)|insufficient (disk )?space|(mail ?box|inbox|account) (is )?(full|too large)|`+
		`too much mail|maildir (is )?(full|over quota)|mailbox has exceeded|storage (space )?(is )?full|user'?s? (disk|mailbox|storage) (is )?full|exceeded storage allocation|`+
		`out of (disk )?space|quota (has been )?(exceeded|reached)|mail ?box exceeds|exceeds (the )?allowed (size|quota)|`+
		`has exceeded (his|her|its|the) (quota|storage|allowed)`,
	ReasonSuspend, `(account|mail ?box|user|address|recipient|e-?mail account)\b.{0,50}\b(is|has been|was|been)? ?(temporarily |currently |permanently )?(disabled|suspended|deactivated|inactive|not active|locked|frozen|expired|closed|cancell?ed|terminated|blocked by the administrator)|`+
		`(disabled|suspended|inactive|deactivated|closed|frozen|locked) (user|account|mail ?box|recipient|address)|account (is )?(on hold|not enabled)|`+
		`mailbox (has been )?(disabled|suspended)|user suspended|service (is )?suspended`,
	ReasonHasMoved, `\bhas moved\b|address (has )?changed|has been replaced by|\bmoved (permanently )?to\b|new (e-?mail )?address is|no longer (uses|using) this address`,
	ReasonNotAccept, `(does not|doesn'?t|do not|will not|won'?t) accept (any )?(e-?)?mail|not accepting (any )?(e-?)?mail|accepts? no (e-?)?mail|null mx|no mail (is )?accepted|`+
		`domain (does not|doesn'?t) (receive|accept)|not (currently )?accepting (network )?messages|mail (is )?not accepted here|indicated no smtp service|no smtp service (is )?(offered|available|provided)`,
	ReasonExpired, `retry time(out)? (not reached|exceeded)|have been failing for a long time|failed (after )?\d+ (delivery )?attempts|for the last \d+ (seconds|minutes|hours|days)|delivery time expired|\bexpired\b.{0,30}(queue|deliver|retry|time)|message (has )?expired|`+
		`(been|was|remained|sat) (in|on) (the )?(mail )?queue (for )?too long|too long in (the )?queue|`+
		`could not be delivered (with)?in (the last )?\d+|(for|after|within) (more than )?\d+ (hours?|days?|minutes?)\b.{0,40}(delivery|deliver|giving|give up|expired|failed|bounc|unable|not been)|`+
		`(unable|failed|not able) to deliver.{0,60}(for|within|after) (more than )?\d+ (hours?|days?)|has not been delivered.{0,40}(hours|days)|`+
		`maximum (queue |delivery )?(time|lifetime)|queue (lifetime|timeout)|delivery (period|attempts?) (has )?(expired|exhausted)|`+
		`message timed out|time limit (was )?(reached|exceeded)|(retry|delivery) (limit|timeout) (exceeded|reached)|`+
		`\bttl (exceeded|expired)|exceeded the (maximum )?(delivery|retry) (time|period)|message (was )?(not delivered|undeliverable) (for|after) \d+`,
	ReasonHostUnknown, `\b[45]\d\d\W+([45]\.\d\.\d+\W+)?([a-z0-9-]+\.)+[a-z]{2,}\.? (does not exist|doesn'?t exist)|host (or domain name )?not found|(unknown|invalid|non-?existent|bad) (host|domain|mail domain)\b|\bdomain (name )?(not found|does not exist|doesn'?t exist|is not valid|unknown|not exist|could not be found)|`+
		`no such (host|domain)|name service error|unrouteable (mail )?domain|unroutable (mail )?domain|host unknown|(no|missing) mx (record|host)|`+
		`mx records? point to non-?existent hosts|couldn'?t find any host (named|by that name)|domain has no (valid )?(mx|dns)|`+
		`dns (lookup )?(error|failure).{0,30}(domain|host)|(domain|host) (name )?lookup failed|recipient domain (does not|doesn'?t) exist|nxdomain|unable to resolve|no route to (the )?domain|`+
		`(domain|host)( name)? (is )?unknown|illegal host/domain name`,
	ReasonBlocked, `spamhaus|spamcop|\bsorbs\b|barracuda ?(central|reputation)|\bdnsbl\b|\brbl\b|black ?list(ed)?|block ?list(ed)?|\bip (address )?(is )?(blocked|blacklisted|banned)`,
	ReasonUserUnknown, `\buser ?unknown|unknown (local[- ]?)?(user|recipient|mail ?box|account|addressee|alias)|`+
		`no such (local )?(user|mail ?box|recipient|address|account|person|alias)|`+
		`(user|mail ?box|recipient|address|account|addressee|alias|e-?mail)( name)?\b.{0,30}\b(does not|doesn'?t|did not|does no longer|no longer) exists?\b|`+
		`(user|mail ?box|recipient|account|addressee|alias)( name| address)? (is )?(unknown|not found|invalid|not valid|not known|non-?existent)|`+
		`(address|e-?mail address) (is )?(unknown|not found|invalid|non-?existent)|`+
		`invalid (recipient|address|mail ?box|user|e-?mail)|not a valid (user|mail ?box|recipient|address|e-?mail)|`+
		`unrouteable address|(recipient|user|mail ?box|account|address) not (found|exist|listed)|no mail ?box (here )?(by that name|found)|`+
		`not our customer|undeliverable address|unknown or illegal alias|user (is )?not (here|local|known)|`+
		`this user doesn'?t have an? .{0,40}account|(account|address) that you tried to reach (does not exist|is not valid)|`+
		`bad destination mail ?box|address rejected: access denied|\baddressee unknown|no account by that name|is not a known user|`+
		`(user|recipient|mailbox) lookup failed|no valid recipients|not a known (user|recipient)|`+
		`(not|isn'?t) a valid (account|user|recipient)|address unknown|no such e-?mail|user doesn'?t exist|`+
		`does not have an account|recipient (is )?not (a )?(valid|known|exist)|mail ?box not available|mailbox (is )?not exist|`+
		`user not exist|nonexistent (user|mailbox|recipient|address)|invalid (final )?(delivery )?user ?id|見つかりません|存在しません|存在しない|宛先不明|`+
		`not listed in (the )?(domino|public|address|global|directory|names)|`+
		`check (if|that|whether) (the )?(e-?mail |recipient )?address is (correct|valid)|address (couldn'?t|could not|can'?t|cannot) be found|`+
		`no existe|n'existe pas|existiert nicht|unbekannt`,
)

// softRules recognise rejections that are not about the address itself.
var softRules = rules(
	ReasonRequirePTR, `reverse (dns|lookup)|\bptr (record|lookup)|no ptr|rdns|reverse (hostname|host name)|cannot find your hostname|`+
		`(client|your) (ip |host ?name )?(address )?(has no|without|doesn'?t have|does not have) (a )?(reverse|ptr|hostname)|`+
		`(hostname|host name) (does not|doesn'?t) match|cannot resolve your address|ip name lookup failed|unresolvable (relay )?host ?name|`+
		`(reverse|forward) (dns )?(resolution|lookup) (failed|error)|not resolve your ip|`+
		`(client|sender) host name.{0,20}(unknown|not found)|client host rejected: cannot find`,
	ReasonAuthFailure, `\bdmarc\b|\bspf\b|\bdkim\b|sender (policy framework|id)|not authenticated|unauthenticated|authentication (failed|failure|required|results)|`+
		`sender address (is )?not authorized|forged|impersonat|sender verif|could not verify sender|sender domain (authentication|validation)|arc (validation|check)`,
	ReasonBadReputation, `reputation|(sender|ip|domain|your) (score|rating)|temporarily deferred due to|unexpected volume|unusual rate|suspicious activity|`+
		`(low|poor) (sender )?(reputation|quality)|too many complaints|user complaints`,
	ReasonRateLimited, `too many (connections|concurrent|simultaneous|messages|recipients in this (hour|session)|sessions|emails|mails)|rate limit|rate-limit|ratelimit|(sending|message|connection) rate|throttl|`+
		`try again later.{0,30}(too many|rate)|exceeded (the )?(maximum )?(number of )?(connections|messages (per|allowed)|sending limit)|too fast|(receiving|sending) (too many|mail at a rate)|slow down|`+
		`connection limit|concurrent connections|limit exceeded for|daily (sending )?(limit|quota)`,
	ReasonSpamDetected, `\bspam|junk mail|bulk mail|(message|content|mail) (looks|appears|seems|was (identified|classified|detected)|is (classified|identified)|considered).{0,20}(spam|unsolicited|suspicious|bulk|junk)|`+
		`unsolicited|spam ?(score|filter|assassin|detected|content)|scored too high|spamhaus.{0,20}(dbl|content)|uribl|surbl|phish|malware|virus|content (filter|rejected)|`+
		`blacklisted (url|uri|domain in)|message (content )?(rejected|refused) (due to|as|because)`,
	ReasonBlocked, `black ?list|block ?list|blocked|\bdnsbl|\brbl\b|spamhaus|spamcop|sorbs|barracuda ?(central|reputation)|`+
		`(client|sender|your|connecting) (host|ip|address|server|mta|network)\b.{0,40}(rejected|refused|denied|banned|not allowed|listed|is on)|`+
		`(access|connection) (denied|refused|rejected)|listed (at|on|in|by)|banned|deny(ing)? (access|connection)|not allowed to (send|connect|relay)|`+
		`\b(ip|ip address|address|host) (is )?(listed|blocked|banned)|poor reputation|dynamic (ip|ips|address|pool|range)|residential|dial-?up|`+
		`refused to talk to me|refused.{0,20}connection|connection refused|not accepting mail from|refused by (the )?(remote|recipient)`,
	ReasonPolicyViolation, `polic(y|ies)|prohibited|not permitted|violat|\bterms of (service|use)|acceptable use|not allowed|disallowed|forbidden|`+
		`attachment.{0,30}(not allowed|rejected|blocked|prohibited)|(file|attachment) type|executable|header (is )?(not )?(allowed|rejected)`,
	ReasonSecurityError, `security (policy|reasons|violation|error)|authentication|insecure|encryption (is )?required|tls (is )?required|must use tls|starttls|certificate|\bauth\b|`+
		`must (issue|authenticate)|relay (access )?denied without auth`,
	ReasonNoRelaying, `relay(ing)? (access )?(denied|not permitted|not allowed|prohibited|refused|disabled)|not (allowed|permitted|authorized) to relay|unable to relay|we do not relay|`+
		`(relaying|relay) (mail )?(to|for) .{0,40}(denied|not allowed|prohibited)|no relay|not a gateway|isn'?t in my list of allowed rcpthosts|relay not permitted|cannot relay|open relay`,
	ReasonTooLarge, `(message|mail|email|e-mail) (size )?(is )?(too (big|large)|exceeds?|size exceeds|larger than)|size (limit|exceeds|too large)|exceeds? (the )?(maximum|max|size|fixed)|`+
		`too (big|large) for (this|the)|message (length|size) (exceeds|limit)|maximum (message )?size|file too large|message is bigger`,
	ReasonExceedLimit, `exceeds? (the )?(local|per[- ]user|account|recipient) limit|(too many|exceeded.{0,20}) recipients|recipient limit`,
	ReasonSystemFull, `(system|disk|server|queue) (is )?(full|out of)|insufficient (system )?storage|no space left|(disk|storage) (is )?full|not enough (system )?storage`,
	ReasonFiltered, `filter(ed|ing)?\b|(rejected|refused) by (the )?(recipient|user|receiver)|recipient (has )?(refused|rejected|blocked)|domain (is )?(blocked|refused)|`+
		`(receiver|recipient) (does not|doesn'?t) (want|wish)|not authorized to (send|receive)|restricted|recipient (rejected|refused) (your|the) (message|mail)`,
	ReasonFailedSTARTTLS, `starttls|\btls\b.{0,30}(fail|error|required|handshake)|(ssl|tls) (handshake|negotiation)`,
	ReasonNotCompliantRFC, `rfc ?(2822|5322|822|5321|1123)|(not|non)[- ]?(rfc )?complian|missing (required )?(header|date|message-id|from)|`+
		`(duplicate|multiple|invalid|malformed|syntax(ically)? (invalid|incorrect)) (header|from|message-id|date|to|subject)|header (syntax|is malformed|invalid)|bare (lf|line ?feed)|line too long|8-?bit (characters|data)`,
	ReasonContentError, `content|(message|mail) (body|format)|(mime|encoding) (error|invalid)|malformed|character set|charset|bad message`,
	ReasonSyntaxError, `syntax (error|is incorrect)|command (not )?(recogni[sz]ed|unrecogni[sz]ed|unknown|not implemented)|unrecogni[sz]ed command|bad sequence of commands|`+
		`parameter(s)? (not|error|unrecogni)|line too long|invalid command|out of sequence|need (rcpt|mail)`,
	ReasonNetworkError, `(connection|connect|network|session) (timed? ?out|timeout|reset|dropped|lost|closed|error|failure|failed|unreachable|refused)|`+
		`timed? ?out|timeout|unreachable|routing loop|mail (loop|loops back)|too many hops|hop count|(could|can) ?not connect|unable to connect|no route to host|`+
		`lost connection|broken pipe|dns (error|failure|lookup|problem)|temporary (dns|lookup|failure|failed)|name server|name resolution|conversation with .{0,60} (failed|timed)|`+
		`(host|server|mx) (is )?(not responding|down|unavailable)|remote (host|server) (closed|dropped)|loop (detected|count)|loops? back to myself|network (error|is unreachable)`,
	ReasonSystemError, `(system|server|internal|local|remote) (error|problem|failure|config)|temporar(y|ily) (error|failure|problem|unavailable|rejected|deferred|not available)|`+
		`service (is )?(temporarily )?(unavailable|not available)|try again later|please try again|internal (server )?error|transaction failed|local error|`+
		`processing error|resources? (temporarily )?unavailable|out of memory|server (busy|is busy|too busy)|(system|server) (is )?(busy|overloaded)|unable to (process|handle)`,
	ReasonMailerError, `mailer error|\bmailer\b.{0,20}(failed|error)|(program|command|pipe|procmail|deliver) (exited|failed|error)|exit (code|status)|unknown mailer|mail delivery agent|\bx-unix;|pipe to|local delivery failed`,
	ReasonUserUnknown, `mail ?box (is )?unavailable|(recipient )?address rejected\.?$|recipient address rejected\W*$|^\W*([45]\d\d\W+)?([45]\.\d\.\d+\W+)?(#[45]\.\d\.\d+ )?address rejected|mailbox name not allowed|unknown address|`+
		`address (was )?rejected\W*$|undeliverable address`,
	ReasonRejected, `(sender|from|envelope[- ]?from|return[- ]?path|mail from)\b.{0,40}(rejected|refused|denied|invalid|not (allowed|accepted|permitted)|unknown|verification|bad|blacklisted)|`+
		`(rejected|refused|denied)\b.{0,20}(sender|from)|sender (address|domain)|bad sender|domain of sender|`+
		`rejected|refused|denied|not accepted|declined|unacceptable|do not accept`,
	ReasonOnHold, `on hold|held (for|in)|quarantin`,
)

// weakUserRules are address-level phrases that are too generic to override a
// specific status code or a more specific soft reason (the SMTP standard text
// of 550 is "mailbox unavailable" whatever the cause).
var weakUserRules = rules(
	ReasonUserUnknown, `mail ?box (is )?unavailable|recipient (address )?rejected|mailbox name not allowed|address (was )?rejected|`+
		`not (a )?deliverable|invalid (local|destination)|unknown|not exist|doesn'?t exist|does not exist|no longer (valid|available|active|in use|exists?)|`+
		`user not|recipient not|invalid$|account (is )?unavailable|unavailable (user|mailbox|recipient)`,
)

var (
	reAddrStrip    = regexp.MustCompile(`<?[^\s<>"'():,;\[\]@]+@[^\s<>"'():,;\[\]]+>?`)
	reURLStrip     = regexp.MustCompile(`(?i)\b(?:https?|ftp)://([^/\s?#]+)\S*`)
	reSpace        = regexp.MustCompile(`\s+`)
	reStatus       = regexp.MustCompile(`\b([245])\.(\d{1,3})\.(\d{1,3})\b`)
	reStatusNoWord = regexp.MustCompile(`(?:^|[^\d.])([245])\.(\d{1,3})\.(\d{1,3})(?:[^\d.]|\.(?:\s|$)|$)`)
	reReplyCode    = regexp.MustCompile(`(?:^|[^\d.#-])([245][0-5]\d)(?:[ -]|$)`)
)

// normalizeText prepares a diagnostic for pattern matching: addresses and
// URLs are removed (a recipient named "mailboxfull@..." must not count as a
// full mailbox), whitespace is collapsed.
func normalizeText(s string) string {
	s = truncate(s, maxClassify)
	s = reURLStrip.ReplaceAllString(s, " $1 ")
	s = reAddrStrip.ReplaceAllString(s, " ")
	s = strings.ReplaceAll(s, "_", " ")
	s = reSpace.ReplaceAllString(s, " ")
	return strings.ToLower(strings.TrimSpace(s))
}

// maxClassify bounds the text the classifier looks at.
const maxClassify = 8 << 10

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n]
}

func matchRules(rs []reasonRule, text string) string {
	for _, r := range rs {
		if r.re.MatchString(text) {
			return r.reason
		}
	}
	return ""
}

// statusReason maps an RFC 3463 enhanced status code to a reason, "" when
// the code says nothing specific.
func statusReason(status string) string {
	cls, subj, det, ok := splitStatus(status)
	if !ok || cls == 2 {
		return ""
	}
	switch subj {
	case 1:
		switch det {
		case 1, 3, 4, 5:
			return ReasonUserUnknown
		case 2:
			return ReasonHostUnknown
		case 6:
			return ReasonHasMoved
		case 7, 8:
			return ReasonRejected
		case 10:
			return ReasonNotAccept
		case 0:
			return ""
		}
	case 2:
		switch det {
		case 1:
			return ReasonSuspend
		case 2:
			return ReasonMailboxFull
		case 3:
			return ReasonExceedLimit
		case 4:
			return ReasonSystemError
		case 0:
			return ""
		}
	case 3:
		switch det {
		case 1:
			return ReasonSystemFull
		case 2:
			return ReasonNotAccept
		case 4:
			return ReasonTooLarge
		default:
			return ReasonSystemError
		}
	case 4:
		switch det {
		case 4:
			if cls == 5 {
				return ReasonHostUnknown
			}
			return ReasonNetworkError
		case 7:
			return ReasonExpired
		case 3:
			return ReasonSystemError
		case 0:
			return ""
		default:
			return ReasonNetworkError
		}
	case 5:
		if det == 0 {
			return ""
		}
		return ReasonSyntaxError
	case 6:
		return ReasonContentError
	case 7:
		switch det {
		case 1:
			return ""
		case 13:
			return ReasonSuspend
		case 23, 24, 25, 26, 27:
			if det == 27 {
				return ReasonNotAccept
			}
			if det == 25 {
				return ReasonRequirePTR
			}
			return ReasonAuthFailure
		case 0:
			return ""
		default:
			return ReasonSecurityError
		}
	}
	return ""
}

func splitStatus(status string) (cls, subj, det int, ok bool) {
	m := reStatus.FindStringSubmatch(status)
	if m == nil {
		return 0, 0, 0, false
	}
	cls, _ = strconv.Atoi(m[1])
	subj, _ = strconv.Atoi(m[2])
	det, _ = strconv.Atoi(m[3])
	return cls, subj, det, true
}

// classifyReason decides the reason for one failed recipient from its
// diagnostic text, enhanced status and SMTP reply code (0 if unknown).
func classifyReason(text, status string, code int) string {
	text = truncate(text, maxClassify)
	if reElidedUser.MatchString(text) {
		// "550 : User unknown" with the address left out is what several
		// carriers' per-user filters answer after DATA.
		return ReasonFiltered
	}
	t := normalizeText(text)
	_, subj, _, hasStatus := splitStatus(status)
	r := matchRules(strongRules, t)
	if r == "" {
		switch sr := statusReason(status); sr {
		case ReasonUserUnknown, ReasonHostUnknown, ReasonHasMoved, ReasonMailboxFull,
			ReasonSuspend, ReasonExpired, ReasonNotAccept, ReasonAuthFailure, ReasonRequirePTR:
			r = sr
		}
	}
	if r == "" {
		r = matchRules(softRules, t)
		if r == ReasonUserUnknown && hasStatus && subj == 7 {
			r = ""
		}
	}
	if r == "" {
		r = statusReason(status)
	}
	if r == "" {
		r = matchRules(weakUserRules, t)
		if r == ReasonUserUnknown && hasStatus && subj != 0 && subj != 1 && subj != 5 {
			r = ""
		}
	}
	if r == "" {
		if code == 0 {
			code = replyCode(text)
		}
		switch code {
		case 551:
			r = ReasonHasMoved
		case 552:
			r = ReasonMailboxFull
		default:
			r = ReasonUndefined
		}
	}
	if (r == ReasonHostUnknown || r == ReasonUserUnknown && reDNSError.MatchString(t)) && temporary(status, code) {
		// A failed lookup with a temporary code: DNS trouble, not (yet) a
		// bad domain.
		r = ReasonNetworkError
	}
	return r
}

var (
	reDNSError   = regexp.MustCompile(`(?i)\bdns (error|failure|lookup|type)`)
	reElidedUser = regexp.MustCompile(`(?i)\b5\d\d\s*:?\s+:\s*user unknown`)
	reAddrStatus = regexp.MustCompile(`\b[45]\.1\.[1-3]\b`)
	reMailPhase  = regexp.MustCompile(`(?i)in reply to mail from|after mail from|>>> ?mail from:?[^\n]*\n\s*<<< ?5`)
	reDataPhase  = regexp.MustCompile(`(?i)in reply to (the )?end of data|in reply to data|after (end of )?data\b|did not like our (final )?data|>>> ?data\s*\n\s*<<< ?5|for (text|data) command|after the data command|smtp command\W*\n\W*data\b`)
)

// adjustPhase refines a reason with the SMTP phase found in ctx: an
// "unknown user" answer given only after the message data was sent comes
// from a content or per-user filter, the address was accepted at RCPT.
//
// An error in reply to MAIL FROM is about the sender, not the recipient.
func adjustPhase(reason, status, ctx string) string {
	switch reason {
	case ReasonUserUnknown, ReasonHostUnknown, ReasonHasMoved, ReasonNotAccept:
	default:
		return reason
	}
	if reMailPhase.MatchString(ctx) {
		return ReasonRejected
	}
	if reason != ReasonUserUnknown {
		return reason
	}
	if _, subj, _, ok := splitStatus(status); ok && subj == 1 {
		return reason
	}
	if reDataPhase.MatchString(ctx) && !reAddrStatus.MatchString(ctx) {
		return ReasonFiltered
	}
	return reason
}

// kindOf derives the Kind from a reason and the permanence of the failure.
func kindOf(reason, status string, code int) Kind {
	switch reason {
	case ReasonDelivered:
		return KindNotBounce
	case ReasonFeedback:
		return KindComplaint
	case ReasonVacation:
		return KindAutoReply
	case ReasonUserUnknown, ReasonHostUnknown, ReasonHasMoved:
		return KindHard
	case ReasonNotAccept:
		if temporary(status, code) {
			return KindSoft
		}
		return KindHard
	}
	return KindSoft
}

func temporary(status string, code int) bool {
	if cls, _, _, ok := splitStatus(status); ok {
		return cls == 4
	}
	return code >= 400 && code < 500
}

// replyCode finds the first SMTP reply code in s (0 if none).
func replyCode(s string) int {
	m := reReplyCode.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var reReplyStatus = regexp.MustCompile(`\b[45]\d\d[ -]['"]?#?([45]\.\d{1,3}\.\d{1,3})\b`)

// findStatus finds the most relevant enhanced status code in s: one that
// follows an SMTP reply code ("550 5.1.1"), else the first one that is not
// x.0.0, else the first.
func findStatus(s string) string {
	for _, m := range reReplyStatus.FindAllStringSubmatch(s, -1) {
		if validStatus(m[1]) && !strings.HasSuffix(m[1], ".0.0") {
			return m[1]
		}
	}
	ms := reStatusNoWord.FindAllStringSubmatch(s, -1)
	first := ""
	for _, m := range ms {
		st := m[1] + "." + m[2] + "." + m[3]
		if !validStatus(st) || m[1] == "2" {
			continue
		}
		if first == "" {
			first = st
		}
		if m[2] != "0" || m[3] != "0" {
			return st
		}
	}
	return first
}

// statusField extracts the code of a DSN Status field, success codes
// included.
func statusField(v string) string {
	for _, m := range reStatusNoWord.FindAllStringSubmatch(v, -1) {
		st := m[1] + "." + m[2] + "." + m[3]
		if validStatus(st) {
			return st
		}
	}
	return ""
}

func validStatus(st string) bool {
	_, subj, det, ok := splitStatus(st)
	return ok && subj <= 7 && det < 1000
}

// ClassifySMTP classifies a synchronous SMTP reply the same way the bounce
// parser classifies a returned message, so that a rejection seen by the
// outbound MTA and the same rejection arriving later as a DSN agree:
//
//   - 2xx: KindNotBounce (delivered);
//   - 4xx, and code 0 (connection failure, timeout, no reply): KindSoft;
//   - 5xx saying that the address itself is bad (unknown user or mailbox,
//     unknown domain, moved, domain that accepts no mail; 5.1.x codes):
//     KindHard;
//   - any other 5xx (spam, policy, reputation, authentication, content,
//     size, full mailbox, disabled account, rate): KindSoft.
//
// enhanced is the RFC 3463 status ("5.1.1"), optional; if empty it is looked
// for at the start of text.
func ClassifySMTP(code int, enhanced string, text string) Kind {
	if enhanced == "" {
		enhanced = findStatus(text)
	}
	switch {
	case code >= 200 && code < 300:
		return KindNotBounce
	case code >= 400 && code < 500:
		return KindSoft
	case code >= 500 && code < 600:
	default:
		if cls, _, _, ok := splitStatus(enhanced); ok && cls == 5 && code == 0 {
			break
		}
		return KindSoft
	}
	if cls, _, _, ok := splitStatus(enhanced); ok && cls == 4 {
		// A 5xx reply with a 4.x.x code is contradictory; do not suppress.
		return KindSoft
	}
	r := classifyReason(text, enhanced, code)
	if r == ReasonNotAccept {
		return KindHard
	}
	return kindOf(r, enhanced, code)
}

// ReasonOf is like ClassifySMTP but returns the fine-grained reason name
// (for example "userunknown", "mailboxfull", "spamdetected").
func ReasonOf(code int, enhanced string, text string) string {
	if enhanced == "" {
		enhanced = findStatus(text)
	}
	if code >= 200 && code < 300 {
		return ReasonDelivered
	}
	return classifyReason(text, enhanced, code)
}
