package lmx_test

import (
	"strings"
	"testing"

	"github.com/lasso-mail/lasso/internal/lmx"
)

const injectionLMX = `<Style bodyFontFamily="x;}&lt;/style&gt;&lt;script&gt;alert(1)&lt;/script&gt;" backgroundColor="#fff;background:url(javascript:alert(1))" textLinkColor="expression(alert(1))" />
<H1 align="center&quot; onmouseover=&quot;alert(1)">{contact.firstName}</H1>
<Paragraph>&lt;script&gt;alert(1)&lt;/script&gt; <![CDATA[<script>alert(2)</script>]]> {contact.firstName}</Paragraph>
<Paragraph><Link href="javascript:alert(1)">static js</Link> <Link href="&#106;avascript:alert(1)">entity js</Link> <Link href="java&#9;script:alert(1)">tab js</Link> <Link href=" JAVASCRIPT:alert(1)">upper</Link> <Link href="{contact.url}">dyn</Link> <Link href="java{contact.x}">split</Link> <Link href="data:text/html,&lt;x&gt;">data</Link> <Link href="vbscript:x">vb</Link></Paragraph>
<Button href="{contact.url}" bgColor="#000&quot;onclick=&quot;x" textColor="#fff">B</Button>
<Image src="javascript:alert(1)" alt="{contact.firstName}" dynamicSrc="{contact.url}" href="{contact.url}" />
<Icons><Icon name="twitter" href="javascript:alert(1)" /></Icons>
<Section href="{contact.url}"><Paragraph>section</Paragraph></Section>
<CodeBlock>&lt;/pre&gt;&lt;script&gt;alert(3)&lt;/script&gt;</CodeBlock>`

var hostile = &lmx.Values{Contact: map[string]string{
	"firstName": `"><script>alert(1)</script><img src=x onerror=alert(1)>`,
	"url":       "javascript:alert(document.domain)",
	"x":         "script:alert(1)",
}}

func renderInjection(t *testing.T) string {
	t.Helper()
	tmpl, _, err := lmx.CompileString(injectionLMX, lmx.Options{
		Subject:     `</title><script>alert(1)</script>{contact.firstName}`,
		PreviewText: `{contact.firstName}</div><script>alert(1)</script>`,
	})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := tmpl.Render(hostile, nil)
	return h
}

func TestInjection(t *testing.T) {
	t.Parallel()
	h := renderInjection(t)
	checkHTML(t, "injection", h)
	low := strings.ToLower(h)
	for _, bad := range []string{"<script", "<img src=x", "javascript:", "vbscript:", "data:text", "expression(", "url("} {
		if strings.Contains(low, bad) {
			i := strings.Index(low, bad)
			t.Errorf("output contains %q: …%s…", bad, h[max(0, i-80):min(len(h), i+40)])
		}
	}
}

func TestDynamicURLSchemes(t *testing.T) {
	t.Parallel()
	tmpl, _, err := lmx.CompileString(`<Paragraph><Link href="{data.u}">x</Link></Paragraph><Paragraph><Link href="https://example.com/{data.u}">y</Link></Paragraph>`, lmx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want, wantPath string }{
		{"javascript:alert(1)", `href="#"`, `href="https://example.com/javascript:alert(1)"`},
		{" javascript:alert(1)", `href="#"`, `href="https://example.com/%20javascript:alert(1)"`},
		{"\x01javascript:alert(1)", `href="#"`, `href="https://example.com/%01javascript:alert(1)"`},
		{"java\nscript:alert(1)", `href="#"`, `href="https://example.com/java%0Ascript:alert(1)"`},
		{"JaVaScRiPt:alert(1)", `href="#"`, ``},
		{"vbscript:msgbox", `href="#"`, ``},
		{"data:text/html;base64,PHNjcmlwdD4=", `href="#"`, ``},
		{"https://ok.example.com/?a=1&b=2", `href="https://ok.example.com/?a=1&amp;b=2"`, ``},
		{"mailto:a@b.c", `href="mailto:a@b.c"`, ``},
		{"tel:+441234", `href="tel:+441234"`, ``},
		{"/relative/path", `href="/relative/path"`, ``},
		{`https://x.example/"onmouseover="alert(1)`, `href="https://x.example/%22onmouseover=%22alert(1)"`, ``},
		{"", `href="#"`, `href="https://example.com/"`},
	} {
		h, _ := tmpl.Render(&lmx.Values{Data: map[string]string{"u": tc.in}}, nil)
		if !strings.Contains(h, tc.want) {
			t.Errorf("value %q: want %s in\n%s", tc.in, tc.want, linkLines(h))
		}
		if tc.wantPath != "" && !strings.Contains(h, tc.wantPath) {
			t.Errorf("value %q in path: want %s in\n%s", tc.in, tc.wantPath, linkLines(h))
		}
		checkHTML(t, tc.in, h)
	}
}

func linkLines(h string) string {
	var out []string
	for _, l := range strings.Split(h, "<a ") {
		if strings.HasPrefix(l, "href") {
			out = append(out, "<a "+l[:min(len(l), 120)])
		}
	}
	return strings.Join(out, "\n")
}

func TestTextValuesAreEscaped(t *testing.T) {
	t.Parallel()
	tmpl, _, err := lmx.CompileString(`<Paragraph>{data.v}</Paragraph><Image src="https://x.example/a.png" alt="{data.v}" />`, lmx.Options{Subject: "{data.v}", PreviewText: "{data.v}"})
	if err != nil {
		t.Fatal(err)
	}
	v := `<b>&amp;"'`
	h, text := tmpl.Render(&lmx.Values{Data: map[string]string{"v": v}}, nil)
	if strings.Contains(h, v) || strings.Contains(h, "<b>") {
		t.Errorf("raw value in HTML:\n%s", h)
	}
	if n := strings.Count(h, "&lt;b&gt;&amp;amp;&#34;&#39;"); n != 4 {
		t.Errorf("escaped value appears %d times, want 4 (title, preheader, text, alt)", n)
	}
	if !strings.Contains(text, v) {
		t.Errorf("plain text should carry the raw value, got %q", text)
	}
}
