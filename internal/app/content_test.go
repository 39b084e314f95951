package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/lmx"
	"github.com/lasso-mail/lasso/internal/testdb"
)

// contentServer starts the app with a verified sending domain for the team.
func contentServer(t *testing.T, url string) *server {
	t.Helper()
	s := start(t, url, nil)
	if _, err := s.app.Senders.Add(context.Background(), s.team, "example.com", true); err != nil {
		t.Fatal(err)
	}
	return s
}

func str(t *testing.T, r resp, key string) string {
	t.Helper()
	v, ok := r.obj(t)[key].(string)
	if !ok {
		t.Fatalf("%s is not a string in %s", key, r.raw)
	}
	return v
}

func TestContentRequiresSendingDomain(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := start(t, url, nil)
		for _, path := range []string{"/api/v1/transactional-emails", "/api/v1/themes", "/api/v1/components", "/api/v1/campaign-groups"} {
			expect(t, s.do(t, "GET", path, ""), 400, "sending domain")
		}
		expect(t, s.do(t, "POST", "/api/v1/transactional-emails", `{"name":"Welcome"}`), 400, "sending domain")
	})
}

func TestTransactionalLifecycle(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := contentServer(t, url)
		ctx := context.Background()

		r := s.do(t, "POST", "/api/v1/transactional-emails", `{"name":"Welcome"}`)
		expect(t, r, 201, `"name":"Welcome"`, `"publishedEmailMessageId":null`, `"dataVariables":[]`, `"url":"`+s.app.PublicURL()+`/transactional/`)
		id, draft, rev := str(t, r, "id"), str(t, r, "draftEmailMessageId"), str(t, r, "draftEmailMessageContentRevisionId")
		group := str(t, r, "transactionalGroupId")
		g := s.do(t, "GET", "/api/v1/transactional-groups/"+group, "")
		expect(t, g, 200, `"name":"Unsorted"`)

		expect(t, s.do(t, "GET", "/api/v1/transactional-emails/"+id, ""), 200, `"draftEmailMessageId":"`+draft+`"`)
		expect(t, s.do(t, "GET", "/api/v1/transactional-emails/cll42l54f20i1la0lfooe3z12", ""), 404, "Transactional email not found.")
		expect(t, s.do(t, "GET", "/api/v1/transactional-emails/nope", ""), 400)
		expect(t, s.do(t, "POST", "/api/v1/transactional-emails", `{"name":"x","bogus":1}`), 400, "bogus")
		expect(t, s.do(t, "POST", "/api/v1/transactional-emails", `{}`), 400, "name")
		expect(t, s.do(t, "POST", "/api/v1/transactional-emails/"+id, `{}`), 400, "At least one field is required.")
		expect(t, s.do(t, "POST", "/api/v1/transactional-emails/"+id, `{"name":"Welcome!"}`), 200, `"name":"Welcome!"`)

		m := s.do(t, "GET", "/api/v1/email-messages/"+draft, "")
		expect(t, m, 200, `"transactionalId":"`+id+`"`, `"contentRevisionId":"`+rev+`"`, `"emailFormat":"styled"`, `"lmx":""`, `"replyToEmail":""`)
		if strings.Contains(m.raw, "Fallbacks") || strings.Contains(m.raw, "ccEmail") || strings.Contains(m.raw, "warnings") {
			t.Fatalf("unset fields present: %s", m.raw)
		}

		body := fmt.Sprintf(`{"expectedRevisionId":%q,"subject":"Your code {data.code}","fromName":"Acme","fromEmail":"hello",
			"lmx":"<H1>Hi {data.name}</H1><Paragraph>Code: {data.code}</Paragraph>","dataVariablesFallbacks":{"name":"there"}}`, rev)
		u := s.do(t, "POST", "/api/v1/email-messages/"+draft, body)
		expect(t, u, 200, `"fromEmail":"hello"`, `"dataVariablesFallbacks":{"name":"there"}`)
		rev2 := str(t, u, "contentRevisionId")
		if rev2 == rev {
			t.Fatal("revision did not change")
		}
		expect(t, s.do(t, "POST", "/api/v1/email-messages/"+draft, fmt.Sprintf(`{"expectedRevisionId":%q,"subject":"x"}`, rev)), 409, "Content revision ID is stale.")

		p := s.do(t, "POST", "/api/v1/transactional-emails/"+id+"/publish", "")
		expect(t, p, 200, `"draftEmailMessageId":null`, `"publishedEmailMessageId":"`+draft+`"`, `"dataVariables":["code","name"]`)
		expect(t, s.do(t, "POST", "/api/v1/transactional-emails/"+id+"/publish", ""), 409, "No draft to publish.")
		expect(t, s.do(t, "POST", "/api/v1/email-messages/"+draft, `{"subject":"changed"}`), 409, "published")

		pub, err := s.app.Content.PublishedTransactional(ctx, s.team, id)
		if err != nil {
			t.Fatal(err)
		}
		if pub.FromEmail != "hello@example.com" || pub.Subject != "Your code {data.code}" || pub.EmailMessageID != draft {
			t.Fatalf("published = %+v", pub)
		}
		html, text := pub.Template.Render(&lmx.Values{Data: map[string]string{"code": "<42>"}}, &pub.Fallbacks)
		if !strings.Contains(html, "Hi there") || !strings.Contains(html, "&lt;42&gt;") || !strings.Contains(text, "Code: <42>") {
			t.Fatalf("render: %s\n%s", html, text)
		}
		if again, _ := s.app.Content.PublishedTransactional(ctx, s.team, id); again.Template != pub.Template {
			t.Fatal("compiled template not cached")
		}
		if _, err := s.app.Content.PublishedTransactional(ctx, s.team, "cll42l54f20i1la0lfooe3z12"); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("unknown id: %v", err)
		}

		// Ensure-draft: seeded from the published version, idempotent.
		d1 := s.do(t, "POST", "/api/v1/transactional-emails/"+id+"/draft", "")
		expect(t, d1, 200, `"publishedEmailMessageId":"`+draft+`"`)
		draft2 := str(t, d1, "draftEmailMessageId")
		if draft2 == draft {
			t.Fatal("draft not new")
		}
		d2 := s.do(t, "POST", "/api/v1/transactional-emails/"+id+"/draft", "")
		if str(t, d2, "draftEmailMessageId") != draft2 || str(t, d2, "draftEmailMessageContentRevisionId") != str(t, d1, "draftEmailMessageContentRevisionId") {
			t.Fatalf("ensure-draft not idempotent: %s vs %s", d1.raw, d2.raw)
		}
		expect(t, s.do(t, "GET", "/api/v1/email-messages/"+draft2, ""), 200, `Hi {data.name}`, `"subject":"Your code {data.code}"`)
		// Sends keep the published version until republished.
		expect(t, s.do(t, "POST", "/api/v1/email-messages/"+draft2, `{"lmx":"<Paragraph>v2 {data.other}</Paragraph>"}`), 200)
		if p2, _ := s.app.Content.PublishedTransactional(ctx, s.team, id); p2.EmailMessageID != draft {
			t.Fatal("published changed before republishing")
		}
		expect(t, s.do(t, "POST", "/api/v1/transactional-emails/"+id+"/publish", ""), 200, `"dataVariables":["code","other"]`)
		if p3, _ := s.app.Content.PublishedTransactional(ctx, s.team, id); p3.EmailMessageID != draft2 {
			t.Fatal("republish not visible")
		}

		// An unpublished email is Invalid for sending; the deprecated list shows published only.
		r = s.do(t, "POST", "/api/v1/transactional-emails", `{"name":"Unpublished","transactionalGroupId":"`+group+`"}`)
		expect(t, r, 201)
		if _, err := s.app.Content.PublishedTransactional(ctx, s.team, str(t, r, "id")); !errors.Is(err, apperr.Invalid) {
			t.Fatalf("unpublished: %v", err)
		}
		expect(t, s.do(t, "POST", "/api/v1/transactional-emails", `{"name":"x","transactionalGroupId":"cll42l54f20i1la0lfooe3z12"}`), 400, "group")
		old := s.do(t, "GET", "/api/v1/transactional", "")
		expect(t, old, 200, `"totalResults":1`, `"name":"Welcome!"`, `"lastUpdated":`, `"dataVariables":["code","other"]`)
		expect(t, s.do(t, "GET", "/api/v1/transactional-emails/"+id+"/metrics", ""), 200,
			`{"deliveries":0,"hardBounces":0,"sends":0,"softBounces":0,"spamReports":0}`)
		expect(t, s.do(t, "GET", "/api/v1/transactional-emails", ""), 200, `"totalResults":2`)
	})
}

