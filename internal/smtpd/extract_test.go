package smtpd

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/lasso-mail/lasso/internal/apperr"
)

func TestExtractJSON(t *testing.T) {
	const want = `{"transactionalId":"t1","email":"dan@loops.so"}`
	hdr := "Subject: x\r\nMIME-Version: 1.0\r\n"
	for _, tc := range []struct {
		name, msg, want string
	}{
		{"plain", hdr + "Content-Type: text/plain\r\n\r\n" + `{"transactionalId": "t1", "email": "dan@loops.so"}` + "\r\n", want},
		{"no content type", "Subject: x\r\n\r\n" + `{"transactionalId":"t1","email":"dan@loops.so"}`, want},
		{"no header at all", "\r\n  " + `{"transactionalId":"t1","email":"dan@loops.so"}` + "\r\n", want},
		{"quoted-printable", hdr + "Content-Type: text/plain; charset=us-ascii\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
			"{\"transactionalId\"=3A \"t1\",=\r\n \"email\": \"dan@loops.so\"}\r\n", want},
		{"base64 utf-16", hdr + "Content-Type: text/plain; charset=utf-16\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
			"//57ACIAdAByAGEAbgBzAGEAYwB0AGkAbwBuAGEAbABJAGQAIgA6ACIAdAAxACIALAAiAGUAbQBhAGkAbAAiADoAIgBkAGEAbgBAAGwAbwBvAHAAcwAuAHMAbwAiAH0A\r\n", want},
		{"format=flowed", hdr + "Content-Type: text/plain; format=flowed\r\n\r\n" + "{\"transactionalId\": \"t1\", \r\n\"email\": \"dan@loops.so\"}\r\n", want},
		{"format=flowed delsp", hdr + "Content-Type: text/plain; format=flowed; delsp=yes\r\n\r\n" + "{\"transactionalId\": \"t \r\n1\", \"email\": \"dan@loops.so\"}\r\n", want},
		{"comments and trailing commas", hdr + "Content-Type: text/plain\r\n\r\n" +
			"// send it\r\n{\r\n  \"transactionalId\": \"t1\", /* the template */\r\n  \"email\": \"dan@loops.so\", // recipient\r\n}\r\n", want},
		{"slashes in strings kept", hdr + "\r\n" + `{"transactionalId":"t1","email":"dan@loops.so","u":"http://a/*b*/c//d"}`,
			`{"transactionalId":"t1","email":"dan@loops.so","u":"http://a/*b*/c//d"}`},
		{"escaped quote in string", hdr + "\r\n" + `{"transactionalId":"t\"1 // x","email":"dan@loops.so"}`,
			`{"transactionalId":"t\"1 // x","email":"dan@loops.so"}`},
		{"bom and nbsp", hdr + "Content-Type: text/plain; charset=utf-8\r\n\r\n\ufeff{\u00a0\"transactionalId\": \"t1\",\u00a0\"email\": \"dan@loops.so\"}", want},
		{"text part preferred over html", hdr + "Content-Type: multipart/alternative; boundary=zz\r\n\r\n" +
			"--zz\r\nContent-Type: text/html\r\n\r\n<p>{}</p>\r\n--zz\r\nContent-Type: text/plain\r\n\r\n" + want + "\r\n--zz--\r\n", want},
		{"nested multipart, attachment skipped", hdr + "Content-Type: multipart/mixed; boundary=out\r\n\r\n" +
			"--out\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=a.txt\r\n\r\nnot json\r\n" +
			"--out\r\nContent-Type: multipart/alternative; boundary=in\r\n\r\n--in\r\nContent-Type: text/html\r\n\r\n<div>" +
			`{"transactionalId":"t1","email":"dan@loops.so"}` + "</div>\r\n--in--\r\n--out--\r\n", want},
		{"html only", hdr + "Content-Type: text/html; charset=utf-8\r\n\r\n" +
			`<html><head><title>{"no":1}</title><script>var x = "{";</script></head><body><!-- {"c":1} -->` +
			`<p>{&quot;transactionalId&quot;:&#32;"t1",<br/>"email":"<a href="mailto:x">dan</a>@loops.so"}</p></body></html>`, want},
		{"html head without end", hdr + "Content-Type: text/html\r\n\r\n<head><meta charset=utf-8><body>" + want, want},
		{"html less-than in text", hdr + "Content-Type: text/html\r\n\r\n" + `{"transactionalId":"t1","email":"dan@loops.so","x":"a < b &lt;c&gt;"}`,
			`{"transactionalId":"t1","email":"dan@loops.so","x":"a < b <c>"}`},
		{"unknown charset read raw", hdr + "Content-Type: text/plain; charset=x-unknown-42\r\n\r\n" + want, want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := extractJSON([]byte(tc.msg))
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestExtractJSONErrors(t *testing.T) {
	hdr := "Subject: x\r\nContent-Type: text/plain\r\n\r\n"
	for _, tc := range []struct {
		name, msg, want string
	}{
		{"empty", hdr + "  \r\n", "body is empty"},
		{"not json", hdr + "Hello!", "not valid JSON (invalid character 'H' looking for beginning of value at line 1)"},
		{"bad on line 3", hdr + "{\n\"a\": 1,\n\"b\": nope}", "at line 3"},
		{"truncated", hdr + `{"a": [1, 2`, "unexpected end of input"},
		{"array", hdr + `[{"a":1}]`, "must be a JSON object, not an array"},
		{"string", hdr + `"hi"`, "must be a JSON object, not a string"},
		{"two objects", hdr + `{"a":1} {"b":2}`, "unexpected text after the JSON object"},
		{"signature after", hdr + "{\"a\":1}\r\n-- \r\nDan", "unexpected text after the JSON object at line 2"},
		{"unterminated comment", hdr + "{\"a\":1}\n/* x", "unterminated /* comment at line 2"},
		{"no text part", "Subject: x\r\nContent-Type: image/png\r\n\r\nxxx", "no text/plain or text/html part"},
		{"attachment only", "Subject: x\r\nContent-Type: text/plain\r\nContent-Disposition: attachment\r\n\r\n{}", "no text/plain or text/html part"},
		{"broken header", "Subject x\r\n\r\n{}", "could not be parsed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := extractJSON([]byte(tc.msg))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, apperr.Invalid) {
				t.Fatalf("error %v is not apperr.Invalid", err)
			}
			msg, _ := apperr.Message(err)
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("message %q lacks %q", msg, tc.want)
			}
			if r := reply(err); r.Code != 550 || len(r.Message) > maxReplyText {
				t.Fatalf("reply %v", r)
			}
		})
	}
}

