package delivery_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"
	"github.com/lasso-mail/lasso/internal/delivery"
)

func marketingMessage() *delivery.Message {
	return &delivery.Message{
		From:    delivery.Address{Name: "Acme Newsletter", Email: "news@acme.test"},
		To:      []delivery.Address{{Name: "Jöhn Dœ", Email: "john@example.test"}},
		ReplyTo: []delivery.Address{{Email: "support@acme.test"}},
		Subject: "Grüße aus München – your weekly digest with a long subject line to force encoded-word splitting",
		Text:    "Hello John,\n\nThis is the plain text.\n",
		HTML:    "<html><body><p>Hello John,</p>" + strings.Repeat("<p>A rather long paragraph of marketing copy.</p>", 40) + "</body></html>",
		Attachments: []delivery.Attachment{
			{Filename: "report.pdf", ContentType: "application/pdf", Data: bytes.Repeat([]byte{0, 1, 2, 250}, 1000)},
			{Filename: "naïve notes.txt", Data: []byte("ünïcode\n")},
		},
		MessageID: "abc123@acme.test",
		Date:      time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
		ListUnsubscribe: &delivery.ListUnsubscribe{
			URL:      "https://acme.test/u/abc123?t=xyz",
			Mailto:   "unsubscribe+abc123@acme.test",
			OneClick: true,
		},
		Headers: []delivery.Header{
			{Name: "X-Lasso-Send-ID", Value: "snd_0123456789"},
			{Name: "Feedback-ID", Value: "camp42:team7:marketing:lasso"},
		},
	}
}

// checkWireFormat asserts CRLF line endings and line lengths ≤ 998.
func checkWireFormat(t *testing.T, raw []byte) {
	t.Helper()
	for i, line := range bytes.Split(raw, []byte("\r\n")) {
		if bytes.ContainsAny(line, "\r\n") {
			t.Fatalf("line %d has a bare CR or LF: %q", i+1, line)
		}
		if len(line) > 998 {
			t.Fatalf("line %d is %d octets long", i+1, len(line))
		}
	}
}

func TestComposeMarketing(t *testing.T) {
	t.Parallel()
	raw, err := delivery.Compose(marketingMessage())
	if err != nil {
		t.Fatal(err)
	}
	checkWireFormat(t, raw)

	// Header lines are folded near 78 (an encoded-word is at most 75).
	head := raw[:bytes.Index(raw, []byte("\r\n\r\n"))]
	for _, line := range strings.Split(string(head), "\r\n") {
		if len(line) > 90 {
			t.Errorf("header line longer than 90: %q", line)
		}
	}
	for _, want := range []string{
		"List-Unsubscribe: <https://acme.test/u/abc123?t=xyz>,\r\n <mailto:unsubscribe+abc123@acme.test>\r\n",
		"List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n",
		"Message-ID: <abc123@acme.test>\r\n",
		"Date: Sat, 21 Nov 2026 12:00:00 +0000\r\n",
		"X-Lasso-Send-ID: snd_0123456789\r\n",
		"Feedback-ID: camp42:team7:marketing:lasso\r\n",
		"MIME-Version: 1.0\r\n",
	} {
		if !bytes.Contains(head, []byte(want)) {
			t.Errorf("header lacks %q\n%s", want, head)
		}
	}
	if !bytes.HasPrefix(raw, []byte("From: ")) {
		t.Errorf("message does not start with From: %q", raw[:40])
	}

	mr, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	subj, err := mr.Header.Subject()
	if err != nil || subj != marketingMessage().Subject {
		t.Errorf("Subject = %q, %v", subj, err)
	}
	to, err := mr.Header.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Name != "Jöhn Dœ" || to[0].Address != "john@example.test" {
		t.Errorf("To = %v, %v", to, err)
	}
	if ct, _, _ := mr.Header.ContentType(); ct != "multipart/mixed" {
		t.Errorf("Content-Type = %q", ct)
	}

	var texts, atts []string
	var attData [][]byte
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(p.Body)
		switch h := p.Header.(type) {
		case *mail.InlineHeader:
			ct, _, _ := h.ContentType()
			texts = append(texts, ct)
			if ct == "text/plain" && string(body) != "Hello John,\r\n\r\nThis is the plain text.\r\n" {
				t.Errorf("text body = %q", body)
			}
			if ct == "text/html" && !strings.HasSuffix(string(body), "</body></html>") {
				t.Errorf("html body decoded wrong: …%q", body[len(body)-40:])
			}
			if cte := h.Get("Content-Transfer-Encoding"); ct == "text/plain" && cte != "7bit" {
				t.Errorf("text/plain encoding = %q, want 7bit", cte)
			}
		case *mail.AttachmentHeader:
			name, _ := h.Filename()
			atts = append(atts, name)
			attData = append(attData, body)
		}
	}
	if strings.Join(texts, ",") != "text/plain,text/html" {
		t.Errorf("inline parts = %v", texts)
	}
	if strings.Join(atts, ",") != "report.pdf,naïve notes.txt" {
		t.Errorf("attachments = %v", atts)
	}
	if len(attData) == 2 && (!bytes.Equal(attData[0], marketingMessage().Attachments[0].Data) || string(attData[1]) != "ünïcode\n") {
		t.Errorf("attachment data mismatch")
	}
}