func TestEmailMessageRules(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := contentServer(t, url)
		r := s.do(t, "POST", "/api/v1/transactional-emails", `{"name":"Reset"}`)
		expect(t, r, 201)
		id, msg := str(t, r, "id"), str(t, r, "draftEmailMessageId")
		path := "/api/v1/email-messages/" + msg

		big := strings.Repeat("<Paragraph>aaaaaaaaaa</Paragraph>", 4000)
		expect(t, s.do(t, "POST", path, `{"lmx":"`+big+`"}`), 413)
		e := s.do(t, "POST", path, `{"lmx":"<H1>ok</H1>\n<Bogus/>"}`)
		expect(t, e, 422, `"line":2`, `"col":1`, "Bogus")
		w := s.do(t, "POST", path, `{"lmx":"<H1 foo=\"1\">ok</H1>"}`)
		expect(t, w, 200, `"warnings":[{"rule":"unknownAttribute","severity":"warning"`)
		expect(t, s.do(t, "POST", path, `{"nope":1}`), 400, "nope")
		expect(t, s.do(t, "POST", path, `{"emailFormat":"fancy"}`), 400)
		expect(t, s.do(t, "POST", path, `{"replyToEmail":"not an email"}`), 400)
		expect(t, s.do(t, "POST", path, `{"replyToEmail":"help@acme.test"}`), 200, `"replyToEmail":"help@acme.test"`)
		expect(t, s.do(t, "POST", path, `{"fromEmail":"team@other.com"}`), 400, "example.com")
		expect(t, s.do(t, "POST", path, `{"fromEmail":"bad local"}`), 400)
		expect(t, s.do(t, "POST", path, `{"fromEmail":"team@example.com","ccEmail":"cc@acme.test","languageCode":"fr"}`), 200,
			`"fromEmail":"team"`, `"ccEmail":"cc@acme.test"`, `"languageCode":"fr"`)

		// Per-key merge of fallbacks: strings set, null deletes, omitted keys stay.
		expect(t, s.do(t, "POST", path, `{"dataVariablesFallbacks":{"a":"1","b":"2"}}`), 200, `"dataVariablesFallbacks":{"a":"1","b":"2"}`)
		expect(t, s.do(t, "POST", path, `{"dataVariablesFallbacks":{"a":null,"c":"3"}}`), 200, `"dataVariablesFallbacks":{"b":"2","c":"3"}`)
		m := s.do(t, "POST", path, `{"dataVariablesFallbacks":{"b":null,"c":null}}`)
		expect(t, m, 200)
		if strings.Contains(m.raw, "dataVariablesFallbacks") {
			t.Fatalf("empty map still present: %s", m.raw)
		}

		// Guardian: a button without href is an error; contact variables are unsupported here.
		expect(t, s.do(t, "POST", path, `{"lmx":"<Button>Go</Button><Paragraph>{contact.firstName}</Paragraph>"}`), 200)
		gr := s.do(t, "GET", path+"/guardian", "")
		expect(t, gr, 200, `"missingButtonHrefs"`, `"unsupportedContactProperties"`, `"warnings":`)
		expect(t, s.do(t, "POST", "/api/v1/transactional-emails/"+id+"/publish", ""), 422, "Guardian", `"missingButtonHrefs"`)
		expect(t, s.do(t, "GET", "/api/v1/email-messages/cll42l54f20i1la0lfooe3z12", ""), 404, "Email message not found.")

		// A team's messages are invisible to another team.
		k2, team2 := s.newKey(t, "Other")
		if _, err := s.app.Senders.Add(context.Background(), team2, "other.com", true); err != nil {
			t.Fatal(err)
		}
		expect(t, s.doKey(t, k2, "GET", path, ""), 404)
		expect(t, s.doKey(t, k2, "POST", "/api/v1/transactional-emails/"+id+"/publish", ""), 404)
	})
}

