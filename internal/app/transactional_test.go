package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/delivery/deliverytest"
	"github.com/lasso-mail/lasso/internal/testdb"
)

// publishTemplate creates and publishes a transactional email through the
// content API and returns its id.
func publishTemplate(t *testing.T, s *server, subject, lmxSrc, fallbacks string) string {
	t.Helper()
	r := s.do(t, "POST", "/api/v1/transactional-emails", `{"name":"Welcome"}`)
	expect(t, r, 201)
	id, draft, rev := str(t, r, "id"), str(t, r, "draftEmailMessageId"), str(t, r, "draftEmailMessageContentRevisionId")
	body := fmt.Sprintf(`{"expectedRevisionId":%q,"subject":%q,"fromName":"Acme","fromEmail":"hello","lmx":%q,"dataVariablesFallbacks":%s}`,
		rev, subject, lmxSrc, fallbacks)
	expect(t, s.do(t, "POST", "/api/v1/email-messages/"+draft, body), 200)
	expect(t, s.do(t, "POST", "/api/v1/transactional-emails/"+id+"/publish", ""), 200)
	return id
}

// relayServer starts the app relaying to a fresh sink, with a verified
// sending domain whose DKIM records are in a fake DNS.
func relayServer(t *testing.T, url string) (*server, *deliverytest.Sink, *deliverytest.DNS) {
	sink := deliverytest.NewSink(t)
	s := start(t, url, func(c *app.Config) {
		c.SMTPRelay = "smtp://" + sink.Addr + "?tls=none"
		c.Hostname = "mta.lasso.test"
	})
	dom, err := s.app.Senders.Add(context.Background(), s.team, "example.com", true)
	if err != nil {
		t.Fatal(err)
	}
	dns := deliverytest.NewDNS(t)
	publishDKIM(t, s, dns, dom)
	return s, sink, dns
}