func TestReplyMapping(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		enh  smtp.EnhancedCode
		msg  string
	}{
		{apperr.Invalid, 550, smtp.EnhancedCode{5, 6, 0}, "Invalid send payload"},
		{apperr.New(apperr.NotFound, "Transactional email not found."), 550, smtp.EnhancedCode{5, 6, 0}, "Transactional email not found."},
		{apperr.TooLarge, 552, smtp.EnhancedCode{5, 3, 4}, "Message too large"},
		{apperr.Unavailable, 451, smtp.EnhancedCode{4, 3, 2}, "Service unavailable, try again later"},
		{apperr.NotImplemented, 554, smtp.EnhancedCode{5, 3, 3}, "Not supported"},
		{smtp.ErrDataTooLarge, 552, smtp.EnhancedCode{5, 3, 4}, "Maximum message size exceeded"},
		{smtp.ErrTooLongLine, 552, smtp.EnhancedCode{5, 3, 4}, "Line too long"},
		{errors.New("secret internals"), 451, smtp.EnhancedCode{4, 3, 0}, "Temporary server error, try again later"},
		{apperr.New(apperr.Invalid, "Caf\u00e9 \u2014 bad"), 550, smtp.EnhancedCode{5, 6, 0}, "Caf? ? bad"},
		{apperr.New(apperr.Invalid, "   "), 550, smtp.EnhancedCode{5, 6, 0}, "Invalid send payload"},
	} {
		r := reply(tc.err)
		if r.Code != tc.code || r.EnhancedCode != tc.enh || r.Message != tc.msg {
			t.Errorf("reply(%v) = %d %v %q, want %d %v %q", tc.err, r.Code, r.EnhancedCode, r.Message, tc.code, tc.enh, tc.msg)
		}
	}
	if reply(nil) != nil {
		t.Error("reply(nil) != nil")
	}
	long := reply(apperr.New(apperr.Invalid, "%s", strings.Repeat("x", 2000)))
	if len(long.Message) != maxReplyText || !strings.HasSuffix(long.Message, "...") {
		t.Errorf("long message not capped: %d", len(long.Message))
	}
}