func TestContentPagination(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := contentServer(t, url)
		for i := 0; i < 23; i++ {
			expect(t, s.do(t, "POST", "/api/v1/transactional-emails", fmt.Sprintf(`{"name":"T%02d"}`, i)), 201)
		}
		expect(t, s.do(t, "GET", "/api/v1/transactional-emails?perPage=9", ""), 400, "perPage")
		expect(t, s.do(t, "GET", "/api/v1/transactional-emails?perPage=51", ""), 400, "perPage")
		expect(t, s.do(t, "GET", "/api/v1/transactional-emails?perPage=abc", ""), 400, "perPage")
		expect(t, s.do(t, "GET", "/api/v1/transactional-emails?cursor=bogus", ""), 400, "cursor")
		first := s.do(t, "GET", "/api/v1/transactional-emails", "")
		expect(t, first, 200, `"totalResults":23`, `"returnedResults":20`, `"perPage":20`, `"totalPages":2`, `"name":"T22"`)

		var names []string
		next := "/api/v1/transactional-emails?perPage=10"
		pages := 0
		for next != "" {
			r := s.do(t, "GET", next, "")
			expect(t, r, 200, `"totalPages":3`)
			pages++
			pg := r.obj(t)["pagination"].(map[string]any)
			for _, it := range r.obj(t)["data"].([]any) {
				names = append(names, it.(map[string]any)["name"].(string))
			}
			next = ""
			if np, ok := pg["nextPage"].(string); ok {
				if !strings.HasPrefix(np, s.app.PublicURL()+"/api/v1/transactional-emails?cursor=") || !strings.HasSuffix(np, "&perPage=10") {
					t.Fatalf("nextPage %q", np)
				}
				next = strings.TrimPrefix(np, s.app.PublicURL())
			} else if pg["nextCursor"] != nil {
				t.Fatalf("nextCursor without nextPage: %s", r.raw)
			}
		}
		if pages != 3 || len(names) != 23 || names[0] != "T22" || names[22] != "T00" {
			t.Fatalf("pages %d names %v", pages, names)
		}
	})
}

