package lmx_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lasso-mail/lasso/internal/lmx"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		src       string
		line, col int
		rule      string
		msg       string // substring of the first error
	}{
		{"unknown tag", "<Paragraph>ok</Paragraph>\n  <Foo>x</Foo>", 2, 3, lmx.RuleUnknownTag, "unknown tag <Foo>"},
		{"html tag suggestion", "<p>hello</p>", 1, 1, lmx.RuleUnknownTag, "did you mean <Paragraph>?"},
		{"case suggestion", "<paragraph>hello</paragraph>", 1, 1, lmx.RuleUnknownTag, "did you mean <Paragraph>?"},
		{"mjml", "<mj-section></mj-section>", 1, 1, lmx.RuleUnknownTag, "unknown tag <mj-section>"},
		{"namespaced", "<v:rect></v:rect>", 1, 1, lmx.RuleUnknownTag, "unknown tag <v:rect>"},
		{"top-level text", "\n\n   hello", 3, 4, lmx.RuleTextNotAllowed, "wrap it in <Paragraph>"},
		{"top-level inline", "<Strong>x</Strong>", 1, 1, lmx.RuleInvalidNesting, "cannot be at the top level"},
		{"top-level list item", "<ListItem>x</ListItem>", 1, 1, lmx.RuleInvalidNesting, "inside <OrderedList> or <UnorderedList>"},
		{"top-level icon", `<Icon name="twitter"/>`, 1, 1, lmx.RuleInvalidNesting, "inside <Icons>"},
		{"column item outside", "<ColumnItem></ColumnItem>", 1, 1, lmx.RuleInvalidNesting, "inside <Columns>"},
		{"image src missing", "<Paragraph>a</Paragraph>\n<Image alt=\"x\" />", 2, 1, lmx.RuleMissingAttribute, "<Image> needs a src attribute"},
		{"link href missing", "<Paragraph>a <Link>b</Link></Paragraph>", 1, 14, lmx.RuleMissingAttribute, "<Link> needs a href attribute"},
		{"component id missing", "<Component />", 1, 1, lmx.RuleMissingAttribute, "componentId"},
		{"icon name missing", "<Icons><Icon /></Icons>", 1, 8, lmx.RuleMissingAttribute, "<Icon> needs a name"},
		{"unknown icon", `<Icons><Icon name="nope-nope" /></Icons>`, 1, 8, lmx.RuleUnknownIcon, `unknown icon name "nope-nope"`},
		{"block in paragraph", "<Paragraph><H1>x</H1></Paragraph>", 1, 12, lmx.RuleInvalidNesting, "<H1> cannot be inside <Paragraph>"},
		{"inline in button", `<Button href="https://x.example"><Strong>x</Strong></Button>`, 1, 34, lmx.RuleInvalidNesting, "only text and variables"},
		{"tag in codeblock", "<CodeBlock><Strong>x</Strong></CodeBlock>", 1, 12, lmx.RuleInvalidNesting, "literal text only"},
		{"child of image", `<Image src="https://x.example/a.png"><Br/></Image>`, 1, 38, lmx.RuleInvalidNesting, "cannot have children"},
		{"list without items", "<UnorderedList></UnorderedList>", 1, 1, lmx.RuleChildCount, "at least one <ListItem>"},
		{"list with paragraph", "<OrderedList><Paragraph>x</Paragraph></OrderedList>", 1, 14, lmx.RuleInvalidNesting, "can only contain <ListItem>"},
		{"one column", "<Columns><ColumnItem></ColumnItem></Columns>", 1, 1, lmx.RuleChildCount, "2 to 4 <ColumnItem>"},
		{"five columns", "<Columns>" + strings.Repeat("<ColumnItem></ColumnItem>", 5) + "</Columns>", 1, 1, lmx.RuleChildCount, "found 5"},
		{"nested columns", "<Columns><ColumnItem><Columns><ColumnItem/><ColumnItem/></Columns></ColumnItem><ColumnItem/></Columns>", 1, 22, lmx.RuleInvalidNesting, "cannot be nested"},
		{"nested section", "<Section><Section></Section></Section>", 1, 10, lmx.RuleInvalidNesting, "cannot be nested"},
		{"component in component", `<Component componentId="a"><Component componentId="b"/></Component>`, 1, 28, lmx.RuleInvalidNesting, "cannot be inside another <Component>"},
		{"style in section", "<Section><Style /></Section>", 1, 10, lmx.RuleInvalidNesting, "must be at the top level"},
		{"two styles", "<Style />\n<Style />", 2, 1, lmx.RuleDuplicateStyle, "only one <Style/>"},
		{"empty icons", "<Icons></Icons>", 1, 1, lmx.RuleChildCount, "1 to 100"},
		{"text in columns", "<Columns>oops<ColumnItem/><ColumnItem/></Columns>", 1, 10, lmx.RuleTextNotAllowed, "cannot contain text"},
		{"link in link", `<Paragraph><Link href="https://a.example"><Link href="https://b.example">x</Link></Link></Paragraph>`, 1, 43, lmx.RuleInvalidNesting, "inside another <Link>"},
		{"unclosed", "<Paragraph>\nhello", 2, 6, lmx.RuleSyntax, "never closed"},
		{"mismatched", "<Paragraph><Strong>x</Paragraph>", 1, 12, lmx.RuleSyntax, "<Strong> is not closed before </Paragraph>"},
		{"stray close", "<Paragraph>x</Paragraph></Strong>", 1, 25, lmx.RuleSyntax, "no matching opening tag"},
		{"self-closing without slash", `<Image src="https://x.example/a.png">`, 1, 38, lmx.RuleSyntax, "<Image> opened at line 1, column 1 is never closed"},
		{"raw less-than", "<Paragraph>a < b</Paragraph>", 1, 14, lmx.RuleSyntax, "&lt;"},
		{"unquoted attribute", "<Divider width=80 />", 1, 16, lmx.RuleSyntax, "must be quoted"},
		{"unicode column", "<Paragraph>héllo wörld</Paragraph>\n<Bogus/>", 2, 1, lmx.RuleUnknownTag, "<Bogus>"},
		{"after bare ampersands", `<Paragraph><Link href="https://x.example/?a=1&b=2&c=3">x</Link></Paragraph><Nope/>`, 1, 76, lmx.RuleUnknownTag, "<Nope>"},
		{"style in component body", "", 0, 0, "", ""},
	} {
		if tc.src == "" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, _, err := lmx.Parse(tc.src)
			var se *lmx.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error = %v, want *SyntaxError", tc.src, err)
			}
			if doc != nil {
				t.Error("doc should be nil on error")
			}
			if se.Line != tc.line || se.Col != tc.col || se.Rule != tc.rule || !strings.Contains(se.Msg, tc.msg) {
				t.Errorf("got %d:%d [%s] %q\nwant %d:%d [%s] containing %q\nall: %v", se.Line, se.Col, se.Rule, se.Msg, tc.line, tc.col, tc.rule, tc.msg, se.Errors)
			}
			if len(se.Errors) == 0 || se.Errors[0] != se.Diagnostic {
				t.Errorf("Errors[0] should equal the first diagnostic: %v", se.Errors)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

func TestParseReportsSeveralErrors(t *testing.T) {
	t.Parallel()
	_, _, err := lmx.Parse("<Paragraph>\n  <Foo>x</Foo>\n<Image/></Paragraph>\nhello<ListItem>x</ListItem>")
	var se *lmx.SyntaxError
	if !errors.As(err, &se) {
		t.Fatal(err)
	}
	var got []string
	for _, e := range se.Errors {
		got = append(got, e.String())
	}
	want := []string{
		"2:3: unknown tag <Foo>",
		"3:1: <Image> cannot be inside <Paragraph>; only text, variables, <Br/> and inline tags (Strong, Em, Underline, Strike, Code, Text, Link) are allowed there",
		`3:1: <Image> needs a src attribute, e.g. <Image src="https://example.com/logo.png" />`,
		`4:1: text "hello" is outside any block; wrap it in <Paragraph>…</Paragraph>`,
		"4:6: <ListItem> must be inside <OrderedList> or <UnorderedList>",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestParseComponentRejectsStyle(t *testing.T) {
	t.Parallel()
	_, _, err := lmx.ParseComponent("<Style bodyColor=\"#fff\" />\n<Paragraph>x</Paragraph>")
	if err == nil || !strings.Contains(err.Error(), "cannot contain <Style/>") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseWarnings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src  string
		rule string
		msg  string
		attr string // attribute value after the check, "-" if removed
	}{
		{`<Paragraph fontSize="80">x</Paragraph>`, lmx.RuleOutOfRange, "outside 12–64; 64 is used", "64"},
		{`<Paragraph fontSize="8px">x</Paragraph>`, lmx.RuleOutOfRange, "12 is used", "12"},
		{`<Paragraph fontSize="big">x</Paragraph>`, lmx.RuleInvalidValue, "not a number", "-"},
		{`<Paragraph colour="#fff">x</Paragraph>`, lmx.RuleUnknownAttribute, "unknown attribute colour", "-"},
		{`<Paragraph fontsize="14">x</Paragraph>`, lmx.RuleUnknownAttribute, "did you mean fontSize?", "-"},
		{`<Paragraph align="justify">x</Paragraph>`, lmx.RuleInvalidValue, "not one of left, center, right", "-"},
		{`<Paragraph align="CENTER">x</Paragraph>`, "", "", "center"},
		{`<Paragraph blockColor="blue">x</Paragraph>`, lmx.RuleInvalidValue, "not a hex colour", "-"},
		{`<Paragraph blockColor="#ABC">x</Paragraph>`, "", "", "#abc"},
		{`<Button notrack="yes">x</Button>`, lmx.RuleInvalidValue, `not "true" or "false"`, "-"},
		{`<Button href="javascript:alert(1)">x</Button>`, lmx.RuleUnsafeURL, "not allowed", "#"},
		{`<Button href="https://x.example" size="lg">x</Button>`, lmx.RuleUnknownAttribute, "legacy", "https://x.example"},
		{`<Image src="https://x.example/{contact.id}.png" />`, lmx.RuleVariableNotAllowed, "dynamicSrc", "https://x.example/{contact.id}.png"},
		{`<Divider width="5" />`, lmx.RuleOutOfRange, "10 is used", "10"},
		{`<Paragraph fontSize="14" fontSize="20">x</Paragraph>`, lmx.RuleDuplicateAttribute, "more than once", "20"},
		{`<Paragraph>{firstName}</Paragraph>`, lmx.RuleVariableSyntax, "{contact.firstName}", ""},
		{`<Paragraph>{DATA_VARIABLE:resetLink}</Paragraph>`, lmx.RuleVariableSyntax, "{data.resetLink}", ""},
		{`<Paragraph>{contact.firstName|there}</Paragraph>`, lmx.RuleVariableSyntax, "no inline fallback", ""},
		{`<Paragraph>&bogus; x</Paragraph>`, lmx.RuleUnknownEntity, "&bogus;", ""},
		{`<Style bodyColor="white" />`, lmx.RuleInvalidValue, "not a hex colour", "-"},
		{`<Style borderRadius="-4" />`, lmx.RuleOutOfRange, "0 is used", "0"},
	} {
		doc, warns, err := lmx.Parse(tc.src)
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		if tc.rule == "" {
			if len(warns) != 0 {
				t.Errorf("%s: unexpected warnings %v", tc.src, warns)
			}
		} else if len(warns) == 0 || warns[0].Rule != tc.rule || !strings.Contains(warns[0].Msg, tc.msg) || warns[0].Line != 1 {
			t.Errorf("%s: warnings %v, want [%s] %q", tc.src, warns, tc.rule, tc.msg)
		}
		if tc.attr == "" {
			continue
		}
		n := doc.Style
		if len(doc.Blocks) > 0 {
			n = doc.Blocks[0]
		}
		name := map[bool]string{true: "href", false: ""}[strings.Contains(tc.src, "href=")]
		for _, a := range []string{"fontSize", "colour", "fontsize", "align", "blockColor", "notrack", "src", "width", "bodyColor", "borderRadius"} {
			if strings.Contains(tc.src, " "+a+"=") && name == "" {
				name = a
			}
		}
		got, ok := n.Attr(name)
		if !ok {
			got = "-"
		}
		if got != tc.attr {
			t.Errorf("%s: %s = %q, want %q", tc.src, name, got, tc.attr)
		}
	}
}

func TestVariables(t *testing.T) {
	t.Parallel()
	doc, _, err := lmx.Parse(`<H1>Hi {contact.firstName}</H1>
<Paragraph>{event.planName} {data.reset-link} {data.a_b} {contact.firstName} <Strong>{system.unsubscribe_link}</Strong></Paragraph>
<Button href="https://x.example/{contact.userId}">{data.label}</Button>
<Image src="https://x.example/a.png" alt="{data.alt}" href="{data.imgHref}" dynamicSrc="{contact.avatar}" />
<Section href="{event.url}"><Paragraph>x</Paragraph></Section>
<CodeBlock>{contact.notAVariable}</CodeBlock>
<Component componentId="c1" />`)
	if err != nil {
		t.Fatal(err)
	}
	want := []lmx.Variable{
		{Namespace: "contact", Name: "avatar"}, {Namespace: "contact", Name: "firstName"}, {Namespace: "contact", Name: "userId"},
		{Namespace: "data", Name: "a_b"}, {Namespace: "data", Name: "alt"}, {Namespace: "data", Name: "imgHref"},
		{Namespace: "data", Name: "label"}, {Namespace: "data", Name: "reset-link"},
		{Namespace: "event", Name: "planName"}, {Namespace: "event", Name: "url"},
		{Namespace: "system", Name: "unsubscribe_link"},
	}
	if diff := cmp.Diff(want, doc.Variables()); diff != "" {
		t.Errorf("Variables (-want +got):\n%s", diff)
	}
	if err := lmx.Expand(doc, lmx.ComponentMap{"c1": "<Paragraph>{data.fromComponent}</Paragraph>"}); err != nil {
		t.Fatal(err)
	}
	if vs := doc.Variables(); !contains(vs, lmx.Variable{Namespace: "data", Name: "fromComponent"}) {
		t.Errorf("expanded Variables() misses the component's variable: %v", vs)
	}
}

func contains(vs []lmx.Variable, v lmx.Variable) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func TestVariablesInAndInterpolate(t *testing.T) {
	t.Parallel()
	s := "Hi {contact.firstName}, {data.x} {nope} {contact.firstName}"
	got := lmx.VariablesIn(s)
	want := []lmx.Variable{{Namespace: "contact", Name: "firstName"}, {Namespace: "data", Name: "x"}, {Namespace: "contact", Name: "firstName"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("VariablesIn (-want +got):\n%s", diff)
	}
	out := lmx.Interpolate(s, &lmx.Values{Contact: map[string]string{"firstName": "<Ada>"}}, &lmx.Fallbacks{Data: map[string]string{"x": "fb"}})
	if out != "Hi <Ada>, fb {nope} <Ada>" {
		t.Errorf("Interpolate = %q", out)
	}
	miss := lmx.Missing(got, &lmx.Values{}, &lmx.Fallbacks{Data: map[string]string{"x": ""}})
	if len(miss) != 2 || miss[0].Name != "firstName" {
		t.Errorf("Missing = %v", miss)
	}
}

func TestWhitespaceAndEntities(t *testing.T) {
	t.Parallel()
	doc, warns, err := lmx.Parse("\uFEFF<!-- comment & stuff -->\n<?xml version=\"1.0\"?>\n<Paragraph>\n  a&nbsp;&amp;&nbsp;b  <Strong> c </Strong>\n d<Br/>  e &hellip; &#x1F600; &#169;\n</Paragraph>")
	if err != nil || len(warns) != 0 {
		t.Fatal(err, warns)
	}
	if got := doc.Blocks[0].TextContent(); got != "a\u00a0&\u00a0b c d e … 😀 ©" {
		t.Errorf("TextContent = %q", got)
	}
	tmpl, err := lmx.Compile(doc, lmx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, text := tmpl.Render(nil, nil)
	if !strings.Contains(h, "a\u00a0&amp;\u00a0b <strong style=\"font-weight:bold;\">c </strong>d<br>e … 😀 ©</p>") {
		t.Errorf("HTML paragraph not normalised:\n%s", h)
	}
	if !strings.Contains(text, "a\u00a0&\u00a0b c d\ne … 😀 ©\n") {
		t.Errorf("text = %q", text)
	}
}

func TestComponents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		src   string
		comps lmx.ComponentMap
		err   string
		text  string
	}{
		{"resolved", `<Component componentId="a" />`, lmx.ComponentMap{"a": "<Paragraph>from a</Paragraph>"}, "", "from a\n"},
		{"override wins", `<Component componentId="a"><Paragraph>local</Paragraph></Component>`, lmx.ComponentMap{"a": "<Paragraph>from a</Paragraph>"}, "", "local\n"},
		{"override needs no resolver", `<Component componentId="zzz"><Paragraph>local</Paragraph></Component>`, nil, "", "local\n"},
		{"nested", `<Component componentId="a" />`, lmx.ComponentMap{"a": `<Paragraph>a</Paragraph><Component componentId="b" />`, "b": "<Paragraph>b</Paragraph>"}, "", "a\n\nb\n"},
		{"unknown", "<Paragraph>x</Paragraph>\n<Component componentId=\"nope\" />", lmx.ComponentMap{}, `2:1: unknown component "nope"`, ""},
		{"nil resolver", `<Component componentId="a" />`, nil, `unknown component "a"`, ""},
		{"self cycle", `<Component componentId="a" />`, lmx.ComponentMap{"a": `<Component componentId="a" />`}, `component "a" includes itself (a → a)`, ""},
		{"long cycle", `<Component componentId="a" />`, lmx.ComponentMap{"a": `<Component componentId="b" />`, "b": `<Component componentId="c" />`, "c": `<Component componentId="a" />`}, "(a → b → c → a)", ""},
		{"broken body", `<Component componentId="a" />`, lmx.ComponentMap{"a": `<Paragraph>`}, `component "a" cannot be compiled`, ""},
		{"style in body", `<Component componentId="a" />`, lmx.ComponentMap{"a": `<Style />`}, `cannot contain <Style/>`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r lmx.ComponentResolver
			if tc.comps != nil {
				r = tc.comps
			}
			tmpl, _, err := lmx.CompileString(tc.src, lmx.Options{Components: r})
			if tc.err != "" {
				var se *lmx.SyntaxError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want *SyntaxError containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, text := tmpl.Render(nil, nil); text != tc.text {
				t.Errorf("text = %q, want %q", text, tc.text)
			}
		})
	}
}

func TestComponentFanOutIsBounded(t *testing.T) {
	t.Parallel()
	comps := lmx.ComponentMap{}
	ref := func(id string) string { return strings.Repeat(`<Component componentId="`+id+`" />`, 40) }
	comps["c0"] = "<Paragraph>" + strings.Repeat("x", 100) + "</Paragraph>"
	for i := 1; i < 8; i++ {
		comps["c"+string(rune('0'+i))] = ref("c" + string(rune('0'+i-1)))
	}
	_, _, err := lmx.CompileString(ref("c7"), lmx.Options{Components: comps})
	if err == nil {
		t.Fatal("exponential component expansion should fail")
	}
}

func TestThemeMergeAndValidate(t *testing.T) {
	t.Parallel()
	red, size := "#ff0000", 20.0
	th := lmx.DefaultTheme().Merge(lmx.ThemeStyles{TextBaseColor: &red, TextBaseFontSize: &size})
	if *th.TextBaseColor != "#ff0000" || *th.TextBaseFontSize != 20 || *th.BodyColor != "#ffffff" {
		t.Errorf("merge: %v", th.Map())
	}
	if err := th.Validate(); err != nil {
		t.Error(err)
	}
	bad := "red"
	if err := (lmx.ThemeStyles{BodyColor: &bad}).Validate(); err == nil || !strings.Contains(err.Error(), "bodyColor") {
		t.Errorf("Validate = %v", err)
	}
	doc, _, err := lmx.Parse(`<Style themeId="st_1" textBaseColor="#00ff00" /><Paragraph>x</Paragraph>`)
	if err != nil {
		t.Fatal(err)
	}
	if doc.ThemeID() != "st_1" || *lmx.StylesFromDoc(doc).TextBaseColor != "#00ff00" {
		t.Error("StylesFromDoc/ThemeID")
	}
	// <Style/> beats the theme, the theme beats the defaults.
	tmpl, err := lmx.Compile(doc, lmx.Options{Theme: &lmx.ThemeStyles{TextBaseColor: &red, TextLinkColor: &red}})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := tmpl.Render(nil, nil)
	if !strings.Contains(h, "color:#00ff00;\">x</p>") {
		t.Errorf("Style override not applied")
	}
}

func TestParseTooDeep(t *testing.T) {
	t.Parallel()
	src := "<Paragraph>" + strings.Repeat("<Strong>", 5000) + "x" + strings.Repeat("</Strong>", 5000) + "</Paragraph>"
	_, _, err := lmx.Parse(src)
	var se *lmx.SyntaxError
	if !errors.As(err, &se) || se.Rule != lmx.RuleTooDeep {
		t.Fatalf("err = %v", err)
	}
}
