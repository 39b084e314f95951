package lmx

import (
	"strings"
)

// Variable namespaces (§9.3).
const (
	NamespaceContact = "contact" // contact property; campaigns and workflows
	NamespaceEvent   = "event"   // triggering event's property; workflows
	NamespaceData    = "data"    // transactional data variable
	NamespaceSystem  = "system"  // system values such as unsubscribe_link
)

// maxVarLen bounds the text between braces that is considered a variable.
const maxVarLen = 256

// Variable is one {namespace.name} reference.
type Variable struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// String returns "namespace.name".
func (v Variable) String() string { return v.Namespace + "." + v.Name }

// Placeholder returns the variable as written in LMX: "{namespace.name}".
func (v Variable) Placeholder() string { return "{" + v.Namespace + "." + v.Name + "}" }

func knownNamespace(ns string) bool {
	switch ns {
	case NamespaceContact, NamespaceEvent, NamespaceData, NamespaceSystem:
		return true
	}
	return false
}

// segment is a piece of text: literal, or a variable.
type segment struct {
	text  string
	v     Variable
	isVar bool
}

// splitVars splits s into literal text and {namespace.name} variables. It
// returns messages for brace expressions that look like a mistaken
// variable (unprefixed names, legacy tags, inline fallbacks).
func splitVars(s string) (segs []segment, msgs []string) {
	lit := 0
	for i := 0; i < len(s); {
		if s[i] != '{' {
			i++
			continue
		}
		end := -1
		for j := i + 1; j < len(s) && j-i <= maxVarLen; j++ {
			c := s[j]
			if c == '}' {
				end = j
				break
			}
			if c == '{' || c == '\n' || c == '\r' {
				break
			}
		}
		if end < 0 {
			i++
			continue
		}
		inner := s[i+1 : end]
		v, ok, msg := parseVarInner(inner)
		if msg != "" {
			msgs = append(msgs, msg)
		}
		if !ok {
			i = end + 1
			continue
		}
		if lit < i {
			segs = append(segs, segment{text: s[lit:i]})
		}
		segs = append(segs, segment{v: v, isVar: true})
		i = end + 1
		lit = i
	}
	if lit < len(s) {
		segs = append(segs, segment{text: s[lit:]})
	}
	return segs, msgs
}

// parseVarInner interprets the text between braces.
func parseVarInner(inner string) (v Variable, ok bool, msg string) {
	dot := strings.IndexByte(inner, '.')
	if dot < 0 {
		switch {
		case strings.HasPrefix(inner, "DATA_VARIABLE:"):
			name := strings.TrimPrefix(inner, "DATA_VARIABLE:")
			return v, false, "legacy tag {" + inner + "} is not LMX; write {data." + name + "}"
		case isIdent(inner):
			return v, false, "variable {" + inner + "} has no namespace; write {contact." + inner + "}, {event." + inner + "} or {data." + inner + "}"
		}
		return v, false, ""
	}
	ns, name := inner[:dot], inner[dot+1:]
	if !knownNamespace(ns) {
		if isIdent(ns) && name != "" && !strings.ContainsAny(name, " \t\"'") {
			return v, false, "unknown variable namespace in {" + inner + "}; use contact, event, data or system"
		}
		return v, false, ""
	}
	if name == "" {
		return v, false, "variable {" + inner + "} has no name"
	}
	if k := strings.IndexAny(name, "|:?"); k >= 0 && k > 0 {
		msg = "LMX has no inline fallback syntax: {" + inner + "} is read as {" + ns + "." + strings.TrimSpace(name[:k]) + "}; set a fallback on the email message instead"
		name = strings.TrimSpace(name[:k])
	}
	return Variable{Namespace: ns, Name: name}, true, msg
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && (c >= '0' && c <= '9' || c == '-') {
			continue
		}
		return false
	}
	return true
}

// ValidName reports whether name is a valid variable name for the data
// namespace (and a sensible one for the others): letters, digits, '_'
// and '-' only (§14).
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			continue
		}
		return false
	}
	return true
}

// VariablesIn returns the variables referenced in s (a subject line, a
// preview text, an attribute value…) in order of appearance, with
// duplicates.
func VariablesIn(s string) []Variable {
	if strings.IndexByte(s, '{') < 0 {
		return nil
	}
	segs, _ := splitVars(s)
	var vs []Variable
	for _, sg := range segs {
		if sg.isVar {
			vs = append(vs, sg.v)
		}
	}
	return vs
}

// Values are the per-recipient variable values, by namespace. Callers
// convert numbers and booleans to strings before rendering.
type Values struct {
	Contact map[string]string
	Event   map[string]string
	Data    map[string]string
	System  map[string]string
}

// Fallbacks are the email message's fallback maps (§9.4): used when a
// variable has no value for a recipient.
type Fallbacks struct {
	Contact map[string]string
	Event   map[string]string
	Data    map[string]string
}

// Lookup returns the value of v: the recipient's value if present, else
// the fallback, else "" and ok=false.
func Lookup(v Variable, vals *Values, fb *Fallbacks) (string, bool) {
	var m, f map[string]string
	switch v.Namespace {
	case NamespaceContact:
		if vals != nil {
			m = vals.Contact
		}
		if fb != nil {
			f = fb.Contact
		}
	case NamespaceEvent:
		if vals != nil {
			m = vals.Event
		}
		if fb != nil {
			f = fb.Event
		}
	case NamespaceData:
		if vals != nil {
			m = vals.Data
		}
		if fb != nil {
			f = fb.Data
		}
	case NamespaceSystem:
		if vals != nil {
			m = vals.System
		}
	}
	if s, ok := m[v.Name]; ok {
		return s, true
	}
	if s, ok := f[v.Name]; ok {
		return s, true
	}
	return "", false
}

// Missing returns the variables of vs that have neither a value nor a
// fallback. Callers use it to apply §9.4: skip a campaign or workflow
// recipient, or reject a transactional send.
func Missing(vs []Variable, vals *Values, fb *Fallbacks) []Variable {
	var out []Variable
	for _, v := range vs {
		if _, ok := Lookup(v, vals, fb); !ok {
			out = append(out, v)
		}
	}
	return out
}

// Interpolate replaces the variables in s (an email settings field such as
// the subject or from name) with their values, without any escaping.
func Interpolate(s string, vals *Values, fb *Fallbacks) string {
	if strings.IndexByte(s, '{') < 0 {
		return s
	}
	segs, _ := splitVars(s)
	var b strings.Builder
	for _, sg := range segs {
		if sg.isVar {
			v, _ := Lookup(sg.v, vals, fb)
			b.WriteString(v)
		} else {
			b.WriteString(sg.text)
		}
	}
	return b.String()
}
