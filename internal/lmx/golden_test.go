package lmx_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestGolden renders every testdata/*.lmx and compares the HTML, the
// plain text and the parse warnings with the golden files next to it.
// Regenerate with: go test ./internal/lmx -run TestGolden -update
func TestGolden(t *testing.T) {
	for _, name := range goldenNames(t) {
		t.Run(name, func(t *testing.T) {
			tmpl, warns := compileFile(t, name)
			html, text := tmpl.Render(testValues())
			golden(t, name+".html", []byte(html))
			golden(t, name+".txt", []byte(text))
			var w strings.Builder
			for _, x := range warns {
				fmt.Fprintf(&w, "%s [%s]\n", x, x.Rule)
			}
			golden(t, name+".warnings", []byte(w.String()))
		})
	}
}

// TestGoldenCoversEveryElement makes sure each LMX element appears in at
// least one golden input.
func TestGoldenCoversEveryElement(t *testing.T) {
	t.Parallel()
	var all strings.Builder
	for _, name := range goldenNames(t) {
		src, _ := readTestdata(name + ".lmx")
		all.WriteString(src)
	}
	for _, tag := range []string{"H1", "H2", "H3", "Paragraph", "Quote", "CodeBlock", "Button", "Image", "Divider",
		"OrderedList", "UnorderedList", "ListItem", "Columns", "ColumnItem", "Component", "Section", "Icons", "Icon",
		"Style", "Br", "Strong", "Em", "Underline", "Strike", "Code", "Text", "Link"} {
		if !strings.Contains(all.String(), "<"+tag+" ") && !strings.Contains(all.String(), "<"+tag+">") && !strings.Contains(all.String(), "<"+tag+"/>") {
			t.Errorf("no golden test uses <%s>", tag)
		}
	}
}