func TestThemes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := contentServer(t, url)
		l := s.do(t, "GET", "/api/v1/themes", "")
		expect(t, l, 200, `"name":"Default"`, `"isDefault":true`, `"totalResults":1`)
		expect(t, s.do(t, "POST", "/api/v1/themes", `{"styles":{}}`), 400, "name")
		expect(t, s.do(t, "POST", "/api/v1/themes", `{"name":"x","styles":{"nope":1}}`), 400)
		expect(t, s.do(t, "POST", "/api/v1/themes", `{"name":"x","styles":{"bodyColor":"red; x"}}`), 400)
		c := s.do(t, "POST", "/api/v1/themes", `{"name":"Brand","styles":{"backgroundColor":"#111111","bodyColor":"#ffffff"}}`)
		expect(t, c, 201, `"isDefault":false`, `"styles":{"backgroundColor":"#111111","bodyColor":"#ffffff"}`)
		theme := str(t, c, "id")
		expect(t, s.do(t, "GET", "/api/v1/themes/"+theme, ""), 200, `"name":"Brand"`)
		expect(t, s.do(t, "GET", "/api/v1/themes/cll42l54f20i1la0lfooe3z12", ""), 404, "Theme not found.")

		// Two emails use the theme; one overrides bodyColor.
		msgs := make([]string, 2)
		for i, style := range []string{`<Style themeId=\"` + theme + `\"/>`, `<Style themeId=\"` + theme + `\" bodyColor=\"#eeeeee\"/>`} {
			r := s.do(t, "POST", "/api/v1/transactional-emails", `{"name":"E"}`)
			msgs[i] = str(t, r, "draftEmailMessageId")
			expect(t, s.do(t, "POST", "/api/v1/email-messages/"+msgs[i], `{"lmx":"`+style+`<Paragraph>Hi</Paragraph>"}`), 200)
		}
		expect(t, s.do(t, "POST", "/api/v1/themes/"+theme, `{"name":"Brand 2"}`), 200, `"affectedEmailCount":0`, `"name":"Brand 2"`)
		// bodyColor only: the overriding email is not affected.
		expect(t, s.do(t, "POST", "/api/v1/themes/"+theme, `{"styles":{"bodyColor":"#fafafa"}}`), 200, `"affectedEmailCount":1`,
			`"backgroundColor":"#111111"`, `"bodyColor":"#fafafa"`)
		// The theme now equals the override: the override is dropped and both follow the theme.
		before := str(t, s.do(t, "GET", "/api/v1/email-messages/"+msgs[1], ""), "contentRevisionId")
		expect(t, s.do(t, "POST", "/api/v1/themes/"+theme, `{"styles":{"bodyColor":"#eeeeee"}}`), 200, `"affectedEmailCount":2`)
		m := s.do(t, "GET", "/api/v1/email-messages/"+msgs[1], "")
		if strings.Contains(m.raw, "bodyColor") || str(t, m, "contentRevisionId") == before {
			t.Fatalf("override not removed: %s", m.raw)
		}
		expect(t, s.do(t, "POST", "/api/v1/themes/"+theme, `{"styles":{"backgroundColor":"#000000"}}`), 200, `"affectedEmailCount":2`)
		expect(t, s.do(t, "POST", "/api/v1/themes/"+theme, `{}`), 400)
	})
}