func TestHTMLToText(t *testing.T) {
	for in, want := range map[string]string{
		`a<b>c</b>d`:                          "acd",
		`x<br>y`:                              "x\ny",
		`<a title="x>y">z</a>`:                "z",
		`1 < 2 &amp;&amp; 3 > 2`:              "1 < 2 && 3 > 2",
		`<style>p{}</style>ok`:                "ok",
		`<!-- no -->ok<!-- unterminated`:      "ok",
		`<SCRIPT>x</SCRIPT >ok`:               "ok",
		"<pre>{\n \"a\": 1\n}</pre>":          "\n{\n \"a\": 1\n}\n",
		`&lt;p&gt; &quot;q&quot; &#39;s&#39;`: `<p> "q" 's'`,
	} {
		if got := htmlToText(in); got != want {
			t.Errorf("htmlToText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsReturnPath(t *testing.T) {
	for addr, want := range map[string]bool{
		"bounce+c0000000000000000000000ab@bounces.example.com":   true,
		"<bounce+c0000000000000000000000ab@bounces.example.com>": true,
		"BOUNCE+C0000000000000000000000AB@Bounces.Example.com":   true,
		"bounce+c0000000000000000000000ab@[192.0.2.1]":           true,
		"bounce+c0000000000000000000000a@bounces.example.com":    false, // 24
		"bounce+c0000000000000000000000abc@bounces.example.com":  false, // 26
		"bounce+c00000000000000000000-0ab@bounces.example.com":   false,
		"bounce-c0000000000000000000000ab@bounces.example.com":   false,
		"postmaster@bounces.example.com":                         false,
		"bounce+c0000000000000000000000ab@":                      false,
		"bounce+c0000000000000000000000ab":                       false,
		"":                                                       false,
		"bounce+c0000000000000000000000ab@evil.com\r\nRCPT":      false,
	} {
		if got := IsReturnPath(addr); got != want {
			t.Errorf("IsReturnPath(%q) = %v, want %v", addr, got, want)
		}
	}
}

// FuzzExtractJSON checks that extraction never panics and that whatever it
// accepts is a JSON object, and whatever it refuses is a client error.
func FuzzExtractJSON(f *testing.F) {
	f.Add([]byte("Subject: x\r\n\r\n{\"transactionalId\":\"t\",\"email\":\"a@b.c\"}"))
	f.Add([]byte("{\"a\": 1, /* c */ // d\n}"))
	f.Add([]byte("Content-Type: text/html\r\n\r\n<p>{&quot;a&quot;:1}</p>"))
	f.Add([]byte("Content-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain; format=flowed\r\n\r\n{\"a\": \r\n1}\r\n--b--\r\n"))
	f.Add([]byte("Content-Type: text/plain; charset=utf-16\r\nContent-Transfer-Encoding: base64\r\n\r\n//57ACIAYQAiADoAMQB9AA==\r\n"))
	f.Add([]byte("Content-Transfer-Encoding: quoted-printable\r\n\r\n{\"a\"=3A=\r\n 1}"))
	if files, _ := filepath.Glob(filepath.Join("testdata", "*.eml")); len(files) > 0 {
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := extractJSON(raw)
		if err != nil {
			if !errors.Is(err, apperr.Invalid) {
				t.Fatalf("error of another kind: %v", err)
			}
			if r := reply(err); r.Code != 550 || strings.ContainsAny(r.Message, "\r\n") || len(r.Message) > maxReplyText {
				t.Fatalf("bad reply %+v", r)
			}
			return
		}
		var obj map[string]json.RawMessage
		if jerr := json.Unmarshal(out, &obj); jerr != nil {
			t.Fatalf("accepted %q, not a JSON object: %v", out, jerr)
		}
	})
}

// TestExtractJSONSamples runs the sample messages in testdata (also fuzz
// seeds): each carries the Loops doc payload.
func TestExtractJSONSamples(t *testing.T) {
	const want = `{"transactionalId":"clomzp89u035xl50px7wrl0ri","email":"dan@loops.so","dataVariables":{"confirmationUrl":"https://myapp.com/confirm/12345/"}}`
	files, err := filepath.Glob(filepath.Join("testdata", "*.eml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("samples: %v %v", files, err)
	}
	for _, p := range files {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := extractJSON(raw)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if string(got) != want {
			t.Errorf("%s:\ngot  %s\nwant %s", p, got, want)
		}
	}
}

// TestExtractJSONLinear feeds adversarial bodies of the maximum message size
// that would be quadratic with naive scanning.
func TestExtractJSONLinear(t *testing.T) {
	const size = 6 << 20
	fill := func(unit string) string { return strings.Repeat(unit, size/len(unit)) }
	for name, body := range map[string]string{
		"heads":            fill("<head><body>"),
		"unclosed scripts": fill("<script>x"),
		"open tags":        fill("<a "),
		"comments":         fill("<!-- -->"),
		"unclosed quotes":  fill(`<a "`),
		"block comments":   fill("/**/"),
		"line comments":    fill("//\n"),
		"commas":           "{" + fill(" ,}"),
		"nbsp":             fill("\u00a0"),
		"entities":         fill("&amp;"),
	} {
		for _, ct := range []string{"text/html", "text/plain"} {
			start := time.Now()
			_, _ = extractJSON([]byte("Content-Type: " + ct + "\r\n\r\n" + body))
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%s as %s took %v", name, ct, d)
			}
		}
	}
}
