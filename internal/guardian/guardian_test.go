package guardian_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lasso-mail/lasso/internal/guardian"
	"github.com/lasso-mail/lasso/internal/lmx"
)

func parse(t *testing.T, src string) *lmx.Doc {
	t.Helper()
	doc, _, err := lmx.Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return doc
}

// found flattens a result to rule → items for comparison.
func found(r guardian.Result) map[string][]guardian.Item {
	m := map[string][]guardian.Item{}
	for _, x := range append(append([]guardian.Rule{}, r.Errors...), r.Warnings...) {
		m[x.Rule] = x.Items
	}
	return m
}

func v(name string) guardian.Item  { return guardian.Item{Label: name, CodeName: name} }
func l(label string) guardian.Item { return guardian.Item{Label: label} }

func TestRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   guardian.Input
		lmx  string
		want map[string][]guardian.Item
	}{
		{
			name: "clean campaign",
			in:   guardian.Input{Kind: guardian.Campaign, ContactPropertiesFallbacks: map[string]string{"firstName": "there"}},
			lmx:  `<Paragraph>Hi {contact.firstName} ({contact.email}) <Link href="https://example.com">docs</Link></Paragraph><Button href="mailto:hi@example.com">Mail</Button><Icons><Icon name="twitter" href="https://x.com/a" /></Icons>`,
			want: map[string][]guardian.Item{},
		},
		{
			name: "unsupportedContactProperties in transactional",
			in:   guardian.Input{Kind: guardian.Transactional, Subject: "Hi {contact.lastName}"},
			lmx:  `<Paragraph>Hi {contact.firstName}</Paragraph>`,
			want: map[string][]guardian.Item{"unsupportedContactProperties": {v("firstName"), v("lastName")}},
		},
		{
			name: "unsupportedContactProperties unknown property",
			in:   guardian.Input{Kind: guardian.Campaign, ContactProperties: []string{"companyName"}, ContactPropertiesFallbacks: map[string]string{"companyName": "", "firstName": ""}},
			lmx:  `<Paragraph>{contact.companyName} {contact.firstName} {contact.planTier}</Paragraph>`,
			want: map[string][]guardian.Item{"unsupportedContactProperties": {v("planTier")}},
		},
		{
			name: "missingFallbackContactProperties",
			in:   guardian.Input{Kind: guardian.Campaign, FromName: "{contact.userGroup} team", ContactPropertiesFallbacks: map[string]string{"lastName": ""}},
			lmx:  `<H1>Hi {contact.firstName} {contact.lastName}</H1><Paragraph>{contact.email} {contact.createdAt}</Paragraph><Button href="https://x.example/{contact.userId}">Go</Button>`,
			want: map[string][]guardian.Item{"missingFallbackContactProperties": {v("firstName"), v("userId"), v("userGroup")}},
		},
		{
			name: "unsupportedEventProperties outside workflows",
			in:   guardian.Input{Kind: guardian.Campaign},
			lmx:  `<Paragraph>{event.planName}</Paragraph>`,
			want: map[string][]guardian.Item{"unsupportedEventProperties": {v("planName")}},
		},
		{
			name: "unsupportedEventProperties not on the event pattern",
			in:   guardian.Input{Kind: guardian.Workflow, EventProperties: []string{"planName"}, EventPropertiesFallbacks: map[string]string{"planName": "free"}},
			lmx:  `<Paragraph>{event.planName} {event.amount}</Paragraph>`,
			want: map[string][]guardian.Item{"unsupportedEventProperties": {v("amount")}},
		},
		{
			name: "missingFallbackEventProperties",
			in:   guardian.Input{Kind: guardian.Workflow, PreviewText: "{event.amount}", EventPropertiesFallbacks: map[string]string{"planName": "free"}},
			lmx:  `<Paragraph>{event.planName}</Paragraph>`,
			want: map[string][]guardian.Item{"missingFallbackEventProperties": {v("amount")}},
		},
		{
			name: "unsupportedDataVariables outside transactional",
			in:   guardian.Input{Kind: guardian.Workflow},
			lmx:  `<Paragraph><Link href="{data.resetLink}">reset</Link></Paragraph>`,
			want: map[string][]guardian.Item{"unsupportedDataVariables": {v("resetLink")}},
		},
		{
			name: "invalidCustomDataVariables",
			in:   guardian.Input{Kind: guardian.Transactional, ReplyToEmail: "{data.reply to}"},
			lmx:  `<Paragraph>{data.ok_name-1} {data.bad!name} {data.dotted.name}</Paragraph>`,
			want: map[string][]guardian.Item{"invalidCustomDataVariables": {v("bad!name"), v("dotted.name"), v("reply to")}},
		},
		{
			name: "missingRequiredDataVariables and extra variables in a system email",
			in:   guardian.Input{Kind: guardian.SystemTransactional, RequiredDataVariables: []string{"optInUrl"}},
			lmx:  `<Paragraph>Confirm for {data.name}</Paragraph>`,
			want: map[string][]guardian.Item{
				"missingRequiredDataVariables": {v("optInUrl")},
				"unsupportedDataVariables":     {v("name")},
			},
		},
		{
			name: "system email with its required variable",
			in:   guardian.Input{Kind: guardian.SystemTransactional, RequiredDataVariables: []string{"optInUrl"}},
			lmx:  `<Button href="{data.optInUrl}">Confirm</Button>`,
			want: map[string][]guardian.Item{},
		},
		{
			name: "bareArrayNodes",
			in:   guardian.Input{Kind: guardian.Transactional, ArrayDataVariables: []string{"items"}},
			lmx:  `<Paragraph>{data.items} {data.items.name} {data.total}</Paragraph>`,
			want: map[string][]guardian.Item{"bareArrayNodes": {v("items"), v("items.name")}},
		},
		{
			name: "missingButtonHrefs",
			in:   guardian.Input{Kind: guardian.Transactional},
			lmx:  `<Button>Add your button text</Button><Button href="  "></Button><Button href="https://ok.example">ok</Button>`,
			want: map[string][]guardian.Item{"missingButtonHrefs": {l("Add your button text"), l("Button")}},
		},
		{
			name: "invalidButtonHrefs",
			in:   guardian.Input{Kind: guardian.Transactional},
			lmx:  `<Button href="example.com">no scheme</Button><Button href="https://">no host</Button><Button href="javascript:alert(1)">script</Button><Button href="ftp://files.example.com">ftp</Button><Button href="https://exa mple.com">space</Button><Button href="#">hash</Button><Button href="https://intranet/x">dotless</Button><Button href="mailto:">empty mailto</Button>`,
			want: map[string][]guardian.Item{"invalidButtonHrefs": {l("no scheme"), l("no host"), l("script"), l("ftp"), l("space"), l("hash"), l("dotless"), l("empty mailto")}},
		},
		{
			name: "valid dynamic and special hrefs",
			in:   guardian.Input{Kind: guardian.Transactional},
			lmx:  `<Button href="{data.url}">a</Button><Button href="{data.base}/path">b</Button><Button href="https://{data.sub}.example.com/x">c</Button><Button href="tel:+4412345">d</Button><Button href="https://localhost:8080/x">e</Button><Button href="https://example.com/?q={data.q}&amp;x=1">f</Button>`,
			want: map[string][]guardian.Item{},
		},
		{
			name: "missingLinkHrefs",
			in:   guardian.Input{Kind: guardian.Transactional},
			lmx:  `<Paragraph>Or <Link href="">else, now is the perfect time to get it.</Link></Paragraph>`,
			want: map[string][]guardian.Item{"missingLinkHrefs": {l("else, now is the perfect time to get it.")}},
		},
		{
			name: "invalidLinkHrefs",
			in:   guardian.Input{Kind: guardian.Transactional},
			lmx:  `<Paragraph><Link href="www.example.com">site</Link> <Link href="/relative">rel</Link></Paragraph>`,
			want: map[string][]guardian.Item{"invalidLinkHrefs": {l("site"), l("rel")}},
		},
		{
			name: "shortenedYouTube hrefs",
			in:   guardian.Input{Kind: guardian.Transactional},
			lmx:  `<Button href="https://youtu.be/abc">Watch</Button><Paragraph><Link href="http://www.youtu.be/abc">video</Link> <Link href="https://www.youtube.com/watch?v=abc">full</Link></Paragraph><Image src="https://x.example/t.png" alt="Thumb" href="https://youtu.be/abc" />`,
			want: map[string][]guardian.Item{
				"shortenedYouTubeButtonHrefs": {l("Watch")},
				"shortenedYouTubeLinkHrefs":   {l("video")},
				"shortenedYouTubeImageHrefs":  {l("Thumb")},
			},
		},
		{
			name: "emailWithoutMailto hrefs",
			in:   guardian.Input{Kind: guardian.Transactional},
			lmx:  `<Button href="support@example.com">Email us</Button><Paragraph><Link href="hi@example.com">hi</Link> <Link href="mailto:ok@example.com">ok</Link></Paragraph><Image src="https://x.example/m.png" href="team@example.com" />`,
			want: map[string][]guardian.Item{
				"emailWithoutMailtoButtonHrefs": {l("Email us")},
				"emailWithoutMailtoLinkHrefs":   {l("hi")},
				"emailWithoutMailtoImageHrefs":  {l("https://x.example/m.png")},
			},
		},
		{
			name: "missingSocialIconHrefs",
			in:   guardian.Input{Kind: guardian.Transactional},
			lmx:  `<Icons><Icon name="twitter" /><Icon name="github" href="https://github.com/x" /><Icon name="discord" href="" /></Icons>`,
			want: map[string][]guardian.Item{"missingSocialIconHrefs": {l("twitter"), l("discord")}},
		},
		{
			name: "components are checked after expansion",
			in:   guardian.Input{Kind: guardian.Transactional},
			lmx:  `<Component componentId="cta" />`,
			want: map[string][]guardian.Item{"missingButtonHrefs": {l("From component")}, "unsupportedContactProperties": {v("firstName")}},
		},
		{
			name: "empty message",
			in:   guardian.Input{Kind: guardian.Campaign},
			want: map[string][]guardian.Item{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := tc.in
			if tc.lmx != "" {
				in.Doc = parse(t, tc.lmx)
				if err := lmx.Expand(in.Doc, lmx.ComponentMap{"cta": `<Paragraph>{contact.firstName}</Paragraph><Button>From component</Button>`}); err != nil {
					t.Fatal(err)
				}
			}
			got := found(guardian.Check(in))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSeverityAndJSONShape(t *testing.T) {
	t.Parallel()
	doc := parse(t, `<Paragraph>Hi {contact.firstName} <Link href="">else, now is the perfect time to get it.</Link></Paragraph><Button>Add your button text</Button><Icons><Icon name="twitter" /></Icons>`)
	in := guardian.Input{Kind: guardian.Campaign, Doc: doc}
	res := guardian.Check(in)
	if res.OK() {
		t.Error("OK() with errors")
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"errors":[` +
		`{"rule":"missingButtonHrefs","title":"Missing button link","description":"Buttons won't work without href value","items":[{"label":"Add your button text"}]},` +
		`{"rule":"missingLinkHrefs","title":"Missing text link","description":"Links won't work without href value","items":[{"label":"else, now is the perfect time to get it."}]}],` +
		`"warnings":[` +
		`{"rule":"missingFallbackContactProperties","title":"Missing contact property fallback","description":"Emails won't be sent to contacts without fallback values","items":[{"label":"firstName","codeName":"firstName"}]},` +
		`{"rule":"missingSocialIconHrefs","title":"Missing social icon link","description":"Social icons won't work without href value","items":[{"label":"twitter"}]}]}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}

	// StrictFallbacks moves missing fallbacks to errors, as in the API example.
	in.StrictFallbacks = true
	res = guardian.Check(in)
	if len(res.Errors) != 3 || res.Errors[0].Rule != "missingFallbackContactProperties" || len(res.Warnings) != 1 {
		t.Errorf("strict: %+v", res)
	}

	// Empty results encode as [] not null.
	b, _ = json.Marshal(guardian.Check(guardian.Input{Kind: guardian.Transactional}))
	if string(b) != `{"errors":[],"warnings":[]}` {
		t.Errorf("empty result JSON = %s", b)
	}
}

func TestUnsupported(t *testing.T) {
	t.Parallel()
	vs := []lmx.Variable{{Namespace: "contact", Name: "firstName"}, {Namespace: "contact", Name: "companyName"}, {Namespace: "event", Name: "x"}, {Namespace: "data", Name: "y"}, {Namespace: "system", Name: "unsubscribe_link"}}
	got := guardian.Unsupported(guardian.Campaign, vs, []string{})
	want := []lmx.Variable{{Namespace: "contact", Name: "companyName"}, {Namespace: "event", Name: "x"}, {Namespace: "data", Name: "y"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("campaign (-want +got):\n%s", diff)
	}
	got = guardian.Unsupported(guardian.Transactional, vs, nil)
	want = []lmx.Variable{{Namespace: "contact", Name: "firstName"}, {Namespace: "contact", Name: "companyName"}, {Namespace: "event", Name: "x"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transactional (-want +got):\n%s", diff)
	}
}