func TestComponents(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := contentServer(t, url)
		expect(t, s.do(t, "POST", "/api/v1/components", `{"name":"Footer"}`), 400, "lmx")
		expect(t, s.do(t, "POST", "/api/v1/components", `{"name":"Footer","lmx":"<Nope/>"}`), 422, "Nope")
		expect(t, s.do(t, "POST", "/api/v1/components", `{"name":"Big","lmx":"`+strings.Repeat("<Paragraph>aaaaaaaaaa</Paragraph>", 4000)+`"}`), 413)
		c := s.do(t, "POST", "/api/v1/components", `{"name":"Footer","lmx":"<Section><Paragraph>Footer content</Paragraph></Section>"}`)
		expect(t, c, 201, `"name":"Footer"`, `"lmx":"<Section><Paragraph>Footer content</Paragraph></Section>"`)
		comp := str(t, c, "id")
		expect(t, s.do(t, "GET", "/api/v1/components", ""), 200, `"totalResults":1`)
		expect(t, s.do(t, "GET", "/api/v1/components/"+comp, ""), 200, `"name":"Footer"`)

		r := s.do(t, "POST", "/api/v1/transactional-emails", `{"name":"E"}`)
		id, msg := str(t, r, "id"), str(t, r, "draftEmailMessageId")
		expect(t, s.do(t, "POST", "/api/v1/email-messages/"+msg, `{"lmx":"<Component componentId=\"`+comp+`\"/>"}`), 200)
		expect(t, s.do(t, "POST", "/api/v1/email-messages/"+msg, `{"lmx":"<Component componentId=\"cll42l54f20i1la0lfooe3z12\"/>"}`), 422, "component")

		expect(t, s.do(t, "POST", "/api/v1/components/"+comp, `{"name":"Footer 2"}`), 200, `"affectedEmailCount":0`)
		expect(t, s.do(t, "POST", "/api/v1/components/"+comp, `{"lmx":"<Section><Paragraph>Hi {contact.companyName}</Paragraph></Section>"}`), 422,
			`"invalidTags":["companyName"]`, "Component uses unsupported contact properties.")
		expect(t, s.do(t, "POST", "/api/v1/components/"+comp, `{"lmx":"<Section><Paragraph>Bye {data.name}</Paragraph></Section>"}`), 200,
			`"affectedEmailCount":1`)
		// The change cascades into the draft; publishing freezes it.
		p := s.do(t, "POST", "/api/v1/transactional-emails/"+id+"/publish", "")
		expect(t, p, 200, `"dataVariables":["name"]`)
		pub, err := s.app.Content.PublishedTransactional(context.Background(), s.team, id)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, s.do(t, "POST", "/api/v1/components/"+comp, `{"lmx":"<Paragraph>Changed</Paragraph>"}`), 200, `"affectedEmailCount":0`)
		html, _ := pub.Template.Render(&lmx.Values{Data: map[string]string{"name": "Ada"}}, nil)
		if !strings.Contains(html, "Bye Ada") {
			t.Fatalf("published component body not frozen: %s", html)
		}
	})
}

