package contacts

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzParseDate: no panic; an accepted date lies within years 0–9999 (what
// the API can print) and reads back as itself from the form the API prints.
func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"2025-01-31", "2025-01-31T10:20", "2025-01-31 10:20:30", "2025-01-31T10:20:30.123456Z",
		"2025-01-31T10:20:30+02:00", "1700000000000", "-1", "9999999999999999", "2025-13-01", "", " ", "1e300", "2025-01-31T10:20:30-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range []any{s, json.Number(s)} {
			tm, ok := ParseDate(v)
			if !ok {
				continue
			}
			if y := tm.Year(); y < 0 || y > 9999 {
				t.Fatalf("%#v accepted as %v, outside what the API can print", v, tm)
			}
			printed := stored{num: ptr(float64(tm.UnixMilli()))}.value(TypeDate).(string)
			back, ok := ParseDate(printed)
			if !ok || !back.Equal(tm.Truncate(time.Millisecond)) {
				t.Fatalf("%#v → %v printed %q reads back as %v (%v)", v, tm, printed, back, ok)
			}
		}
	})
}

// FuzzNormalizeEmail: no panic; an accepted address is lowercase, trimmed,
// at most 254 bytes, and normalizing it again changes nothing.
func FuzzNormalizeEmail(f *testing.F) {
	for _, s := range []string{"Ada@Example.org", " bob@example.com ", "a@b", "a@b.", "\"q\"@example.com", "Ada <ada@example.org>", "x@[127.0.0.1]", "ü@exämple.de", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := NormalizeEmail(s)
		if err != nil {
			return
		}
		if n != strings.ToLower(n) || n != strings.TrimSpace(n) || len(n) > 254 || !strings.Contains(n, "@") {
			t.Fatalf("%q normalized to %q", s, n)
		}
		if again, err := NormalizeEmail(n); err != nil || again != n {
			t.Fatalf("%q → %q → %q (%v)", s, n, again, err)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestParseDateRange(t *testing.T) {
	for _, c := range []struct {
		in any
		ok bool
	}{
		{"2025-01-31", true},
		{json.Number("253402300799999"), true}, // 9999-12-31T23:59:59.999Z
		{json.Number("253402300800000"), false},
		{"9999999999999999", false},
		{json.Number("1e300"), false},
		{json.Number("NaN"), false},
		{-62167219200000.0, true}, // 0000-01-01
		{-62167219200001.0, false},
	} {
		if _, ok := ParseDate(c.in); ok != c.ok {
			t.Errorf("ParseDate(%#v) ok=%v, want %v", c.in, ok, c.ok)
		}
	}
}
