package lmx_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/lasso-mail/lasso/internal/lmx"
)

// FuzzParse checks that no input makes Parse, Compile or Render panic,
// that errors carry positions, and that whatever compiles renders to HTML
// without scripts, event handlers or unsafe URLs.
//
//	go test -run='^$' -fuzz=FuzzParse -fuzztime=60s ./internal/lmx
func FuzzParse(f *testing.F) {
	for _, name := range goldenNames(f) {
		src, err := readTestdata(name + ".lmx")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add(injectionLMX)
	for _, s := range []string{
		"", "<", "&", "<Paragraph>&</Paragraph>", "<Paragraph>{contact.", "<Paragraph>{{data.x}}</Paragraph>",
		"<![CDATA[", "<!--", "<?x", "<Paragraph><![CDATA[{data.x}]]></Paragraph>", "<Columns widths=\"50,50\"></Columns>",
		"<Paragraph>&#0;&#xD800;&#1114112;</Paragraph>", "<Image src=\"\" />", "\xff\xfe<Paragraph>x</Paragraph>",
		"<Link href=\"x\">", "</Paragraph>", "<Paragraph a=\"1\" a=\"2\">x</Paragraph>",
	} {
		f.Add(s)
	}
	vals := &lmx.Values{
		Contact: map[string]string{"firstName": `"><script>x</script>`, "url": "javascript:alert(1)"},
		Data:    map[string]string{"x": "java\tscript:1", "resetLink": " javascript:1"},
	}
	f.Fuzz(func(t *testing.T, src string) {
		doc, _, err := lmx.Parse(src)
		if err != nil {
			var se *lmx.SyntaxError
			if !errors.As(err, &se) || se.Line < 1 || se.Col < 1 || len(se.Errors) == 0 {
				t.Fatalf("bad error %#v", err)
			}
			return
		}
		tmpl, err := lmx.Compile(doc, lmx.Options{Components: testComponents, PreviewText: "{contact.firstName}"})
		if err != nil {
			return
		}
		h, _ := tmpl.Render(vals, nil)
		z := html.NewTokenizer(strings.NewReader(h))
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				return
			}
			if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
				continue
			}
			tok := z.Token()
			if forbiddenElements[tok.Data] {
				t.Fatalf("forbidden <%s> in output for %q", tok.Data, src)
			}
			for _, a := range tok.Attr {
				if strings.HasPrefix(a.Key, "on") || (a.Key == "href" || a.Key == "src") && !safeURL(a.Val) {
					t.Fatalf("unsafe attribute %s=%q in output for %q", a.Key, a.Val, src)
				}
			}
		}
	})
}
