package lmx

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// ThemeStyles are a theme's styles (§6.4). Every field is optional; the
// JSON names are the API's and the same as the LMX <Style/> attributes, so
// the HTTP layer can decode request bodies straight into this type.
type ThemeStyles struct {
	BackgroundColor       *string  `json:"backgroundColor,omitempty"`
	BackgroundXPadding    *float64 `json:"backgroundXPadding,omitempty"`
	BackgroundYPadding    *float64 `json:"backgroundYPadding,omitempty"`
	BodyColor             *string  `json:"bodyColor,omitempty"`
	BodyXPadding          *float64 `json:"bodyXPadding,omitempty"`
	BodyYPadding          *float64 `json:"bodyYPadding,omitempty"`
	BodyFontFamily        *string  `json:"bodyFontFamily,omitempty"`
	BodyFontCategory      *string  `json:"bodyFontCategory,omitempty"`
	BorderColor           *string  `json:"borderColor,omitempty"`
	BorderWidth           *float64 `json:"borderWidth,omitempty"`
	BorderRadius          *float64 `json:"borderRadius,omitempty"`
	ButtonBodyColor       *string  `json:"buttonBodyColor,omitempty"`
	ButtonBodyXPadding    *float64 `json:"buttonBodyXPadding,omitempty"`
	ButtonBodyYPadding    *float64 `json:"buttonBodyYPadding,omitempty"`
	ButtonBorderColor     *string  `json:"buttonBorderColor,omitempty"`
	ButtonBorderWidth     *float64 `json:"buttonBorderWidth,omitempty"`
	ButtonBorderRadius    *float64 `json:"buttonBorderRadius,omitempty"`
	ButtonTextColor       *string  `json:"buttonTextColor,omitempty"`
	ButtonTextFormat      *float64 `json:"buttonTextFormat,omitempty"`
	ButtonTextFontSize    *float64 `json:"buttonTextFontSize,omitempty"`
	DividerColor          *string  `json:"dividerColor,omitempty"`
	DividerBorderWidth    *float64 `json:"dividerBorderWidth,omitempty"`
	TextBaseColor         *string  `json:"textBaseColor,omitempty"`
	TextBaseFontSize      *float64 `json:"textBaseFontSize,omitempty"`
	TextBaseLineHeight    *float64 `json:"textBaseLineHeight,omitempty"`
	TextBaseLetterSpacing *float64 `json:"textBaseLetterSpacing,omitempty"`
	TextLinkColor         *string  `json:"textLinkColor,omitempty"`
	Heading1Color         *string  `json:"heading1Color,omitempty"`
	Heading1FontSize      *float64 `json:"heading1FontSize,omitempty"`
	Heading1LineHeight    *float64 `json:"heading1LineHeight,omitempty"`
	Heading1LetterSpacing *float64 `json:"heading1LetterSpacing,omitempty"`
	Heading2Color         *string  `json:"heading2Color,omitempty"`
	Heading2FontSize      *float64 `json:"heading2FontSize,omitempty"`
	Heading2LineHeight    *float64 `json:"heading2LineHeight,omitempty"`
	Heading2LetterSpacing *float64 `json:"heading2LetterSpacing,omitempty"`
	Heading3Color         *string  `json:"heading3Color,omitempty"`
	Heading3FontSize      *float64 `json:"heading3FontSize,omitempty"`
	Heading3LineHeight    *float64 `json:"heading3LineHeight,omitempty"`
	Heading3LetterSpacing *float64 `json:"heading3LetterSpacing,omitempty"`
}

type themeFieldKind uint8

const (
	tfColor themeFieldKind = iota
	tfFont
	tfNum
	tfSigned
)

type themeField struct {
	name     string
	kind     themeFieldKind
	def      string
	min, max float64
}

