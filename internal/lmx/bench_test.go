package lmx_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lasso-mail/lasso/internal/lmx"
)

// typicalLMX builds a realistic newsletter of about size bytes with a
// handful of variables.
func typicalLMX(size int) string {
	var b strings.Builder
	b.WriteString(`<Style bodyColor="#ffffff" backgroundColor="#f3f4f6" textBaseColor="#111827" />` + "\n")
	b.WriteString(`<Image src="https://cdn.example.com/logo.png" alt="Acme" width="120" align="left" />` + "\n")
	b.WriteString(`<H1>Hi {contact.firstName}, here is your {event.planName} digest</H1>` + "\n")
	for i := 0; b.Len() < size-600; i++ {
		fmt.Fprintf(&b, `<H2>Story %d: what changed this week</H2>
<Paragraph>Lorem ipsum dolor sit amet, <Strong>consectetur</Strong> adipiscing elit. Sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud <Link href="https://example.com/story/%d?u={contact.userId}">exercitation ullamco</Link> laboris nisi ut aliquip ex ea commodo consequat.</Paragraph>
<Columns widths="40,60"><ColumnItem><Image src="https://cdn.example.com/story-%d.jpg" alt="Story %d" /></ColumnItem><ColumnItem><Paragraph>Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur.</Paragraph><Button href="https://example.com/story/%d">Read more</Button></ColumnItem></Columns>
<Divider />
`, i, i, i, i, i)
	}
	b.WriteString(`<UnorderedList><ListItem>Your plan: {event.planName}</ListItem><ListItem>Account: {contact.email}</ListItem></UnorderedList>` + "\n")
	b.WriteString(`<Button href="https://app.example.com/account/{contact.userId}" align="center">Open your account</Button>` + "\n")
	b.WriteString(`<Icons><Icon name="twitter" href="https://x.com/acme" /><Icon name="github" href="https://github.com/acme" /></Icons>` + "\n")
	return b.String()
}

func benchValues(i int) *lmx.Values {
	return &lmx.Values{
		Contact: map[string]string{"firstName": "Ada", "userId": fmt.Sprintf("user_%d", i), "email": fmt.Sprintf("ada%d@example.com", i)},
		Event:   map[string]string{"planName": "Pro & Co"},
	}
}

// BenchmarkRender measures one personalised render (HTML + text) of a
// ~10 KB message into reused buffers, as a campaign sender would do.
//
//	go test -run='^$' -bench=Render -benchmem -cpu 1 ./internal/lmx
func BenchmarkRender(b *testing.B) {
	src := typicalLMX(10 << 10)
	tmpl, _, err := lmx.CompileString(src, lmx.Options{Subject: "Digest for {contact.firstName}", PreviewText: "This week at Acme, {contact.firstName}"})
	if err != nil {
		b.Fatal(err)
	}
	vals := make([]*lmx.Values, 64)
	for i := range vals {
		vals[i] = benchValues(i)
	}
	fb := &lmx.Fallbacks{Contact: map[string]string{"firstName": "there"}}
	var h, x []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := vals[i&63]
		h = tmpl.AppendHTML(h[:0], v, fb)
		x = tmpl.AppendText(x[:0], v, fb)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "renders/s")
	b.ReportMetric(float64(len(src)), "lmx-bytes")
	b.ReportMetric(float64(len(h)+len(x)), "out-bytes")
}

// BenchmarkRenderStrings is BenchmarkRender through the convenience
// Render method, which allocates the two result strings.
func BenchmarkRenderStrings(b *testing.B) {
	tmpl, _, err := lmx.CompileString(typicalLMX(10<<10), lmx.Options{Subject: "Digest for {contact.firstName}"})
	if err != nil {
		b.Fatal(err)
	}
	v := benchValues(1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tmpl.Render(v, nil)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "renders/s")
}

// BenchmarkRenderLarge shows that allocations do not grow with the static
// size: a ~100 KB message renders with the same allocs/op.
func BenchmarkRenderLarge(b *testing.B) {
	tmpl, _, err := lmx.CompileString(typicalLMX(100<<10), lmx.Options{})
	if err != nil {
		b.Fatal(err)
	}
	v := benchValues(1)
	var h, x []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h = tmpl.AppendHTML(h[:0], v, nil)
		x = tmpl.AppendText(x[:0], v, nil)
	}
}

// BenchmarkCompileLargest parses and compiles a message at the 100 KB
// API limit.
func BenchmarkCompileLargest(b *testing.B) {
	src := typicalLMX(100 << 10)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := lmx.CompileString(src, lmx.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRenderAllocations(t *testing.T) {
	tmpl, _, err := lmx.CompileString(typicalLMX(10<<10), lmx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := benchValues(1)
	h := tmpl.AppendHTML(nil, v, nil)
	x := tmpl.AppendText(nil, v, nil)
	allocs := testing.AllocsPerRun(100, func() {
		h = tmpl.AppendHTML(h[:0], v, nil)
		x = tmpl.AppendText(x[:0], v, nil)
	})
	if allocs != 0 {
		t.Errorf("AppendHTML+AppendText into reused buffers: %v allocs, want 0", allocs)
	}
	if a := testing.AllocsPerRun(20, func() { tmpl.Render(v, nil) }); a > 2 {
		t.Errorf("Render: %v allocs, want ≤ 2", a)
	}
}