func TestContentGroups(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := contentServer(t, url)
		for _, kind := range []string{"campaign-groups", "transactional-groups"} {
			base := "/api/v1/" + kind
			l := s.do(t, "GET", base, "")
			expect(t, l, 200, `"name":"Unsorted"`, `"totalResults":1`)
			unsorted := l.obj(t)["data"].([]any)[0].(map[string]any)["id"].(string)
			expect(t, s.do(t, "POST", base, `{"name":"Unsorted"}`), 400, "reserved")
			expect(t, s.do(t, "POST", base, `{"name":"unsorted"}`), 400, "reserved")
			expect(t, s.do(t, "POST", base, `{"description":"x"}`), 400, "name")
			expect(t, s.do(t, "POST", base, `{"name":"A","extra":1}`), 400)
			c := s.do(t, "POST", base, `{"name":"Newsletters"}`)
			expect(t, c, 200, `"name":"Newsletters"`, `"description":""`, `"createdAt":"`)
			id := str(t, c, "id")
			expect(t, s.do(t, "POST", base+"/"+unsorted, `{"name":"Mine"}`), 400, "cannot be edited")
			expect(t, s.do(t, "POST", base+"/"+id, `{}`), 400)
			expect(t, s.do(t, "POST", base+"/"+id, `{"name":"Unsorted"}`), 400, "reserved")
			expect(t, s.do(t, "POST", base+"/"+id, `{"description":"Monthly"}`), 200, `"name":"Newsletters"`, `"description":"Monthly"`)
			expect(t, s.do(t, "GET", base+"/cll42l54f20i1la0lfooe3z12", ""), 404, "Group not found.")
			expect(t, s.do(t, "GET", base+"/bad", ""), 400)
			l = s.do(t, "GET", base, "")
			expect(t, l, 200, `"totalResults":2`)
			if first := l.obj(t)["data"].([]any)[0].(map[string]any)["id"]; first != id {
				t.Fatalf("not newest first: %s", l.raw)
			}
		}
		// Groups are per kind.
		c := s.do(t, "POST", "/api/v1/campaign-groups", `{"name":"C"}`)
		expect(t, s.do(t, "GET", "/api/v1/transactional-groups/"+str(t, c, "id"), ""), 404)
	})
}

var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 100)...)

