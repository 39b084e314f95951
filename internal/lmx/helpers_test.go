package lmx_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lasso-mail/lasso/internal/lmx"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// testComponents are the components the golden files may reference.
var testComponents = lmx.ComponentMap{
	"cmp_footer": `<Paragraph align="center">Footer for {contact.firstName}</Paragraph><Divider />`,
	"cmp_nested": `<H3>Nested</H3><Component componentId="cmp_footer" />`,
}

// testOptions returns the compile options for the golden file name.
func testOptions(name string) lmx.Options {
	o := lmx.Options{
		Subject:     "Golden: {contact.firstName}",
		PreviewText: "Preview for {contact.firstName}",
		Components:  testComponents,
		IconBaseURL: "https://cdn.example.com/icons",
	}
	if name == "footer" {
		o.Footer = &lmx.Footer{Text: "Lasso Inc.\n1 Main St, Springfield", Unsubscribe: true}
	}
	if name == "icons" || name == "full" {
		o.IconBaseURL = ""
		if name == "icons" {
			o.IconBaseURL = "https://cdn.example.com/icons/"
		}
	}
	return o
}

func testValues() (*lmx.Values, *lmx.Fallbacks) {
	return &lmx.Values{
			Contact: map[string]string{"firstName": "Ada", "userId": "u_42", "avatarUrl": "https://cdn.example.com/u/42.png"},
			Event:   map[string]string{"planName": "Pro"},
			Data: map[string]string{
				"resetLink": "https://example.com/reset?t=abc&x=1",
				"html":      `<b>"quoted" & 'single'</b>`,
				"dangerous": "javascript:alert(document.cookie)",
			},
			System: map[string]string{"unsubscribe_link": "https://lasso.example.com/u/tok"},
		}, &lmx.Fallbacks{
			Contact: map[string]string{"lastName": "Friend", "firstName": "there"},
		}
}

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/lmx -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// compileFile parses and compiles testdata/name.lmx.
func compileFile(t testing.TB, name string) (*lmx.Template, []lmx.Warning) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name+".lmx"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, warns, err := lmx.CompileString(string(src), testOptions(name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tmpl, warns
}

func goldenNames(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.lmx"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f[:len(f)-len(".lmx")]))
	}
	return names
}

func readTestdata(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	return string(b), err
}
