package content

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/lmx"
)

func TestRemoveStyleAttr(t *testing.T) {
	src := "<H1>x</H1>\n  <Style themeId=\"t\" bodyColor=\"#eee\" textBaseColor='#111'/>\n<Paragraph>é</Paragraph>"
	doc, _, err := lmx.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	got := removeStyleAttr(src, doc.Style.Pos, "bodyColor")
	want := "<H1>x</H1>\n  <Style themeId=\"t\" textBaseColor='#111'/>\n<Paragraph>é</Paragraph>"
	if got != want {
		t.Fatalf("got %q", got)
	}
	got = removeStyleAttr(got, doc.Style.Pos, "textBaseColor")
	if d, _, err := lmx.Parse(got); err != nil || len(lmx.StylesFromDoc(d).Map()) != 0 {
		t.Fatalf("after removing: %q %v", got, err)
	}
	if offsetOf("ab\ncé d", lmx.Pos{Line: 2, Col: 3}) != len("ab\ncé") {
		t.Fatal("offsetOf counts characters")
	}
}

func TestSniffImage(t *testing.T) {
	for in, want := range map[string]string{
		"\x89PNG\r\n\x1a\n0000":            "image/png",
		"\xff\xd8\xff\xe0":                 "image/jpeg",
		"GIF89a....":                       "image/gif",
		"RIFF\x00\x00\x00\x00WEBPVP8 ":     "image/webp",
		"<svg xmlns='http://www.w3.org/'>": "",
		"<html><script>alert(1)</script>":  "",
		"":                                 "",
	} {
		if got := sniffImage([]byte(in)); got != want {
			t.Errorf("sniff %q = %q, want %q", in, got, want)
		}
	}
}

func TestSignature(t *testing.T) {
	k := []byte("secret")
	a := sign(k, "id", "image/png", 10, 100)
	for _, b := range []string{sign(k, "id2", "image/png", 10, 100), sign(k, "id", "image/gif", 10, 100),
		sign(k, "id", "image/png", 11, 100), sign(k, "id", "image/png", 10, 101), sign([]byte("other"), "id", "image/png", 10, 100)} {
		if a == b {
			t.Fatal("signature does not cover every field")
		}
	}
}

func TestDirBlobs(t *testing.T) {
	ctx := context.Background()
	d := DirBlobs{Dir: t.TempDir()}
	if _, err := d.Put(ctx, "../../etc/passwd", strings.NewReader("x")); err == nil {
		t.Fatal("path traversal accepted")
	}
	id := ids.New()
	if _, err := d.Get(ctx, id); !errors.Is(err, ErrBlobNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if n, err := d.Put(ctx, id, strings.NewReader("hello")); err != nil || n != 5 {
		t.Fatal(n, err)
	}
	rc, err := d.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 10)
	n, _ := rc.Read(b)
	rc.Close()
	if string(b[:n]) != "hello" {
		t.Fatalf("got %q", b[:n])
	}
	if err := d.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, id); err != nil {
		t.Fatal("deleting twice:", err)
	}
}

func TestMergeFallbacks(t *testing.T) {
	s := func(v string) *string { return &v }
	got := mergeFallbacks(map[string]string{"a": "1", "b": "2"}, map[string]*string{"a": nil, "c": s("3")})
	if len(got) != 2 || got["b"] != "2" || got["c"] != "3" {
		t.Fatalf("got %v", got)
	}
	if got := mergeFallbacks(map[string]string{"a": "1"}, map[string]*string{"a": nil}); got != nil {
		t.Fatalf("empty map kept: %v", got)
	}
	if got := mergeFallbacks(map[string]string{"a": "1"}, nil); got["a"] != "1" {
		t.Fatal("nil update changed the map")
	}
}

func TestComponentVars(t *testing.T) {
	vars := []lmx.Variable{{Namespace: "contact", Name: "companyName"}, {Namespace: "contact", Name: "firstName"}}
	err := checkComponentVars([]string{ParentCampaign}, vars, []string{})
	if !errors.Is(err, apperr.Unprocessable) || apperr.Extra(err)["invalidTags"].([]string)[0] != "companyName" {
		t.Fatalf("campaign: %v %v", err, apperr.Extra(err))
	}
	if err := checkComponentVars([]string{ParentCampaign}, vars, []string{"companyName"}); err != nil {
		t.Fatal(err)
	}
	if err := checkComponentVars(nil, vars, nil); err != nil {
		t.Fatal("no emails use it:", err)
	}
	err = checkComponentVars([]string{ParentTransactional}, []lmx.Variable{{Namespace: "data", Name: "x"}, {Namespace: "contact", Name: "firstName"}}, nil)
	if err == nil || apperr.Extra(err)["invalidTags"].([]string)[0] != "firstName" {
		t.Fatalf("transactional: %v", err)
	}
}

func TestFromAddressParts(t *testing.T) {
	for _, ok := range []string{"hello", "first.last", "{data.sender}", "a+b"} {
		if !localPartRe.MatchString(variableRe.ReplaceAllString(ok, "x")) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"a b", "a<b", "", strings.Repeat("a", 65)} {
		if localPartRe.MatchString(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}