// themeFields lists every style key with its default (the §6.4 example
// theme) and the accepted range.
var themeFields = []themeField{
	{"backgroundColor", tfColor, "#f5f5f5", 0, 0},
	{"backgroundXPadding", tfNum, "24", 0, 200},
	{"backgroundYPadding", tfNum, "24", 0, 200},
	{"bodyColor", tfColor, "#ffffff", 0, 0},
	{"bodyXPadding", tfNum, "24", 0, 200},
	{"bodyYPadding", tfNum, "24", 0, 200},
	{"bodyFontFamily", tfFont, "Helvetica", 0, 0},
	{"bodyFontCategory", tfFont, "sans-serif", 0, 0},
	{"borderColor", tfColor, "#e5e5e5", 0, 0},
	{"borderWidth", tfNum, "1", 0, 16},
	{"borderRadius", tfNum, "8", 0, 999},
	{"buttonBodyColor", tfColor, "#111827", 0, 0},
	{"buttonBodyXPadding", tfNum, "16", 0, 100},
	{"buttonBodyYPadding", tfNum, "12", 0, 100},
	{"buttonBorderColor", tfColor, "#111827", 0, 0},
	{"buttonBorderWidth", tfNum, "0", 0, 16},
	{"buttonBorderRadius", tfNum, "6", 0, 999},
	{"buttonTextColor", tfColor, "#ffffff", 0, 0},
	{"buttonTextFormat", tfNum, "0", 0, 7},
	{"buttonTextFontSize", tfNum, "16", 6, 64},
	{"dividerColor", tfColor, "#e5e5e5", 0, 0},
	{"dividerBorderWidth", tfNum, "1", 1, 16},
	{"textBaseColor", tfColor, "#374151", 0, 0},
	{"textBaseFontSize", tfNum, "16", 8, 64},
	{"textBaseLineHeight", tfNum, "24", 8, 128},
	{"textBaseLetterSpacing", tfSigned, "0", -20, 20},
	{"textLinkColor", tfColor, "#2563eb", 0, 0},
	{"heading1Color", tfColor, "#111827", 0, 0},
	{"heading1FontSize", tfNum, "28", 8, 96},
	{"heading1LineHeight", tfNum, "36", 8, 160},
	{"heading1LetterSpacing", tfSigned, "-0.5", -20, 20},
	{"heading2Color", tfColor, "#111827", 0, 0},
	{"heading2FontSize", tfNum, "22", 8, 96},
	{"heading2LineHeight", tfNum, "30", 8, 160},
	{"heading2LetterSpacing", tfSigned, "-0.25", -20, 20},
	{"heading3Color", tfColor, "#111827", 0, 0},
	{"heading3FontSize", tfNum, "18", 8, 96},
	{"heading3LineHeight", tfNum, "26", 8, 160},
	{"heading3LetterSpacing", tfSigned, "0", -20, 20},
}

var themeFieldIndex = func() map[string]int {
	m := make(map[string]int, len(themeFields))
	for i, f := range themeFields {
		m[f.name] = i
	}
	return m
}()

// DefaultTheme returns the built-in theme: the §6.4 example values.
func DefaultTheme() ThemeStyles {
	var s ThemeStyles
	for _, f := range themeFields {
		s.set(f.name, f.def)
	}
	return s
}

// Merge returns s with every field set in over replacing s's value
// (per-key merge, as for theme updates and <Style/> overrides).
func (s ThemeStyles) Merge(over ThemeStyles) ThemeStyles {
	out := s
	ov := reflect.ValueOf(over)
	rv := reflect.ValueOf(&out).Elem()
	for i := 0; i < ov.NumField(); i++ {
		if !ov.Field(i).IsNil() {
			rv.Field(i).Set(ov.Field(i))
		}
	}
	return out
}

// Map returns the set fields as attribute name → string value.
func (s ThemeStyles) Map() map[string]string {
	m := map[string]string{}
	rv := reflect.ValueOf(s)
	rt := rv.Type()
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		if f.IsNil() {
			continue
		}
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		switch v := f.Elem().Interface().(type) {
		case string:
			m[name] = v
		case float64:
			m[name] = strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return m
}

// set sets the field with JSON name name from a string value; it reports
// false for unknown names or unparsable numbers.
func (s *ThemeStyles) set(name, value string) bool {
	rv := reflect.ValueOf(s).Elem()
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		n, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if n != name {
			continue
		}
		switch rt.Field(i).Type.Elem().Kind() {
		case reflect.String:
			v := value
			rv.Field(i).Set(reflect.ValueOf(&v))
		case reflect.Float64:
			f, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return false
			}
			rv.Field(i).Set(reflect.ValueOf(&f))
		}
		return true
	}
	return false
}

// StylesFromDoc returns the overrides of the document's <Style/> element
// (without themeId), or an empty ThemeStyles.
func StylesFromDoc(d *Doc) ThemeStyles {
	var s ThemeStyles
	if d == nil || d.Style == nil {
		return s
	}
	for _, a := range d.Style.Attrs {
		if a.Name != "themeId" {
			s.set(a.Name, a.Value)
		}
	}
	return s
}

