package lmx_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// voidElements never have an end tag.
var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true,
}

// forbiddenElements must never appear in rendered email.
var forbiddenElements = map[string]bool{
	"script": true, "iframe": true, "object": true, "embed": true, "form": true, "input": true,
	"base": true, "link": true, "frame": true, "frameset": true, "applet": true, "svg": true, "math": true,
}

// checkHTML tokenizes an email and reports structural and safety problems.
func checkHTML(t *testing.T, name, doc string) {
	t.Helper()
	if !strings.HasPrefix(doc, "<!DOCTYPE html>") {
		t.Errorf("%s: does not start with <!DOCTYPE html>", name)
	}
	z := html.NewTokenizer(strings.NewReader(doc))
	var stack []string
	counts := map[string]int{}
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			name := tok.Data
			counts[name]++
			if forbiddenElements[name] {
				t.Errorf("%s: forbidden element <%s>", name, name)
			}
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				attrs[a.Key] = a.Val
				if strings.HasPrefix(a.Key, "on") {
					t.Errorf("%s: event handler attribute %s=%q on <%s>", name, a.Key, a.Val, tok.Data)
				}
				if a.Key == "href" || a.Key == "src" || a.Key == "background" || a.Key == "action" {
					if !safeURL(a.Val) {
						t.Errorf("%s: unsafe URL %s=%q on <%s>", name, a.Key, a.Val, tok.Data)
					}
				}
				if a.Key == "style" && (strings.Contains(strings.ToLower(a.Val), "expression(") || strings.Contains(strings.ToLower(a.Val), "url(")) {
					t.Errorf("%s: dangerous CSS %q", name, a.Val)
				}
			}
			if tok.DataAtom == atom.Img {
				if _, ok := attrs["alt"]; !ok {
					t.Errorf("%s: <img> without alt", name)
				}
				if _, ok := attrs["width"]; !ok {
					t.Errorf("%s: <img> without width", name)
				}
			}
			if tt == html.StartTagToken && !voidElements[tok.Data] {
				stack = append(stack, tok.Data)
			}
		case html.EndTagToken:
			if len(stack) == 0 || stack[len(stack)-1] != tok.Data {
				t.Fatalf("%s: unbalanced </%s>, open: %v", name, tok.Data, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		t.Errorf("%s: unclosed elements %v", name, stack)
	}
	for _, el := range []string{"html", "head", "body", "title"} {
		if counts[el] != 1 {
			t.Errorf("%s: %d <%s> elements, want 1", name, counts[el], el)
		}
	}
	if counts["style"] != 1 {
		t.Errorf("%s: want exactly one <style> (the mobile media query)", name)
	}
}

func safeURL(u string) bool {
	u = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, u)
	u = strings.TrimLeft(strings.ToLower(u), "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	i := strings.IndexAny(u, ":/?#")
	if i <= 0 || u[i] != ':' {
		return true // relative URL (":x" has no scheme either)
	}
	scheme := u[:i]
	if scheme[0] < 'a' || scheme[0] > 'z' || strings.Trim(scheme, "abcdefghijklmnopqrstuvwxyz0123456789+.-") != "" {
		return true // not a scheme, so a relative URL
	}
	switch scheme {
	case "http", "https", "mailto", "tel", "sms", "cid":
		return true
	}
	return false
}

func TestHTMLStructure(t *testing.T) {
	t.Parallel()
	for _, name := range goldenNames(t) {
		tmpl, _ := compileFile(t, name)
		h, _ := tmpl.Render(testValues())
		checkHTML(t, name, h)
	}
}

// TestHTMLValidate runs html-validate (pinned in testdata/validate) over
// every golden HTML file. It needs node and `npm ci` in that directory.
func TestHTMLValidate(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found; install Node.js ≥ 20.19 to run html-validate")
	}
	dir := filepath.Join("testdata", "validate")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "html-validate")); err != nil {
		t.Skip("html-validate not installed; run `npm ci` in internal/lmx/testdata/validate")
	}
	tmp := t.TempDir()
	args := []string{filepath.Join(dir, "validate.mjs")}
	for _, name := range goldenNames(t) {
		tmpl, _ := compileFile(t, name)
		h, _ := tmpl.Render(testValues())
		f := filepath.Join(tmp, name+".html")
		if err := os.WriteFile(f, []byte(h), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, f)
	}
	f := filepath.Join(tmp, "injection.html")
	if err := os.WriteFile(f, []byte(renderInjection(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append(args, f)
	out, err := exec.Command(node, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("html-validate failed: %v\n%s", err, out)
	}
}