func TestTransactionalSend(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s, sink, dns := relayServer(t, url)
		id := publishTemplate(t, s, "Your code {data.code}", `<H1>Hi {data.name}</H1><Paragraph>Code: {data.code}</Paragraph>`, `{"name":"there"}`)

		att := base64.StdEncoding.EncodeToString([]byte("%PDF-1.4 test"))
		body := fmt.Sprintf(`{"transactionalId":%q,"email":"Ada@Example.org","addToAudience":true,"dataVariables":{"code":"<42>","name":"Ada"},
			"attachments":[{"filename":"invoice.pdf","contentType":"application/pdf","data":%q}]}`, id, att)
		expect(t, s.do(t, "POST", "/api/v1/transactional", body), 200, `{"success":true}`)
		m := sink.WaitMessages(t, 1, 15*time.Second)[0]
		if m.To[0] != "ada@example.org" || !strings.HasPrefix(m.From, "bounce+") || !strings.HasSuffix(m.From, "@bounces.example.com") {
			t.Fatalf("envelope %s → %v", m.From, m.To)
		}
		dns.RequireDKIM(t, m.Data, "example.com")
		msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		if subj, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); subj != "Your code <42>" {
			t.Fatalf("subject %q", subj)
		}
		if from := msg.Header.Get("From"); !strings.Contains(from, "hello@example.com") {
			t.Fatalf("from %q", from)
		}
		html, text, files := parts(t, msg)
		if !strings.Contains(html, "Hi Ada") || !strings.Contains(html, "Code: &lt;42&gt;") || strings.Contains(html, "<42>") {
			t.Fatalf("html does not carry escaped variables: %.300s", html)
		}
		if !strings.Contains(text, "Code: <42>") {
			t.Fatalf("text: %q", text)
		}
		if string(files["invoice.pdf"]) != "%PDF-1.4 test" {
			t.Fatalf("attachment: %v", files)
		}
		// addToAudience created the contact.
		expect(t, s.do(t, "GET", "/api/v1/contacts/find?email=ada%40example.org", ""), 200, `"email":"ada@example.org"`)

		// Fallback for a missing optional variable.
		expect(t, s.do(t, "POST", "/api/v1/transactional", fmt.Sprintf(`{"transactionalId":%q,"email":"bob@example.org","dataVariables":{"code":"7"}}`, id)), 200)
		m = sink.WaitMessages(t, 2, 15*time.Second)[1]
		if !bytes.Contains(m.Data, []byte("Hi there")) {
			t.Fatal("fallback not used")
		}
		// Unsubscribed contacts still get transactional email.
		expect(t, s.do(t, "POST", "/api/v1/contacts/create", `{"email":"unsub@example.org","subscribed":false}`), 200)
		expect(t, s.do(t, "POST", "/api/v1/transactional", fmt.Sprintf(`{"transactionalId":%q,"email":"unsub@example.org","dataVariables":{"code":"9"}}`, id)), 200)
		if m := sink.WaitMessages(t, 3, 15*time.Second)[2]; m.To[0] != "unsub@example.org" {
			t.Fatalf("third message went to %v", m.To)
		}
		// Not added to the audience without addToAudience.
		expect(t, s.do(t, "GET", "/api/v1/contacts/find?email=bob%40example.org", ""), 200, `[]`)

		// Errors of the contract.
		r := s.do(t, "POST", "/api/v1/transactional", fmt.Sprintf(`{"transactionalId":%q,"email":"c@example.org","dataVariables":{"name":"x"}}`, id))
		expect(t, r, 400, `"message":"Missing required data variable(s): code"`, `"error":{"message":"Missing required data variable(s): code","path":"dataVariables"}`, `"transactionalId":"`+id+`"`)
		expect(t, s.do(t, "POST", "/api/v1/transactional", fmt.Sprintf(`{"transactionalId":%q,"email":"c@example.org"}`, id)), 400, "dataVariables")
		expect(t, s.do(t, "POST", "/api/v1/transactional", `{"transactionalId":"cll42l54f20i1la0lfooe3z12","email":"c@example.org"}`), 404,
			`"error":{"message":"Transactional email not found.","path":"transactionalId"}`)
		expect(t, s.do(t, "POST", "/api/v1/transactional", fmt.Sprintf(`{"transactionalId":%q,"email":"not-an-email"}`, id)), 400)
		expect(t, s.do(t, "POST", "/api/v1/transactional", `{"email":"c@example.org"}`), 400, "transactionalId")
		expect(t, s.do(t, "POST", "/api/v1/transactional", fmt.Sprintf(`{"transactionalId":%q,"email":"c@example.org","dataVariables":{"code":null}}`, id)), 400)
		unpub := s.do(t, "POST", "/api/v1/transactional-emails", `{"name":"Draft only"}`)
		expect(t, s.do(t, "POST", "/api/v1/transactional", fmt.Sprintf(`{"transactionalId":%q,"email":"c@example.org"}`, str(t, unpub, "id"))), 400, "not published")
		big := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), 3<<20+512<<10))
		expect(t, s.do(t, "POST", "/api/v1/transactional", fmt.Sprintf(`{"transactionalId":%q,"email":"c@example.org","dataVariables":{"code":"1"},"attachments":[{"filename":"a.bin","contentType":"application/octet-stream","data":%q}]}`, id, big)), 413)

		// Mail leaves only from a verified sending domain.
		if _, err := s.app.DB.Exec(context.Background(), `UPDATE sending_domains SET verified = FALSE WHERE domain = 'example.com'`); err != nil {
			t.Fatal(err)
		}
		expect(t, s.do(t, "POST", "/api/v1/transactional", fmt.Sprintf(`{"transactionalId":%q,"email":"c@example.org","dataVariables":{"code":"1"}}`, id)), 400, "not verified")
		if _, err := s.app.DB.Exec(context.Background(), `UPDATE sending_domains SET verified = TRUE WHERE domain = 'example.com'`); err != nil {
			t.Fatal(err)
		}

		// Idempotency under 50 concurrent duplicates: exactly one email.
		var wg sync.WaitGroup
		codes := make([]int, 50)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = s.do(t, "POST", "/api/v1/transactional", fmt.Sprintf(`{"transactionalId":%q,"email":"once@example.org","dataVariables":{"code":"1"}}`, id), "Idempotency-Key", "receipt-1").status
			}()
		}
		wg.Wait()
		ok := 0
		for _, c := range codes {
			if c == 200 {
				ok++
			} else if c != 409 {
				t.Fatalf("status %d", c)
			}
		}
		if ok != 1 {
			t.Fatalf("%d accepted", ok)
		}
		time.Sleep(500 * time.Millisecond)
		n := 0
		for _, m := range sink.Messages() {
			if m.To[0] == "once@example.org" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("once@example.org got %d emails", n)
		}

		// The email's metrics count what happened to its sends: four
		// delivered, then a hard bounce.
		sink.Program(deliverytest.Rule{Recipient: "gone@example.org", Code: 550, Enhanced: "5.1.1", Message: "no such user"})
		expect(t, s.do(t, "POST", "/api/v1/transactional", fmt.Sprintf(`{"transactionalId":%q,"email":"gone@example.org","dataVariables":{"code":"1"}}`, id)), 200)
		want := `{"deliveries":4,"hardBounces":1,"sends":5,"softBounces":0,"spamReports":0}`
		deadline := time.Now().Add(15 * time.Second)
		for {
			r := s.do(t, "GET", "/api/v1/transactional-emails/"+id+"/metrics", "")
			if r.status == 200 && strings.TrimSpace(r.raw) == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("metrics %d %s, want %s", r.status, r.raw, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
		expect(t, s.do(t, "GET", "/api/v1/transactional-emails/cll42l54f20i1la0lfooe3z12/metrics", ""), 404)
	})
}

// parts returns the HTML, text and attachments of a message.
func parts(t *testing.T, msg *mail.Message) (html, text string, files map[string][]byte) {
	t.Helper()
	files = map[string][]byte{}
	var walk func(ct string, body io.Reader)
	walk = func(ct string, body io.Reader) {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(mt, "multipart/") {
			mr := multipart.NewReader(body, params["boundary"])
			for {
				p, err := mr.NextPart()
				if err == io.EOF {
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				var r io.Reader = p // multipart.Part decodes quoted-printable itself
				if p.Header.Get("Content-Transfer-Encoding") == "base64" {
					r = base64.NewDecoder(base64.StdEncoding, p)
				}
				if fn := p.FileName(); fn != "" {
					b, _ := io.ReadAll(r)
					files[fn] = b
					continue
				}
				walk(p.Header.Get("Content-Type"), r)
			}
		}
		b, _ := io.ReadAll(body)
		switch mt {
		case "text/html":
			html = string(b)
		case "text/plain":
			text = string(b)
		}
	}
	walk(msg.Header.Get("Content-Type"), msg.Body)
	return html, text, files
}