// ThemeID returns the themeId of the document's <Style/>, if any.
func (d *Doc) ThemeID() string {
	if d == nil || d.Style == nil {
		return ""
	}
	return d.Style.AttrOr("themeId", "")
}

// Validate checks every set field: colours must be #rgb or #rrggbb, fonts
// plain names, numbers within range. The HTTP layer uses it to reject
// theme bodies with 400.
func (s ThemeStyles) Validate() error {
	var bad []string
	for name, v := range s.Map() {
		if _, msg := checkThemeValue(name, v); msg != "" {
			bad = append(bad, name+": "+msg)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("invalid theme styles: %s", strings.Join(bad, "; "))
	}
	return nil
}

// checkThemeValue normalises a style value; msg is non-empty when the
// value is unusable (then it is ignored) or was clamped.
func checkThemeValue(name, v string) (string, string) {
	i, ok := themeFieldIndex[name]
	if !ok {
		return "", "unknown style"
	}
	f := themeFields[i]
	switch f.kind {
	case tfColor:
		c, ok := normHex(v)
		if !ok {
			return "", fmt.Sprintf("%q is not a hex colour like #1f2937", v)
		}
		return c, ""
	case tfFont:
		c, ok := normFont(v)
		if !ok {
			return "", fmt.Sprintf("%q is not a font name", v)
		}
		return c, ""
	default:
		n, err := parseNum(v)
		if err != nil {
			return "", fmt.Sprintf("%q is not a number", v)
		}
		if n < f.min || n > f.max {
			return fmtNum(clamp(n, f.min, f.max)), fmt.Sprintf("%s is outside %s–%s", v, fmtNum(f.min), fmtNum(f.max))
		}
		return fmtNum(n), ""
	}
}

// theme is a fully resolved theme used while compiling.
type theme struct {
	v []string // indexed like themeFields
}

func resolveTheme(layers ...ThemeStyles) *theme {
	t := &theme{v: make([]string, len(themeFields))}
	for i, f := range themeFields {
		t.v[i] = f.def
	}
	for _, l := range layers {
		for name, v := range l.Map() {
			i, ok := themeFieldIndex[name]
			if !ok {
				continue
			}
			if c, msg := checkThemeValue(name, v); c != "" || msg == "" {
				t.v[i] = c
			}
		}
	}
	return t
}

func (t *theme) str(name string) string { return t.v[themeFieldIndex[name]] }

func (t *theme) num(name string) float64 {
	n, _ := strconv.ParseFloat(t.v[themeFieldIndex[name]], 64)
	return n
}

// fontStack returns the CSS font-family list for the theme.
func (t *theme) fontStack() string {
	fam := t.str("bodyFontFamily")
	cat := t.str("bodyFontCategory")
	var parts []string
	for _, p := range strings.Split(fam, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if strings.ContainsRune(p, ' ') {
			p = "'" + p + "'"
		}
		parts = append(parts, p)
	}
	switch cat {
	case "serif":
		parts = append(parts, "Georgia", "'Times New Roman'", "serif")
	case "monospace":
		parts = append(parts, "Menlo", "Consolas", "'Courier New'", "monospace")
	case "cursive", "fantasy", "system-ui":
		parts = append(parts, cat)
	default:
		parts = append(parts, "Arial", "sans-serif")
	}
	return strings.Join(parts, ",")
}

func normHex(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 4 && len(s) != 7 || s[0] != '#' {
		return "", false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// normFont accepts a comma-separated font family list of plain names.
func normFont(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 200 {
		return "", false
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == ' ', r == ',', r == '-', r == '_':
			b.WriteRune(r)
		case r == '\'' || r == '"':
			// quotes are dropped; fontStack re-quotes names with spaces
		default:
			return "", false
		}
	}
	return b.String(), b.Len() > 0
}

func parseNum(s string) (float64, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimSuffix(s, "px"), "%")
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if n != n || n > 1e9 || n < -1e9 {
		return 0, fmt.Errorf("out of range")
	}
	return n, nil
}

func clamp(n, lo, hi float64) float64 {
	if n < lo {
		return lo
	}
	if n > hi {
		return hi
	}
	return n
}

func fmtNum(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }
