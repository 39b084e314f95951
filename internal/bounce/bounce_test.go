package bounce

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// crlf turns a readable sample into wire format.
func crlf(s string) []byte {
	return []byte(strings.ReplaceAll(strings.TrimLeft(s, "\n"), "\n", "\r\n"))
}

const sampleDSN = `
Return-Path: <>
From: Mail Delivery System <MAILER-DAEMON@mx.sender.example>
To: bounces+abc123@lasso.example
Subject: Undelivered Mail Returned to Sender
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status;
	boundary="BOUNDARY-1"

This is a MIME-encapsulated message.

--BOUNDARY-1
Content-Description: Notification
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mx.sender.example.

<nobody@dest.example>: host mx.dest.example[192.0.2.1] said: 550 5.1.1
    <nobody@dest.example>: Recipient address rejected: User unknown in
    local recipient table (in reply to RCPT TO command)

<full@dest.example>: host mx.dest.example[192.0.2.1] said: 552 5.2.2
    <full@dest.example>: Mailbox full (in reply to RCPT TO command)

--BOUNDARY-1
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.sender.example
Arrival-Date: Mon,  1 Jan 2024 10:00:00 +0000 (UTC)

Final-Recipient: rfc822; nobody@dest.example
Original-Recipient: rfc822;nobody@dest.example
Action: failed
Status: 5.1.1
Remote-MTA: dns; mx.dest.example
Diagnostic-Code: smtp; 550 5.1.1 <nobody@dest.example>: Recipient address
    rejected: User unknown in local recipient table

Final-Recipient: rfc822; full@dest.example
Action: failed
Status: 5.2.2
Remote-MTA: dns; mx.dest.example
Diagnostic-Code: smtp; 552 5.2.2 <full@dest.example>: Mailbox full

--BOUNDARY-1
Content-Description: Undelivered Message Headers
Content-Type: text/rfc822-headers

From: News <news@lasso.example>
To: nobody@dest.example, full@dest.example
Subject: Hello
Message-ID: <msg-42@lasso.example>
X-Lasso-Send-ID: send_0123456789

--BOUNDARY-1--
`

func TestParseDSN(t *testing.T) {
	rep, err := Parse(crlf(sampleDSN))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kind != KindHard || rep.Format != "dsn" {
		t.Fatalf("kind=%s format=%s, want hard dsn", rep.Kind, rep.Format)
	}
	if len(rep.Recipients) != 2 {
		t.Fatalf("recipients = %+v", rep.Recipients)
	}
	a, b := rep.Recipients[0], rep.Recipients[1]
	if a.Address != "nobody@dest.example" || a.Kind != KindHard || a.Status != "5.1.1" || a.Reason != ReasonUserUnknown ||
		a.Action != "failed" || a.RemoteMTA != "mx.dest.example" || !strings.Contains(a.Diagnostic, "User unknown") {
		t.Errorf("first recipient = %+v", a)
	}
	if b.Address != "full@dest.example" || b.Kind != KindSoft || b.Status != "5.2.2" || b.Reason != ReasonMailboxFull {
		t.Errorf("second recipient = %+v", b)
	}
	if rep.Status != "5.1.1" || rep.Diagnostic != a.Diagnostic {
		t.Errorf("report status/diagnostic = %q %q", rep.Status, rep.Diagnostic)
	}
	if rep.OriginalMessageID != "msg-42@lasso.example" {
		t.Errorf("OriginalMessageID = %q", rep.OriginalMessageID)
	}
	if got := rep.OriginalHeader("x-lasso-send-id"); got != "send_0123456789" {
		t.Errorf("X-Lasso-Send-ID = %q", got)
	}
}

func TestParseOptionsEnvelopeTo(t *testing.T) {
	msg := `
From: MAILER-DAEMON@mx.example
To: bounces+s1@lasso.example
Subject: failure notice

Hi. This is the qmail-send program at mx.example.
I'm afraid I wasn't able to deliver your message to the following addresses.
This is a permanent error; I've given up. Sorry it didn't work out.

<bounces+s1@lasso.example>:
<gone@dest.example>:
192.0.2.9 does not like recipient.
Remote host said: 550 5.1.1 <gone@dest.example>... No such user
Giving up on 192.0.2.9.

--- Below this line is a copy of the message.

From: news@lasso.example
To: gone@dest.example
Message-ID: <m1@lasso.example>
X-Lasso-Send-ID: s1

body
`
	rep, err := ParseWithOptions([]byte(msg), ParseOptions{EnvelopeTo: "bounces+s1@lasso.example"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kind != KindHard || len(rep.Recipients) != 1 || rep.Recipients[0].Address != "gone@dest.example" {
		t.Fatalf("got %s %+v", rep.Kind, rep.Recipients)
	}
	if rep.EnvelopeTo != "bounces+s1@lasso.example" {
		t.Errorf("EnvelopeTo = %q", rep.EnvelopeTo)
	}
	// Inline originals are parsed too.
	if rep.OriginalHeader("X-Lasso-Send-ID") != "s1" || rep.OriginalMessageID != "m1@lasso.example" {
		t.Errorf("original headers = %v", rep.OriginalHeaders)
	}
}

func TestParseEximXFailed(t *testing.T) {
	msg := `
From: Mail Delivery System <Mailer-Daemon@mx.example>
To: sender@lasso.example
Subject: Mail delivery failed: returning message to sender
X-Failed-Recipients: user@over.example

This message was created automatically by mail delivery software.

A message that you sent could not be delivered to one or more of its
recipients. This is a permanent error. The following address(es) failed:

  user@over.example
    SMTP error from remote mail server after RCPT TO:<user@over.example>:
    host mx.over.example [192.0.2.7]: 452 4.2.2 Mailbox over quota

------ This is a copy of the message, including all the headers. ------

From: sender@lasso.example
To: user@over.example
Subject: hi
`
	rep, _ := Parse([]byte(msg))
	if rep.Kind != KindSoft || rep.Reason != ReasonMailboxFull || rep.Status != "4.2.2" {
		t.Fatalf("got %s %s %s", rep.Kind, rep.Reason, rep.Status)
	}
	if len(rep.Recipients) != 1 || rep.Recipients[0].Address != "user@over.example" {
		t.Fatalf("recipients %+v", rep.Recipients)
	}
}

func TestParseSuccessDSN(t *testing.T) {
	msg := strings.Replace(strings.Replace(sampleDSN, "Action: failed\nStatus: 5.1.1", "Action: delivered\nStatus: 2.0.0", 1),
		"Action: failed\nStatus: 5.2.2", "Action: relayed\nStatus: 2.0.0", 1)
	rep, _ := Parse([]byte(msg))
	if rep.Kind != KindNotBounce || rep.Reason != ReasonDelivered || len(rep.Recipients) != 2 {
		t.Fatalf("got %s %s %+v", rep.Kind, rep.Reason, rep.Recipients)
	}
}

const sampleARF = `
From: Feedback Loop <fbl@isp.example>
To: abuse@lasso.example
Subject: FW: Hello
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report;
	boundary="ARF"

--ARF
Content-Type: text/plain; charset="US-ASCII"

This is an email abuse report for an email message received from IP
192.0.2.1 on Thu, 8 Mar 2024 14:00:00 EDT.

--ARF
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: SomeGenerator/1.0
Version: 1
Original-Mail-From: <bounces+s9@lasso.example>
Original-Rcpt-To: <reader@isp.example>
Arrival-Date: Thu, 8 Mar 2024 14:00:00 EDT
Source-IP: 192.0.2.1

--ARF
Content-Type: message/rfc822
Content-Disposition: inline

From: <news@lasso.example>
To: <reader@isp.example>
Subject: Hello
Message-ID: <8787KJKJ3K4J3K4J3K4J3.mail@lasso.example>
X-Lasso-Send-ID: s9

Buy now.
--ARF--
`

func TestParseARF(t *testing.T) {
	rep, err := Parse(crlf(sampleARF))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kind != KindComplaint || rep.FeedbackType != "abuse" || rep.Format != "arf" {
		t.Fatalf("got %s %q %s", rep.Kind, rep.FeedbackType, rep.Format)
	}
	if len(rep.Recipients) != 1 || rep.Recipients[0].Address != "reader@isp.example" || rep.Recipients[0].Kind != KindComplaint {
		t.Fatalf("recipients %+v", rep.Recipients)
	}
	if rep.OriginalHeader("X-Lasso-Send-ID") != "s9" {
		t.Errorf("original headers %v", rep.OriginalHeaders)
	}

	// Without Original-Rcpt-To the recipient comes from the original's To.
	noRcpt := strings.Replace(sampleARF, "Original-Rcpt-To: <reader@isp.example>\n", "", 1)
	rep, _ = Parse([]byte(noRcpt))
	if rep.Kind != KindComplaint || len(rep.Recipients) != 1 || rep.Recipients[0].Address != "reader@isp.example" {
		t.Fatalf("no Original-Rcpt-To: %s %+v", rep.Kind, rep.Recipients)
	}
}

func TestParseAutoReply(t *testing.T) {
	cases := []string{
		"From: Jane <jane@dest.example>\nTo: news@lasso.example\nSubject: Re: Hello\nAuto-Submitted: auto-replied\n\nI am away.\n",
		"From: jane@dest.example\nTo: news@lasso.example\nSubject: Out of Office: Hello\n\nBack Monday.\n",
		"From: jane@dest.example\nTo: news@lasso.example\nSubject: Hello\nX-Autoreply: yes\n\nBack Monday.\n",
		"From: jane@dest.example\nTo: news@lasso.example\nSubject: Hello\nPrecedence: auto_reply\n\nBack Monday.\n",
		"From: jane@dest.example\nTo: news@lasso.example\nSubject: =?UTF-8?B?6Ieq5YuV5b+c562U?=\n\n不在です\n",
	}
	for i, c := range cases {
		rep, err := Parse([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Kind != KindAutoReply || len(rep.Recipients) != 1 || rep.Recipients[0].Address != "jane@dest.example" {
			t.Errorf("case %d: %s %+v", i, rep.Kind, rep.Recipients)
		}
	}
}

func TestParseNotBounce(t *testing.T) {
	rep, err := Parse([]byte("From: a@example.com\nTo: b@example.com\nSubject: lunch?\n\nAre you free?\n"))
	if err != nil || rep.Kind != KindNotBounce || len(rep.Recipients) != 0 {
		t.Fatalf("got %v %s %+v", err, rep.Kind, rep.Recipients)
	}
	rep, err = Parse(nil)
	if !errors.Is(err, ErrEmpty) || rep == nil || rep.Kind != KindNotBounce {
		t.Fatalf("empty: %v %+v", err, rep)
	}
	for _, junk := range []string{"\x00\x01\x02", "no header at all", "Content-Type: multipart/mixed\n\n--", "a: b\n\n\n"} {
		rep, err := Parse([]byte(junk))
		if err != nil || rep == nil || rep.Kind != KindNotBounce {
			t.Errorf("%q: %v %+v", junk, err, rep)
		}
	}
}

func TestParseISO2022JP(t *testing.T) {
	// "宛先が見つかりません" (recipient not found) in ISO-2022-JP.
	body := "\x1b$B08@h$,8+$D$+$j$^$;$s\x1b(B\n\n<taro@carrier.example>\n"
	msg := "From: MAILER-DAEMON@carrier.example\nTo: news@lasso.example\nSubject: Returned mail\n" +
		"Content-Type: text/plain; charset=ISO-2022-JP\n\n" + body
	rep, _ := Parse([]byte(msg))
	if rep.Kind != KindHard || len(rep.Recipients) != 1 || rep.Recipients[0].Address != "taro@carrier.example" {
		t.Fatalf("got %s %s %+v", rep.Kind, rep.Reason, rep.Recipients)
	}
}

func TestParseSESJSON(t *testing.T) {
	msg := `From: no-reply@sns.amazonaws.com
To: ops@lasso.example
Subject: AWS Notification Message

{"notificationType":"Bounce","bounce":{"bounceType":"Permanent","bounceSubType":"General","bouncedRecipients":[{"emailAddress":"x@dest.example","action":"failed","status":"5.1.1","diagnosticCode":"smtp; 550 5.1.1 user unknown"}],"reportingMTA":"dsn; a1.smtp-out.amazonses.com"},"mail":{"messageId":"0100-abc","headers":[{"name":"X-Lasso-Send-ID","value":"s7"}]}}
`
	rep, _ := Parse([]byte(msg))
	if rep.Kind != KindHard || rep.Format != "ses-json" || len(rep.Recipients) != 1 || rep.Recipients[0].Address != "x@dest.example" {
		t.Fatalf("got %s %s %+v", rep.Kind, rep.Format, rep.Recipients)
	}
	if rep.OriginalHeader("X-Lasso-Send-ID") != "s7" {
		t.Errorf("headers %v", rep.OriginalHeaders)
	}
}

func TestClassifySMTP(t *testing.T) {
	tests := []struct {
		code     int
		enhanced string
		text     string
		want     Kind
	}{
		{250, "2.0.0", "OK queued", KindNotBounce},
		{0, "", "dial tcp 192.0.2.1:25: connect: connection refused", KindSoft},
		{0, "", "i/o timeout", KindSoft},
		{421, "4.7.0", "Try again later", KindSoft},
		{450, "4.2.1", "Mailbox unavailable", KindSoft},
		{451, "4.1.1", "Recipient address rejected: User unknown", KindSoft}, // 4xx is never hard
		{550, "5.1.1", "The email account that you tried to reach does not exist.", KindHard},
		{550, "", "5.1.1 <x@y.example>: Recipient address rejected: User unknown in local recipient table", KindHard},
		{550, "", "No such user here", KindHard},
		{550, "", "Requested action not taken: mailbox unavailable", KindHard},
		{553, "5.1.2", "Host unknown", KindHard},
		{550, "", "Unrouteable address", KindHard},
		{554, "5.4.4", "Unable to route: domain does not exist", KindHard},
		{550, "5.1.6", "Recipient has moved", KindHard},
		{556, "5.1.10", "Recipient address has null MX", KindHard},
		{550, "5.7.1", "Message rejected as spam by Content Filtering", KindSoft},
		{554, "5.7.1", "Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org", KindSoft},
		{550, "5.7.26", "Unauthenticated email from example.com is not accepted due to domain's DMARC policy", KindSoft},
		{550, "5.7.1", "Requested action not taken: mailbox unavailable (policy)", KindSoft},
		{552, "5.2.2", "Mailbox full", KindSoft},
		{552, "5.3.4", "Message size exceeds fixed maximum message size", KindSoft},
		{550, "5.2.1", "The email account that you tried to reach is disabled.", KindSoft},
		{550, "5.1.1", "<x@y.example> - 192.0.2.2 has sent to too many recipients this hour", KindSoft},
		{550, "", "Relay access denied", KindSoft},
		{554, "", "Transaction failed", KindSoft},
		{550, "5.7.1", "IP address blacklisted by recipient", KindSoft},
		{550, "", "", KindSoft},
		{999, "", "weird", KindSoft},
	}
	for _, tt := range tests {
		if got := ClassifySMTP(tt.code, tt.enhanced, tt.text); got != tt.want {
			t.Errorf("ClassifySMTP(%d, %q, %q) = %s, want %s (reason %s)", tt.code, tt.enhanced, tt.text, got, tt.want,
				ReasonOf(tt.code, tt.enhanced, tt.text))
		}
	}
}

func TestReasonOf(t *testing.T) {
	tests := []struct {
		code     int
		enhanced string
		text     string
		want     string
	}{
		{550, "5.1.1", "User unknown", ReasonUserUnknown},
		{552, "5.2.2", "Over quota", ReasonMailboxFull},
		{550, "", "mailboxfull@example.com: rejected by policy", ReasonPolicyViolation},
		{250, "", "ok", ReasonDelivered},
		{554, "5.7.1", "Message rejected: spam detected", ReasonSpamDetected},
		{421, "", "Too many connections from your IP", ReasonRateLimited},
	}
	for _, tt := range tests {
		if got := ReasonOf(tt.code, tt.enhanced, tt.text); got != tt.want {
			t.Errorf("ReasonOf(%d, %q, %q) = %s, want %s", tt.code, tt.enhanced, tt.text, got, tt.want)
		}
	}
}

func TestWriteJSONLine(t *testing.T) {
	var buf bytes.Buffer
	rep := &Report{Kind: KindHard, Status: "5.1.1", Diagnostic: `550 "x" unknown`,
		Recipients: []Recipient{{Address: "a@b.example"}}}
	if err := WriteJSONLine(&buf, "x.eml", rep); err != nil {
		t.Fatal(err)
	}
	want := `{"file":"x.eml","kind":"hard","recipients":["a@b.example"],"status":"5.1.1","diagnostic":"550 \"x\" unknown"}` + "\n"
	if buf.String() != want {
		t.Errorf("got  %s want %s", buf.String(), want)
	}
	buf.Reset()
	if err := WriteJSONLine(&buf, "y.eml", &Report{Kind: KindNotBounce}); err != nil {
		t.Fatal(err)
	}
	if want := `{"file":"y.eml","kind":"not-bounce","recipients":[],"status":"","diagnostic":""}` + "\n"; buf.String() != want {
		t.Errorf("got %s", buf.String())
	}
}
