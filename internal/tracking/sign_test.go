package tracking_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/lasso-mail/lasso/internal/tracking"
)

const base = "https://mail.example.com"

func mustSigner(tb testing.TB, secret string) *tracking.Signer {
	tb.Helper()
	s, err := tracking.NewSigner([]byte(secret))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func testSigner(tb testing.TB) *tracking.Signer {
	return mustSigner(tb, "0123456789abcdef0123456789abcdef")
}

func TestNewSignerShortSecret(t *testing.T) {
	if _, err := tracking.NewSigner([]byte("short")); err == nil {
		t.Fatal("NewSigner accepted a 5-byte secret")
	}
}

// lastSegments returns the sendID and sig of a signed URL path.
func lastSegments(t *testing.T, raw, prefix string) (sendID, sig string, u *url.URL) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	rest, ok := strings.CutPrefix(u.EscapedPath(), prefix)
	if !ok {
		t.Fatalf("%s does not start with %s", raw, prefix)
	}
	esc, sig, ok := strings.Cut(rest, "/")
	if !ok {
		t.Fatalf("no signature in %s", raw)
	}
	sendID, err = url.PathUnescape(esc)
	if err != nil {
		t.Fatal(err)
	}
	return sendID, sig, u
}

var sigRE = regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)

func TestSignRoundTrip(t *testing.T) {
	s := testSigner(t)
	for _, id := range []string{"cm4t1sv84004yje79hawr1fi1", "a/b c?d", "ünï"} {
		t.Run("open", func(t *testing.T) {
			raw := s.OpenURL(base+"/", id)
			if !strings.HasPrefix(raw, base+"/t/o/") || !strings.HasSuffix(raw, ".gif") {
				t.Fatalf("OpenURL = %s", raw)
			}
			got, sig, _ := lastSegments(t, raw, "/t/o/")
			sig = strings.TrimSuffix(sig, ".gif")
			if got != id || !sigRE.MatchString(sig) {
				t.Fatalf("OpenURL = %s: send %q sig %q", raw, got, sig)
			}
			if !s.VerifyOpen(id, sig) {
				t.Error("VerifyOpen rejects its own signature")
			}
			if s.VerifyUnsubscribe(id, sig) {
				t.Error("an open signature unlocks unsubscribe")
			}
		})
		t.Run("unsubscribe", func(t *testing.T) {
			raw := s.UnsubscribeURL(base, id)
			got, sig, _ := lastSegments(t, raw, "/unsubscribe/")
			if got != id || !sigRE.MatchString(sig) {
				t.Fatalf("UnsubscribeURL = %s", raw)
			}
			if !s.VerifyUnsubscribe(id, sig) {
				t.Error("VerifyUnsubscribe rejects its own signature")
			}
			if s.VerifyOpen(id, sig) || s.VerifyClick(id, "", sig) {
				t.Error("an unsubscribe signature is valid for another purpose")
			}
		})
		t.Run("click", func(t *testing.T) {
			target := "https://example.com/a b?x=1&y=ü#frag"
			raw := s.ClickURL(base, id, target)
			got, sig, u := lastSegments(t, raw, "/t/c/")
			if got != id || !sigRE.MatchString(sig) {
				t.Fatalf("ClickURL = %s", raw)
			}
			if q := u.Query(); len(q) != 1 || q.Get("u") != target {
				t.Fatalf("ClickURL query = %v", q)
			}
			if !s.VerifyClick(id, target, sig) {
				t.Error("VerifyClick rejects its own signature")
			}
		})
	}
}

func TestSignTamper(t *testing.T) {
	s := testSigner(t)
	const id, target = "cm4t1sv84004yje79hawr1fi1", "https://example.com/x"
	_, sig, _ := lastSegments(t, s.ClickURL(base, id, target), "/t/c/")
	flip := func(sig string, i int) string {
		b := []byte(sig)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	cases := []struct {
		name            string
		id, target, sig string
	}{
		{"target", id, "https://evil.example/x", sig},
		{"target suffix", id, target + "/", sig},
		{"send", "cm4t1sv84004yje79hawr1fi2", target, sig},
		{"sig first", id, target, flip(sig, 0)},
		{"sig last", id, target, flip(sig, len(sig)-1)},
		{"sig short", id, target, sig[:len(sig)-1]},
		{"sig long", id, target, sig + "A"},
		{"sig empty", id, target, ""},
		{"send empty", "", target, sig},
		// The (sendID, target) boundary is unambiguous.
		{"boundary", id + "h", "ttps://example.com/x", sig},
	}
	for _, c := range cases {
		if s.VerifyClick(c.id, c.target, c.sig) {
			t.Errorf("%s: tampered click verified", c.name)
		}
	}
	other := mustSigner(t, "another secret, 32 bytes long!!!")
	if other.VerifyClick(id, target, sig) {
		t.Error("a signature verified under another key")
	}
}

func TestClickURLUntrackable(t *testing.T) {
	s := testSigner(t)
	for _, target := range []string{"mailto:a@example.com", "javascript:alert(1)", "/relative", "https://", "ftp://x.example/"} {
		if got := s.ClickURL(base, "id", target); got != target {
			t.Errorf("ClickURL(%q) = %q, want it unchanged", target, got)
		}
	}
}

func TestMaskEmail(t *testing.T) {
	for in, want := range map[string]string{
		"jane.doe@example.com": "j***@example.com",
		"a@example.com":        "***@example.com",
		"élodie@example.fr":    "é***@example.fr",
		"nope":                 "***",
	} {
		if got := tracking.MaskEmail(in); got != want {
			t.Errorf("MaskEmail(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkClickURL(b *testing.B) {
	s := testSigner(b)
	b.ReportAllocs()
	for b.Loop() {
		s.ClickURL(base, "cm4t1sv84004yje79hawr1fi1", "https://example.com/some/path?utm_source=newsletter&utm_campaign=x")
	}
}