func TestComposeEncodings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, wantCTE string
	}{
		{"ascii short lines", "hello\nworld\n", "7bit"},
		{"crlf kept", "hello\r\nworld\r\n", "7bit"},
		{"non-ascii", "grüße\n", "quoted-printable"},
		{"long line", strings.Repeat("x", 1200), "quoted-printable"},
		{"bare cr", "a\rb", "quoted-printable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw, err := delivery.Compose(&delivery.Message{
				From: delivery.Address{Email: "a@b.test"}, To: []delivery.Address{{Email: "c@d.test"}},
				Subject: "s", Text: tt.text,
			})
			if err != nil {
				t.Fatal(err)
			}
			checkWireFormat(t, raw)
			if !bytes.Contains(raw, []byte("Content-Transfer-Encoding: "+tt.wantCTE+"\r\n")) {
				t.Errorf("want %s:\n%s", tt.wantCTE, raw)
			}
			mr, err := mail.CreateReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			p, err := mr.NextPart()
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(p.Body)
			want := strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(tt.text, "\r\n", "\n"), "\r", "\n"), "\n", "\r\n")
			if string(body) != want {
				t.Errorf("body = %q, want %q", body, want)
			}
		})
	}
}

func TestComposeHTMLOnlyAndDefaults(t *testing.T) {
	t.Parallel()
	raw, err := delivery.Compose(&delivery.Message{
		From: delivery.Address{Email: "a@acme.test"}, To: []delivery.Address{{Email: "c@d.test"}},
		Subject: "plain", HTML: "<p>hi</p>",
	})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if ct, _, _ := mr.Header.ContentType(); ct != "text/html" {
		t.Errorf("Content-Type = %q", ct)
	}
	id, err := mr.Header.MessageID()
	if err != nil || !strings.HasSuffix(id, "@acme.test") {
		t.Errorf("Message-ID = %q, %v", id, err)
	}
	if d, err := mr.Header.Date(); err != nil || time.Since(d) > time.Minute {
		t.Errorf("Date = %v, %v", d, err)
	}
	if bytes.Contains(raw, []byte("List-Unsubscribe")) {
		t.Error("transactional mail got List-Unsubscribe")
	}
}

func TestComposeRejects(t *testing.T) {
	t.Parallel()
	base := func() *delivery.Message {
		return &delivery.Message{
			From: delivery.Address{Email: "a@b.test"}, To: []delivery.Address{{Email: "c@d.test"}},
			Subject: "s", Text: "t",
		}
	}
	tests := []struct {
		name      string
		mutate    func(m *delivery.Message)
		injection bool
	}{
		{"subject crlf", func(m *delivery.Message) { m.Subject = "hi\r\nBcc: evil@x.test" }, true},
		{"subject lf", func(m *delivery.Message) { m.Subject = "hi\nBcc: evil@x.test" }, true},
		{"from name", func(m *delivery.Message) { m.From.Name = "x\r\nBcc: evil@x.test" }, true},
		{"to address", func(m *delivery.Message) { m.To[0].Email = "c@d.test\r\nBcc: e@x.test" }, true},
		{"extra value", func(m *delivery.Message) { m.Headers = []delivery.Header{{"X-A", "1\r\nBcc: e@x.test"}} }, true},
		{"extra name", func(m *delivery.Message) { m.Headers = []delivery.Header{{"X-A\r\nBcc", "e@x.test"}} }, true},
		{"attachment filename", func(m *delivery.Message) { m.Attachments = []delivery.Attachment{{Filename: "a\r\n.txt"}} }, true},
		{"name with colon", func(m *delivery.Message) { m.Headers = []delivery.Header{{"Bcc: x", "y"}} }, false},
		{"reserved header", func(m *delivery.Message) { m.Headers = []delivery.Header{{"subject", "again"}} }, false},
		{"bad from", func(m *delivery.Message) { m.From.Email = "not an address" }, false},
		{"no recipients", func(m *delivery.Message) { m.To = nil }, false},
		{"bad message id", func(m *delivery.Message) { m.MessageID = "no-at-sign" }, false},
		{"one-click needs https", func(m *delivery.Message) {
			m.ListUnsubscribe = &delivery.ListUnsubscribe{Mailto: "u@b.test", OneClick: true}
		}, false},
		{"unsubscribe url injection", func(m *delivery.Message) {
			m.ListUnsubscribe = &delivery.ListUnsubscribe{URL: "https://x.test/\r\nBcc: e@x.test"}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := base()
			tt.mutate(m)
			raw, err := delivery.Compose(m)
			if err == nil {
				t.Fatalf("Compose accepted it:\n%s", raw)
			}
			if got := errors.Is(err, delivery.ErrHeaderInjection); got != tt.injection {
				t.Errorf("errors.Is(err, ErrHeaderInjection) = %v, want %v (err: %v)", got, tt.injection, err)
			}
		})
	}
}
