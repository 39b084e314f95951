package contacts

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Property types.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeDate    = "date"
)

// ValidType reports whether t is one of the four property types.
func ValidType(t string) bool {
	switch t {
	case TypeString, TypeNumber, TypeBoolean, TypeDate:
		return true
	}
	return false
}

// stored is a typed value as kept in contact_values: str for strings, num
// for numbers, booleans (0/1) and dates (unix ms).
type stored struct {
	str *string
	num *float64
}

// coerce converts a JSON-decoded value (decoded with UseNumber) to the
// property's type. Numbers given as strings, booleans given as "true" and
// dates in any §15 format are accepted; anything else is an error a person
// can act on.
func coerce(name, typ string, v any) (stored, error) {
	bad := func() (stored, error) {
		return stored{}, fmt.Errorf("Invalid value for property %s: expected a %s.", name, typ)
	}
	switch typ {
	case TypeString:
		switch x := v.(type) {
		case string:
			return stored{str: &x}, nil
		case json.Number:
			s := x.String()
			return stored{str: &s}, nil
		case bool:
			s := strconv.FormatBool(x)
			return stored{str: &s}, nil
		}
		return bad()
	case TypeNumber:
		var f float64
		var err error
		switch x := v.(type) {
		case json.Number:
			f, err = x.Float64()
		case string:
			f, err = strconv.ParseFloat(strings.TrimSpace(x), 64)
		default:
			return bad()
		}
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return bad()
		}
		return stored{num: &f}, nil
	case TypeBoolean:
		var b bool
		switch x := v.(type) {
		case bool:
			b = x
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true":
				b = true
			case "false":
				b = false
			default:
				return bad()
			}
		default:
			return bad()
		}
		f := 0.0
		if b {
			f = 1
		}
		return stored{num: &f}, nil
	case TypeDate:
		t, ok := ParseDate(v)
		if !ok {
			return stored{}, fmt.Errorf("Invalid value for property %s: expected a date (Unix milliseconds or YYYY-MM-DD[THH:MM[:SS[.sss]]][±HH:MM]).", name)
		}
		f := float64(t.UnixMilli())
		return stored{num: &f}, nil
	}
	return bad()
}

// value turns a stored value back into its API form.
func (s stored) value(typ string) any {
	switch typ {
	case TypeString:
		if s.str == nil {
			return nil
		}
		return *s.str
	case TypeNumber:
		if s.num == nil {
			return nil
		}
		return *s.num
	case TypeBoolean:
		if s.num == nil {
			return nil
		}
		return *s.num != 0
	case TypeDate:
		if s.num == nil {
			return nil
		}
		return time.UnixMilli(int64(*s.num)).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	return nil
}

var dateLayouts = []string{
	"2006-01-02T15:04:05.000",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05.000",
	"2006-01-02 15:04:05",
	"2006-01-02 15:04",
	"2006-01-02",
}

var offsetRe = regexp.MustCompile(`(Z|[+-]\d{2}:\d{2})$`)

// ParseDate accepts the date inputs of the contract (§15): Unix
// milliseconds as a number or a numeric string, or one of the string
// layouts with an optional ±HH:MM offset (default UTC). A trailing Z and
// more than three fractional digits are tolerated. Dates outside the years
// 0000–9999, which the API could not print back, are refused.
func ParseDate(v any) (time.Time, bool) {
	t, ok := parseDate(v)
	if !ok || t.Year() < 0 || t.Year() > 9999 {
		return time.Time{}, false
	}
	return t, true
}

// maxDateMillis bounds numeric dates before they become an int64 (beyond
// it the conversion of a float is undefined); the year check does the rest.
const maxDateMillis = 1 << 53

func millis(f float64) (time.Time, bool) {
	if math.IsNaN(f) || f > maxDateMillis || f < -maxDateMillis {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(f)).UTC(), true
}

func parseDate(v any) (time.Time, bool) {
	switch x := v.(type) {
	case json.Number:
		if ms, err := x.Int64(); err == nil {
			return time.UnixMilli(ms).UTC(), true
		}
		f, err := x.Float64()
		if err != nil {
			return time.Time{}, false
		}
		return millis(f)
	case float64:
		return millis(x)
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return time.Time{}, false
		}
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.UnixMilli(ms).UTC(), true
		}
		loc := time.UTC
		if m := offsetRe.FindString(s); m != "" && len(s) > 10 {
			s = strings.TrimSuffix(s, m)
			if m != "Z" {
				h, _ := strconv.Atoi(m[1:3])
				mi, _ := strconv.Atoi(m[4:6])
				off := h*3600 + mi*60
				if m[0] == '-' {
					off = -off
				}
				loc = time.FixedZone("", off)
			}
		}
		// Allow more fractional digits than three.
		if i := strings.IndexByte(s, '.'); i > 0 && len(s)-i-1 > 3 {
			s = s[:i+4]
		}
		for _, l := range dateLayouts {
			if t, err := time.ParseInLocation(l, s, loc); err == nil {
				return t.UTC(), true
			}
		}
	}
	return time.Time{}, false
}

var propNameRe = regexp.MustCompile(`^[a-z][A-Za-z0-9]*$`)

// Label returns the human form of a camelCase name: favoriteColor → "Favorite Color".
func Label(name string) string {
	var b strings.Builder
	for i, r := range name {
		if i == 0 {
			b.WriteRune(unicode.ToUpper(r))
			continue
		}
		if unicode.IsUpper(r) {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}
