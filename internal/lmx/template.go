package lmx

import (
	"unsafe"
)

type opKind uint8

const (
	opStatic  opKind = iota // arena[a:b]
	opVarHTML               // variable a, HTML-escaped
	opVarRaw                // variable a, as is (plain text)
	opURLHTML               // URL expression a, checked and escaped for an attribute
	opURLRaw                // URL expression a, checked, as is (plain text)
)

type op struct {
	kind opKind
	a, b int32
}

// urlExpr is a URL attribute with variables. The scheme is checked at
// render time when the static prefix does not determine it; an unsafe or
// empty result is replaced by fallback.
type urlExpr struct {
	parts    []segment // variables hold an index into Template.vars in text
	varIdx   []int32   // per part: index into vars, or -1 for literal text
	check    bool      // scheme depends on variable values
	fallback string
}

// program is one output (HTML or text) of a compiled template: static
// bytes in one arena and a list of operations.
type program struct {
	arena     []byte
	ops       []op
	staticLen int
}

// Template is a compiled email body. It is immutable and safe for
// concurrent use; rendering copies static chunks and splices in escaped
// variable values.
type Template struct {
	html, text program
	vars       []Variable
	urls       []urlExpr
}

// Variables returns the variables the rendered output uses (body,
// components, subject in <title>, preview text), sorted and unique.
func (t *Template) Variables() []Variable {
	vs := append([]Variable(nil), t.vars...)
	return sortVars(vs)
}

// StaticSize returns the number of static bytes in the HTML output.
func (t *Template) StaticSize() int { return t.html.staticLen }

// Render renders the HTML and plain-text bodies for one recipient.
// Variables without a value use the fallbacks, then "". vals and fb may
// be nil.
func (t *Template) Render(vals *Values, fb *Fallbacks) (html, text string) {
	h := t.AppendHTML(make([]byte, 0, t.estimate(&t.html, vals, fb)), vals, fb)
	x := t.AppendText(make([]byte, 0, t.estimate(&t.text, vals, fb)), vals, fb)
	// The buffers are never written again, so the strings can share them.
	return unsafe.String(unsafe.SliceData(h), len(h)), unsafe.String(unsafe.SliceData(x), len(x))
}

// AppendHTML appends the HTML body for one recipient to dst. Reusing dst
// across recipients makes rendering allocation-free.
func (t *Template) AppendHTML(dst []byte, vals *Values, fb *Fallbacks) []byte {
	return t.run(dst, &t.html, vals, fb)
}

// AppendText appends the plain-text body for one recipient to dst.
func (t *Template) AppendText(dst []byte, vals *Values, fb *Fallbacks) []byte {
	return t.run(dst, &t.text, vals, fb)
}

func (t *Template) estimate(p *program, vals *Values, fb *Fallbacks) int {
	n := p.staticLen + 64
	for _, o := range p.ops {
		switch o.kind {
		case opVarHTML, opVarRaw:
			v, _ := Lookup(t.vars[o.a], vals, fb)
			n += len(v) + len(v)/2 + 8
		case opURLHTML, opURLRaw:
			u := &t.urls[o.a]
			for i, vi := range u.varIdx {
				if vi >= 0 {
					v, _ := Lookup(t.vars[vi], vals, fb)
					n += len(v) + len(v)/2 + 8
				} else {
					n += len(u.parts[i].text) + 8
				}
			}
			n += len(t.urls[o.a].fallback)
		}
	}
	return n
}

func (t *Template) run(dst []byte, p *program, vals *Values, fb *Fallbacks) []byte {
	for _, o := range p.ops {
		switch o.kind {
		case opStatic:
			dst = append(dst, p.arena[o.a:o.b]...)
		case opVarHTML:
			v, _ := Lookup(t.vars[o.a], vals, fb)
			dst = appendHTML(dst, v)
		case opVarRaw:
			v, _ := Lookup(t.vars[o.a], vals, fb)
			dst = append(dst, v...)
		case opURLHTML, opURLRaw:
			dst = t.appendURL(dst, &t.urls[o.a], vals, fb, o.kind == opURLHTML)
		}
	}
	return dst
}

func (t *Template) appendURL(dst []byte, u *urlExpr, vals *Values, fb *Fallbacks, html bool) []byte {
	empty := true
	var sc schemeScanner
	for i, part := range u.parts {
		s := part.text
		if vi := u.varIdx[i]; vi >= 0 {
			s, _ = Lookup(t.vars[vi], vals, fb)
		}
		if s != "" {
			empty = false
		}
		if u.check {
			sc.feed(s)
		}
	}
	if empty || u.check && !sc.safe() {
		if html {
			return appendHTML(dst, u.fallback)
		}
		return append(dst, u.fallback...)
	}
	for i, part := range u.parts {
		if vi := u.varIdx[i]; vi >= 0 {
			v, _ := Lookup(t.vars[vi], vals, fb)
			dst = appendURLPart(dst, v, html)
		} else if html {
			dst = appendHTML(dst, part.text)
		} else {
			dst = append(dst, part.text...)
		}
	}
	return dst
}

// stream builds a program.
type stream struct {
	p    program
	last byte // last static byte written, 0 if none
	any  bool // anything written
}

func (s *stream) lit(str string) {
	if str == "" {
		return
	}
	s.any = true
	s.last = str[len(str)-1]
	n := len(s.p.ops)
	start := int32(len(s.p.arena))
	s.p.arena = append(s.p.arena, str...)
	s.p.staticLen += len(str)
	if n > 0 && s.p.ops[n-1].kind == opStatic && s.p.ops[n-1].b == start {
		s.p.ops[n-1].b = int32(len(s.p.arena))
		return
	}
	s.p.ops = append(s.p.ops, op{kind: opStatic, a: start, b: int32(len(s.p.arena))})
}

func (s *stream) op(k opKind, idx int) {
	s.any = true
	s.last = 'x'
	s.p.ops = append(s.p.ops, op{kind: k, a: int32(idx)})
}

// appendStream appends the output of o to s.
func (s *stream) appendStream(o *stream) {
	for _, x := range o.p.ops {
		if x.kind == opStatic {
			s.lit(string(o.p.arena[x.a:x.b]))
		} else {
			s.op(x.kind, int(x.a))
		}
	}
}
