package lmx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/lmx"
)

// browserLMX is a representative message with every element kind: all three
// heading levels, paragraphs with inline markup, a button, images (one wider
// than the container, one fixed-width), two- and three-column rows, a
// divider, both list kinds, a quote, a section, social icons and, through
// Options.Footer, the system footer. Images are relative URLs so that the
// browser loads them from the temp directory next to the HTML file.
const browserLMX = `<Style bodyColor="#ffffff" backgroundColor="#f3f4f6" bodyYPadding="24" textBaseColor="#111827" />
<Image src="hero.png" alt="Hero banner" />
<H1>Welcome, {contact.firstName}</H1>
<Paragraph fontSize="16" lineHeight="150">
  Thanks for joining. Read <Link href="https://example.com/docs">the docs</Link> to get <Strong>started</Strong> and <Em>enjoy</Em>.
</Paragraph>
<Button href="https://app.example.com/account/{contact.userId}" align="center" bgColor="#000000" textColor="#ffffff" borderRadius="12">Open account</Button>
<Divider width="80" color="#d1d5db" />
<H2>Two columns</H2>
<Columns gap="24" widths="50,50" verticalAlignment="top">
  <ColumnItem>
    <H3>Docs</H3>
    <Paragraph>Start with the quickstart guide; it takes five minutes.</Paragraph>
  </ColumnItem>
  <ColumnItem>
    <Image src="logo.png" alt="Company logo" width="180" />
  </ColumnItem>
</Columns>
<H2>Three columns</H2>
<Columns widths="33,33,34" blockColor="#f8fafc">
  <ColumnItem><Paragraph>One</Paragraph></ColumnItem>
  <ColumnItem><Paragraph>Two</Paragraph></ColumnItem>
  <ColumnItem><Paragraph>Three</Paragraph></ColumnItem>
</Columns>
<UnorderedList>
  <ListItem>Create your first campaign</ListItem>
  <ListItem>Add your audience</ListItem>
</UnorderedList>
<OrderedList>
  <ListItem>Send a test email</ListItem>
  <ListItem>Go live</ListItem>
</OrderedList>
<Quote>Email that just works.</Quote>
<Section blockColor="#f8fafc" blockBorderRadius="12" paddingTop="16" paddingBottom="16">
  <Paragraph>Manage your subscription from your account settings.</Paragraph>
  <Button href="https://app.example.com/settings">Settings</Button>
</Section>
<Divider />
<Icons align="center" gap="20" size="24" color="#000000">
  <Icon name="twitter" href="https://x.com/lasso" />
  <Icon name="linkedin" href="https://www.linkedin.com/company/lasso" />
</Icons>
`

// browserResult mirrors the JSON printed by testdata/browser/render.mjs.
type browserResult struct {
	Chromium  string `json:"chromium"`
	Viewports []struct {
		Width          int      `json:"width"`
		Screenshot     string   `json:"screenshot"`
		Errors         []string `json:"errors"`
		Blocked        []string `json:"blocked"`
		InnerWidth     int      `json:"innerWidth"`
		ScrollWidth    int      `json:"scrollWidth"`
		BodyScrollWdth int      `json:"bodyScrollWidth"`
		Container      *bbox    `json:"container"`
		Headings       []struct {
			Tag  string `json:"tag"`
			Text string `json:"text"`
			bbox
		} `json:"headings"`
		ListItems  int `json:"listItems"`
		ColumnRows []struct {
			Dir   string `json:"dir"`
			Cells []struct {
				Text string `json:"text"`
				bbox
			} `json:"cells"`
		} `json:"columnRows"`
		Buttons []struct {
			Text    string `json:"text"`
			Href    string `json:"href"`
			Visible bool   `json:"visible"`
			bbox
		} `json:"buttons"`
		Images []struct {
			Src     string `json:"src"`
			Alt     string `json:"alt"`
			Loaded  bool   `json:"loaded"`
			Visible bool   `json:"visible"`
			bbox
		} `json:"images"`
		Text string `json:"text"`
	} `json:"viewports"`
}

type bbox struct{ X, Y, W, H int }

