package tracking_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/lasso-mail/lasso/internal/lmx"
	"github.com/lasso-mail/lasso/internal/tracking"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestRewriteGolden")

const sendID = "cm4t1sv84004yje79hawr1fi1"

// TestRewriteGolden rewrites testdata/rewrite/*.html and compares with the
// .golden files next to them (go test -run RewriteGolden -update to refresh),
// then checks the invariants of checkRewrite on each.
func TestRewriteGolden(t *testing.T) {
	s := testSigner(t)
	files, err := filepath.Glob("testdata/rewrite/*.html")
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got := tracking.Rewrite(src, base, sendID, s)
			golden := strings.TrimSuffix(in, ".html") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (run with -update and review the diff):\n%s", golden, got)
			}
			checkRewrite(t, s, src, got)
			checkRewrite(t, s, src, tracking.RewriteTokenized(src, base, sendID, s))
		})
	}
}

// TestRewriteLMX checks, by parsing the result, what Rewrite does to a
// document rendered by lmx.
func TestRewriteLMX(t *testing.T) {
	s := testSigner(t)
	src, err := os.ReadFile("testdata/rewrite/lmx.html")
	if err != nil {
		t.Fatal(err)
	}
	out := tracking.Rewrite(src, base, sendID, s)
	hrefs := map[string]string{} // link text → href
	var imgs []map[string]string
	doc, err := html.Parse(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		attrs := map[string]string{}
		for _, a := range n.Attr {
			attrs[a.Key] = a.Val
		}
		if _, ok := attrs[tracking.NoTrackAttr]; ok {
			t.Errorf("<%s> still has %s", n.Data, tracking.NoTrackAttr)
		}
		switch n.Data {
		case "a":
			var text strings.Builder
			for c := range n.Descendants() {
				if c.Type == html.TextNode {
					text.WriteString(c.Data)
				}
			}
			hrefs[text.String()] = attrs["href"]
		case "img":
			imgs = append(imgs, attrs)
		}
	}
	click := func(u string) string { return s.ClickURL(base, sendID, u) }
	for text, want := range map[string]string{
		"our blog":         click("https://example.com/blog?a=1&b=2"),
		"Get started":      click("https://example.com/start?ref=email"),
		"":                 click("https://example.com/hero"), // the linked image
		"your account":     "https://example.com/private",
		"help@example.com": "mailto:help@example.com",
		"us":               "tel:+15551234",
		"Unsubscribe":      "https://mail.example.com/unsubscribe/cm4t1sv84004yje79hawr1fi1/SIG",
	} {
		if got, ok := hrefs[text]; !ok || got != want {
			t.Errorf("link %q: href = %q, want %q", text, got, want)
		}
	}
	last := imgs[len(imgs)-1]
	if last["src"] != s.OpenURL(base, sendID) || last["width"] != "1" || last["height"] != "1" || last["alt"] != "" ||
		!strings.HasPrefix(last["style"], "display:none") {
		t.Errorf("last image is not the pixel: %v", last)
	}
	if !bytes.Contains(out, []byte(`<img src="`+s.OpenURL(base, sendID)+`" `)) ||
		!bytes.Contains(out, []byte(`overflow:hidden;"></td></tr>`)) && !bytes.Contains(out, []byte("overflow:hidden;\"></body>")) {
		t.Errorf("pixel not right before </body>")
	}
	// Entities and everything outside the rewritten tags are untouched.
	for _, keep := range []string{"&#847;&zwnj;&nbsp;", "News &amp; offers", "Hello Ada &lt;3", "Hero &#34;image&#34;", "<!--[if mso]>"} {
		if !bytes.Contains(out, []byte(keep)) {
			t.Errorf("output lost %q", keep)
		}
	}
}