func (s *server) put(t *testing.T, url, contentType string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest("PUT", url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// upload runs the three steps and returns the complete response.
func (s *server) upload(t *testing.T, contentType string, body []byte) resp {
	t.Helper()
	r := s.do(t, "POST", "/api/v1/uploads", fmt.Sprintf(`{"contentType":%q,"contentLength":%d}`, contentType, len(body)))
	expect(t, r, 200, `"emailAssetId"`)
	if res := s.put(t, strings.Replace(str(t, r, "presignedUrl"), s.app.PublicURL(), s.url, 1), contentType, body); res.StatusCode != 200 {
		t.Fatalf("PUT: %d", res.StatusCode)
	}
	return s.do(t, "POST", "/api/v1/uploads/"+str(t, r, "emailAssetId")+"/complete", "")
}

func TestUploads(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := contentServer(t, url)
		expect(t, s.do(t, "POST", "/api/v1/uploads", `{"contentType":"image/svg+xml","contentLength":10}`), 400,
			`"message":"Unsupported content type."`, `"supportedContentTypes":["image/jpeg","image/png","image/gif","image/webp"]`)
		expect(t, s.do(t, "POST", "/api/v1/uploads", `{"contentType":"image/png","contentLength":4000001}`), 413, `"maxBytes":4000000`)
		expect(t, s.do(t, "POST", "/api/v1/uploads", `{"contentType":"image/png","contentLength":0}`), 400)
		expect(t, s.do(t, "POST", "/api/v1/uploads", `{"contentType":"image/png","contentLength":"10"}`), 400)

		r := s.do(t, "POST", "/api/v1/uploads", fmt.Sprintf(`{"contentType":"image/png","contentLength":%d}`, len(pngBytes)))
		expect(t, r, 200, `"presignedUrl":"`+s.app.PublicURL()+`/uploads/`)
		id := str(t, r, "emailAssetId")
		put := strings.Replace(str(t, r, "presignedUrl"), s.app.PublicURL(), s.url, 1)
		expect(t, s.do(t, "POST", "/api/v1/uploads/"+id+"/complete", ""), 400, "not been uploaded")
		if res := s.put(t, put, "image/jpeg", pngBytes); res.StatusCode != 400 {
			t.Fatalf("wrong type: %d", res.StatusCode)
		}
		if res := s.put(t, put, "image/png", pngBytes[:50]); res.StatusCode != 400 {
			t.Fatalf("wrong length: %d", res.StatusCode)
		}
		if res := s.put(t, strings.Replace(put, "sig=", "sig=0", 1), "image/png", pngBytes); res.StatusCode != 403 {
			t.Fatalf("bad signature: %d", res.StatusCode)
		}
		if res := s.put(t, put, "image/png", pngBytes); res.StatusCode != 200 {
			t.Fatalf("PUT: %d", res.StatusCode)
		}
		c := s.do(t, "POST", "/api/v1/uploads/"+id+"/complete", "")
		expect(t, c, 200, `"emailAssetId":"`+id+`"`, `"finalUrl":"`+s.app.PublicURL()+`/assets/`+id+`/image.png"`)
		expect(t, s.do(t, "POST", "/api/v1/uploads/"+id+"/complete", ""), 200, `"finalUrl"`)
		expect(t, s.do(t, "POST", "/api/v1/uploads/cll42l54f20i1la0lfooe3z12/complete", ""), 404)

		res, err := http.Get(s.url + "/assets/" + id + "/image.png")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(b) != string(pngBytes) || res.Header.Get("Content-Type") != "image/png" ||
			res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Fatalf("asset: %d %v", res.StatusCode, res.Header)
		}
		if res, _ := http.Get(s.url + "/assets/" + id + "/other.png"); res.StatusCode != 404 {
			t.Fatalf("wrong filename: %d", res.StatusCode)
		}

		// Bytes that are not the declared image type are refused.
		expect(t, s.upload(t, "image/png", []byte("<svg xmlns='http://www.w3.org/2000/svg'><script/></svg>")), 400, "unsupported content type")

		// 50 completed uploads per team per 24 hours, also under concurrency.
		for i := 0; i < 47; i++ {
			expect(t, s.upload(t, "image/png", pngBytes), 200)
		}
		var pending []string
		for i := 0; i < 3; i++ {
			r := s.do(t, "POST", "/api/v1/uploads", fmt.Sprintf(`{"contentType":"image/png","contentLength":%d}`, len(pngBytes)))
			if res := s.put(t, strings.Replace(str(t, r, "presignedUrl"), s.app.PublicURL(), s.url, 1), "image/png", pngBytes); res.StatusCode != 200 {
				t.Fatalf("PUT: %d", res.StatusCode)
			}
			pending = append(pending, str(t, r, "emailAssetId"))
		}
		results := make([]resp, len(pending))
		var wg sync.WaitGroup
		for i, id := range pending {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = s.do(t, "POST", "/api/v1/uploads/"+id+"/complete", "")
			}()
		}
		wg.Wait()
		var over resp
		ok := 0
		for _, r := range results {
			switch r.status {
			case 200:
				ok++
			case 429:
				over = r
			}
		}
		if ok != 2 || over.status != 429 {
			t.Fatalf("concurrent completes: %d ok, %+v", ok, results)
		}
		expect(t, over, 429, `"maxUploads":50`, `"windowHours":24`, "Upload limit exceeded")
		if over.header.Get("x-ratelimit-limit") != "50" || over.header.Get("x-ratelimit-remaining") != "0" {
			t.Fatalf("rate headers: %v", over.header)
		}
		expect(t, s.upload(t, "image/png", pngBytes), 429)
	})
}

type previewSink struct {
	mu   sync.Mutex
	sent []string
}

func (p *previewSink) SendPreview(ctx context.Context, teamID string, to []string, subject, html, text, fromName, fromEmail, replyTo string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = append(p.sent, fmt.Sprintf("%v|%s|%s|%s|%s", to, subject, fromName, fromEmail, strings.TrimSpace(text)))
	return nil
}