// writePNG writes a w×h gradient PNG.
func writePNG(t *testing.T, path string, w, h int) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(40 + 180*x/w), uint8(80 + 120*y/h), 200, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserLayout renders a representative message in headless Chromium
// at 660, 600 and 375 px and checks the layout: no horizontal overflow,
// buttons visible, images inside the viewport, and columns side by side
// above the template's mobile breakpoint and stacked at or below it.
// Columns stack at the phone breakpoint (max-width:480px): side by side at
// 660 and 600 px (the container turns fluid below 620 px), stacked at 375.
// Screenshots go to testdata/browser/out/.
//
// Needs node, Debian's chromium and `npm ci` in testdata/browser (the
// Makefile's node-deps target); skips when any is missing.
func TestBrowserLayout(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found in PATH; install nodejs to run the browser layout test")
	}
	chromium := ""
	for _, p := range []string{"/usr/lib/chromium/chromium", "/usr/bin/chromium"} {
		if _, err := os.Stat(p); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		t.Skip("chromium not found (apt-get install chromium); skipping the browser layout test")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "browser"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err != nil {
		t.Skipf("%s/node_modules is missing; run `npm ci` there (make node-deps) to run the browser layout test", dir)
	}

	tmpl, warns, err := lmx.CompileString(browserLMX, lmx.Options{
		Subject:     "Welcome, {contact.firstName}",
		PreviewText: "Your account is ready",
		Footer:      &lmx.Footer{Text: "Lasso Inc., 1 Main St, Springfield", Unsubscribe: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		t.Errorf("warning: %v", w)
	}
	html, _ := tmpl.Render(&lmx.Values{
		Contact: map[string]string{"firstName": "Ada", "userId": "u_42"},
		System:  map[string]string{"unsubscribe_link": "https://example.com/unsubscribe/abc"},
	}, nil)

	// The mobile layout is switched on by the template's own media query;
	// read its breakpoint so the expectations follow the CSS.
	// The columns stack in the @media block that carries the .lx-col rule.
	breakpoint := 0
	mq := regexp.MustCompile(`@media only screen and \(max-width:(\d+)px\)`)
	for _, m := range mq.FindAllStringSubmatchIndex(html, -1) {
		rest := html[m[1]:]
		if next := mq.FindStringIndex(rest); next != nil {
			rest = rest[:next[0]]
		}
		if strings.Contains(rest, ".lx-col{display:block") {
			breakpoint, _ = strconv.Atoi(html[m[2]:m[3]])
		}
	}
	if breakpoint == 0 {
		t.Fatal("no @media query stacking the columns in the HTML")
	}

	tmp := t.TempDir()
	htmlPath := filepath.Join(tmp, "message.html")
	if err := os.WriteFile(htmlPath, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	writePNG(t, filepath.Join(tmp, "hero.png"), 1200, 400) // wider than the container: must scale down
	writePNG(t, filepath.Join(tmp, "logo.png"), 360, 120)  // shown at width="180"
	outDir := filepath.Join(dir, "out")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "render.mjs"),
		"--html", htmlPath, "--out", outDir, "--widths", "660,600,375", "--name", "representative")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("render.mjs: %v\nstderr:\n%s", err, stderr.String())
	}
	var res browserResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("render.mjs output: %v\n%s", err, stdout.String())
	}
	if len(res.Viewports) != 3 {
		t.Fatalf("got %d viewports, want 3", len(res.Viewports))
	}
	t.Logf("chromium %s; mobile breakpoint max-width:%dpx; screenshots in %s", res.Chromium, breakpoint, outDir)

	for _, vp := range res.Viewports {
		vw := vp.Width
		t.Logf("%dpx: scrollWidth=%d container=%+v screenshot=%s", vw, vp.ScrollWidth, vp.Container, vp.Screenshot)
		for _, e := range vp.Errors {
			t.Errorf("%dpx: page error: %s", vw, e)
		}
		if len(vp.Blocked) > 0 {
			t.Errorf("%dpx: message referenced network resources: %v", vw, vp.Blocked)
		}
		if vp.InnerWidth != vw {
			t.Errorf("%dpx: innerWidth = %d", vw, vp.InnerWidth)
		}
		// No horizontal overflow.
		if vp.ScrollWidth > vw || vp.BodyScrollWdth > vw {
			t.Errorf("%dpx: horizontal overflow: scrollWidth=%d bodyScrollWidth=%d", vw, vp.ScrollWidth, vp.BodyScrollWdth)
		}
		if c := vp.Container; c == nil {
			t.Errorf("%dpx: no .lx-container", vw)
		} else if c.X < 0 || c.X+c.W > vw || c.W > lmx.ContainerWidth {
			t.Errorf("%dpx: container %+v outside viewport or wider than %d", vw, *c, lmx.ContainerWidth)
		}

		// Every element kind made it into the page.
		tags := map[string]bool{}
		for _, h := range vp.Headings {
			tags[h.Tag] = true
		}
		if !tags["h1"] || !tags["h2"] || !tags["h3"] {
			t.Errorf("%dpx: headings %+v, want h1, h2 and h3", vw, vp.Headings)
		}
		if vp.ListItems != 4 {
			t.Errorf("%dpx: %d list items, want 4", vw, vp.ListItems)
		}
		for _, want := range []string{"Welcome, Ada", "Thanks for joining", "Email that just works", "Lasso Inc., 1 Main St", "Unsubscribe", "One", "Three"} {
			if !strings.Contains(vp.Text, want) {
				t.Errorf("%dpx: page text lacks %q", vw, want)
			}
		}

		// Buttons: both present, visible, inside the viewport, a usable size.
		if len(vp.Buttons) != 2 {
			t.Errorf("%dpx: %d buttons, want 2: %+v", vw, len(vp.Buttons), vp.Buttons)
		}
		for _, b := range vp.Buttons {
			if !b.Visible || b.W < 40 || b.H < 30 || b.X < 0 || b.X+b.W > vw {
				t.Errorf("%dpx: button %q not visible/inside viewport: %+v", vw, b.Text, b.bbox)
			}
		}
		if len(vp.Buttons) > 0 && vp.Buttons[0].Href != "https://app.example.com/account/u_42" {
			t.Errorf("%dpx: button href %q", vw, vp.Buttons[0].Href)
		}

		// Images: loaded and within the viewport; the 1200 px hero scaled down.
		if len(vp.Images) < 2 {
			t.Errorf("%dpx: %d images, want ≥ 2", vw, len(vp.Images))
		}
		for _, im := range vp.Images {
			if strings.HasPrefix(im.Src, "http") { // social icons without IconBaseURL are text links; anything else is unexpected
				t.Errorf("%dpx: unexpected remote image %s", vw, im.Src)
				continue
			}
			if !im.Loaded || !im.Visible {
				t.Errorf("%dpx: image %s not loaded/visible", vw, im.Src)
			}
			if im.X < 0 || im.X+im.W > vw {
				t.Errorf("%dpx: image %s outside viewport: %+v", vw, im.Src, im.bbox)
			}
			if im.Src == "hero.png" && (im.W > lmx.ContainerWidth || im.W < vw/2) {
				t.Errorf("%dpx: hero width %d, want scaled to the body width", vw, im.W)
			}
			if im.Src == "logo.png" && im.W > 180 {
				t.Errorf("%dpx: logo width %d > 180", vw, im.W)
			}
		}

		// Columns: side by side at 600 px, stacked at 375 px.
		if len(vp.ColumnRows) != 2 {
			t.Fatalf("%dpx: %d column rows, want 2: %+v", vw, len(vp.ColumnRows), vp.ColumnRows)
		}
		mode := "stacked"
		if vw > breakpoint {
			mode = "side by side"
		}
		t.Logf("%dpx: columns expected %s", vw, mode)
		for i, want := range []int{2, 3} {
			cells := vp.ColumnRows[i].Cells
			if len(cells) != want {
				t.Errorf("%dpx: row %d has %d cells, want %d", vw, i, len(cells), want)
				continue
			}
			for j, c := range cells {
				if c.X < 0 || c.X+c.W > vw || c.W <= 0 || c.H <= 0 {
					t.Errorf("%dpx: row %d cell %d outside viewport: %+v", vw, i, j, c.bbox)
				}
				if j == 0 {
					continue
				}
				p := cells[j-1]
				if vw > breakpoint { // side by side: same top, left to right, no overlap
					if c.Y != p.Y || c.X < p.X+p.W {
						t.Errorf("%dpx: row %d cells %d and %d not side by side: %+v then %+v", vw, i, j-1, j, p.bbox, c.bbox)
					}
				} else { // stacked: same left edge and width, each below the previous
					if c.X != p.X || c.W != p.W || c.Y < p.Y+p.H {
						t.Errorf("%dpx: row %d cells %d and %d not stacked: %+v then %+v", vw, i, j-1, j, p.bbox, c.bbox)
					}
				}
			}
			if vw <= breakpoint && cells[0].W < vw-2*16-2*24 {
				t.Errorf("%dpx: stacked cell width %d, want about the full body width", vw, cells[0].W)
			}
		}
	}
}
