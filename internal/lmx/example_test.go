package lmx_test

import (
	"fmt"

	"github.com/lasso-mail/lasso/internal/lmx"
)

func Example() {
	doc, warnings, err := lmx.Parse(`<H1>Hi {contact.firstName}</H1>
<Button href="https://app.example.com/u/{contact.userId}">Open your account</Button>`)
	if err != nil {
		fmt.Println(err) // *lmx.SyntaxError with line and column → HTTP 422
		return
	}
	fmt.Println(len(warnings), doc.Variables())

	tmpl, err := lmx.Compile(doc, lmx.Options{Subject: "Welcome", PreviewText: "Your account is ready"})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Once per recipient; missing values use the fallbacks, then "".
	_, text := tmpl.Render(
		&lmx.Values{Contact: map[string]string{"userId": "42"}},
		&lmx.Fallbacks{Contact: map[string]string{"firstName": "there"}},
	)
	fmt.Print(text)
	// Output:
	// 0 [contact.firstName contact.userId]
	// # Hi there
	//
	// Open your account: https://app.example.com/u/42
}

func ExampleParse_error() {
	_, _, err := lmx.Parse("<Paragraph>Hello</Paragraph>\n<Image alt=\"logo\" />")
	fmt.Println(err)
	// Output:
	// lmx: 2:1: <Image> needs a src attribute, e.g. <Image src="https://example.com/logo.png" />
}