func TestPreview(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := contentServer(t, url)
		r := s.do(t, "POST", "/api/v1/transactional-emails", `{"name":"E"}`)
		msg := str(t, r, "draftEmailMessageId")
		path := "/api/v1/email-messages/" + msg + "/preview"
		expect(t, s.do(t, "POST", "/api/v1/email-messages/"+msg, `{"subject":"Hello {data.name}","fromEmail":"hi","lmx":"<Paragraph>Code {data.code}</Paragraph>"}`), 200)
		// Wired to the real outbound path: the preview lands in the capture mailbox.
		expect(t, s.do(t, "POST", path, `{"emails":["first@b.co"],"dataVariables":{"name":"Ada","code":"7"}}`), 200)
		deadline := time.Now().Add(15 * time.Second)
		for {
			msgs, _ := s.app.Capture.List()
			if len(msgs) == 1 && msgs[0].To[0] == "first@b.co" && msgs[0].Subject == "[Preview] Hello Ada" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("preview not delivered: %+v", msgs)
			}
			time.Sleep(20 * time.Millisecond)
		}

		sink := &previewSink{}
		s.app.Content.SetPreviewSender(sink)
		expect(t, s.do(t, "POST", path, `{"emails":[]}`), 400)
		expect(t, s.do(t, "POST", path, `{"emails":["not-an-email"]}`), 400)
		expect(t, s.do(t, "POST", path, `{"emails":["a@b.co"],"contactProperties":{"x":"1"}}`), 400, "contactProperties")
		expect(t, s.do(t, "POST", path, `{"emails":["a@b.co"],"dataVariables":{"name":"Ada","code":42}}`), 200, `{"id":"`+msg+`"}`)
		if len(sink.sent) != 1 || sink.sent[0] != "[a@b.co]|Hello Ada||hi@example.com|Code 42" {
			t.Fatalf("sent %q", sink.sent)
		}
		emails := make([]string, 98)
		for i := range emails {
			emails[i] = fmt.Sprintf(`"u%d@b.co"`, i)
		}
		expect(t, s.do(t, "POST", path, `{"emails":[`+strings.Join(emails, ",")+`]}`), 200)
		over := s.do(t, "POST", path, `{"emails":["a@b.co"]}`)
		expect(t, over, 429)
		if over.header.Get("x-ratelimit-limit") != "100" || over.header.Get("x-ratelimit-remaining") != "0" {
			t.Fatalf("rate headers: %v", over.header)
		}
	})
}

func TestContentConcurrency(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		s := contentServer(t, url)
		r := s.do(t, "POST", "/api/v1/transactional-emails", `{"name":"E"}`)
		id, msg, rev := str(t, r, "id"), str(t, r, "draftEmailMessageId"), str(t, r, "draftEmailMessageContentRevisionId")

		// Two writers with the same expected revision: exactly one wins.
		statuses := make([]int, 6)
		var wg sync.WaitGroup
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = s.do(t, "POST", "/api/v1/email-messages/"+msg, fmt.Sprintf(`{"expectedRevisionId":%q,"subject":"s%d"}`, rev, i)).status
			}()
		}
		wg.Wait()
		won := 0
		for _, st := range statuses {
			switch st {
			case 200:
				won++
			case 409:
			default:
				t.Fatalf("status %d", st)
			}
		}
		if won != 1 {
			t.Fatalf("%d writers won: %v", won, statuses)
		}

		// Concurrent ensure-draft after publishing creates one draft.
		expect(t, s.do(t, "POST", "/api/v1/transactional-emails/"+id+"/publish", ""), 200)
		drafts := make([]string, 6)
		for i := range drafts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := s.do(t, "POST", "/api/v1/transactional-emails/"+id+"/draft", "")
				if r.status == 200 {
					drafts[i], _ = r.obj(t)["draftEmailMessageId"].(string)
				}
			}()
		}
		wg.Wait()
		for _, d := range drafts {
			if d == "" || d != drafts[0] {
				t.Fatalf("drafts %v", drafts)
			}
		}
	})
}