// checkRewrite checks that out is in, as the tokenizer sees it, with only
// these differences: the pixel <img> before the first </body> (or near the
// end), NoTrackAttr gone from <a> tags, and the href of trackable <a> tags
// replaced by their click URL.
func checkRewrite(t testing.TB, s *tracking.Signer, in, out []byte) {
	t.Helper()
	if _, err := html.Parse(bytes.NewReader(out)); err != nil {
		t.Fatalf("output does not parse: %v", err)
	}
	a, b := tokens(in), tokens(out)
	pixel := s.OpenURL(base, sendID)
	at := -1
	for i, tok := range b {
		if tok.Type == html.StartTagToken && tok.Data == "img" && len(tok.Attr) > 0 && tok.Attr[0].Val == pixel {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatalf("no pixel in output\nin:  %q\nout: %q", in, out)
	}
	body := len(a)
	for i, tok := range a {
		if tok.Type == html.EndTagToken && tok.Data == "body" {
			body = i
			break
		}
	}
	if at > body {
		t.Errorf("pixel at token %d, after the first </body> at %d", at, body)
	}
	b = append(b[:at:at], b[at+1:]...)
	if len(a) != len(b) {
		t.Fatalf("%d tokens in, %d out (pixel removed)\nin:  %q\nout: %q", len(a), len(b), in, out)
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Data != y.Data {
			t.Fatalf("token %d: %v %q became %v %q\nin:  %q\nout: %q", i, x.Type, x.Data, y.Type, y.Data, in, out)
		}
		if x.Type != html.StartTagToken && x.Type != html.SelfClosingTagToken {
			continue
		}
		if x.Data != "a" {
			if fmt.Sprint(x.Attr) != fmt.Sprint(y.Attr) {
				t.Fatalf("token %d <%s>: attributes %v became %v", i, x.Data, x.Attr, y.Attr)
			}
			continue
		}
		want := wantAnchorAttrs(s, x.Attr)
		got := y.Attr
		if fmt.Sprint(want) != fmt.Sprint(got) {
			t.Fatalf("token %d <a>: attributes %q became %q, want %q\nin:  %q\nout: %q", i, x.Attr, got, want, in, out)
		}
	}
}

// wantAnchorAttrs is the specification of what Rewrite does to the
// attributes of one <a>.
func wantAnchorAttrs(s *tracking.Signer, attrs []html.Attribute) []html.Attribute {
	notrack := false
	for _, a := range attrs {
		notrack = notrack || a.Key == tracking.NoTrackAttr
	}
	var out []html.Attribute
	hrefDone := false
	for _, a := range attrs {
		switch {
		case a.Key == tracking.NoTrackAttr || !validName(a.Key):
			continue
		case a.Key == "href" && !hrefDone:
			hrefDone = true
			if !notrack {
				u := clean(a.Val)
				own := strings.HasPrefix(u, base+"/t/") || strings.HasPrefix(u, base+"/unsubscribe/")
				if c := s.ClickURL(base, sendID, u); c != u && !own {
					a.Val = c
				}
			}
		}
		out = append(out, a)
	}
	return out
}

// validName: names Rewrite's fallback path cannot write back are dropped.
func validName(k string) bool {
	return k != "" && !strings.ContainsAny(k, " \t\n\r\f/>\x00") && !strings.Contains(k[1:], "=")
}

func clean(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	return strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
}

func tokens(b []byte) []html.Token {
	z := html.NewTokenizer(bytes.NewReader(b))
	var toks []html.Token
	for z.Next() != html.ErrorToken {
		toks = append(toks, z.Token())
	}
	return toks
}

func FuzzRewrite(f *testing.F) {
	files, _ := filepath.Glob("testdata/rewrite/*.html")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, seed := range []string{
		``,
		`<`,
		`</`,
		`<!--`,
		`<a href="https://x.example/">`,
		`<a href=https://x.example/ data-lasso-notrack/>`,
		`<a/data-lasso-notrack>`,
		`<a x=1 data-lasso-notrack/>`,
		`<a =href="https://x.example/" href="https://y.example/">`,
		`<a href = 'https://x.example/?a=1&amp;b' >`,
		`<script><a href="https://x.example/">`,
		`<title>x</title><a href="https://x.example/"></a></body></body>`,
		"<a href=\"https://x.example/\x00\">",
		"<a hr\x00ef=\"https://x.example/\">",
		`<a href="https://x.example/"data-lasso-notrack="true"x>`,
		`<svg><a href="https://x.example/"/></svg>`,
		`<plaintext><a href="https://x.example/">`,
		`<a href="https://x.example/?a&copyx;&copy=1&copy;&amp&semi;&#x80;&#0;&#12abc;&NotEqualTilde;&;&#">`,
		"<a href=\"https://x.example/\r\n?a=\r\">",
		`<style></STYLE ><a href="https://x.example/"><title>x</title x><!--->--><a href=https://y.example/>`,
		`<!DOCTYPE html><!x><?php x ?></ x><a href="https://x.example/">`,
	} {
		f.Add([]byte(seed))
	}
	s := testSigner(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		checkRewrite(t, s, in, tracking.Rewrite(in, base, sendID, s))
		checkRewrite(t, s, in, tracking.RewriteTokenized(in, base, sendID, s))
	})
}

// benchHTML renders a realistic 50 KB campaign email with lmx: headings,
// paragraphs with links, buttons, images, a notrack link and the footer.
func benchHTML(tb testing.TB) []byte {
	tb.Helper()
	var src strings.Builder
	src.WriteString(`<H1>Weekly digest for {contact.firstName}</H1>` + "\n")
	for i := 0; src.Len() < 12_400; i++ {
		fmt.Fprintf(&src, `<H2>Story %d: what happened this week</H2>
<Paragraph>Lorem ipsum dolor sit amet, <Link href="https://news.example.com/story/%d?utm_source=newsletter&amp;utm_medium=email">consectetur adipiscing</Link> elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua &amp; more. <Strong>Ut enim</Strong> ad minim veniam, quis nostrud exercitation.</Paragraph>
<Image src="https://cdn.example.com/img/%d.png" href="https://news.example.com/story/%d" alt="Story %d" width="560" />
<Button href="https://news.example.com/story/%d/read">Read more</Button>
`, i, i, i, i, i, i)
	}
	src.WriteString(`<Paragraph><Link href="https://example.com/account" notrack="true">Manage account</Link></Paragraph>`)
	tmpl, _, err := lmx.CompileString(src.String(), lmx.Options{
		Subject: "Weekly digest", PreviewText: "This week's stories",
		Footer: &lmx.Footer{Text: "ACME Inc, 1 Main St", Unsubscribe: true},
	})
	if err != nil {
		tb.Fatal(err)
	}
	s := testSigner(tb)
	out, _ := tmpl.Render(&lmx.Values{
		Contact: map[string]string{"firstName": "Ada"},
		System:  map[string]string{"unsubscribe_link": s.UnsubscribeURL(base, sendID)},
	}, nil)
	return []byte(out)
}

func BenchmarkRewrite(b *testing.B) {
	src := benchHTML(b)
	s := testSigner(b)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		tracking.Rewrite(src, base, sendID, s)
	}
	b.ReportMetric(float64(bytes.Count(src, []byte("<a "))), "links/doc")
	b.ReportMetric(float64(len(src)), "bytes/doc")
}

func BenchmarkRewriteReuse(b *testing.B) {
	src := benchHTML(b)
	s := testSigner(b)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = tracking.AppendRewrite(buf[:0], src, base, sendID, s)
	}
}

func BenchmarkRewriteTokenized(b *testing.B) {
	src := benchHTML(b)
	s := testSigner(b)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		tracking.RewriteTokenized(src, base, sendID, s)
	}
}
