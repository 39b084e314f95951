package lmx

import (
	"slices"
	"strings"
)

// NodeType says what a Node holds.
type NodeType uint8

const (
	// ElementNode is an LMX tag such as <Paragraph>; Tag, Attrs and
	// Children are set.
	ElementNode NodeType = iota + 1
	// TextNode is literal text; Text is set (already entity-decoded).
	TextNode
	// VarNode is a variable reference such as {contact.firstName}; Var is set.
	VarNode
)

// Pos is a 1-based line and column (in characters) in the LMX source.
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

// Attr is one attribute as written in the source, after range checks:
// values that were out of range were clamped, invalid ones removed (and
// reported as a Warning).
type Attr struct {
	Name  string
	Value string
}

// Node is one node of a parsed LMX document.
type Node struct {
	Type     NodeType
	Tag      string // element name, e.g. "Paragraph"
	Attrs    []Attr
	Children []*Node
	Text     string   // TextNode
	Var      Variable // VarNode
	Pos      Pos

	// ComponentBody is set by Expand on <Component> nodes without local
	// children: the blocks of the resolved component.
	ComponentBody []*Node
}

// Attr returns the value of the named attribute.
func (n *Node) Attr(name string) (string, bool) {
	for i := range n.Attrs {
		if n.Attrs[i].Name == name {
			return n.Attrs[i].Value, true
		}
	}
	return "", false
}

// AttrOr returns the value of the named attribute or def.
func (n *Node) AttrOr(name, def string) string {
	if v, ok := n.Attr(name); ok {
		return v
	}
	return def
}

func (n *Node) setAttr(name, value string) {
	for i := range n.Attrs {
		if n.Attrs[i].Name == name {
			n.Attrs[i].Value = value
			return
		}
	}
	n.Attrs = append(n.Attrs, Attr{Name: name, Value: value})
}

func (n *Node) delAttr(name string) {
	n.Attrs = slices.DeleteFunc(n.Attrs, func(a Attr) bool { return a.Name == name })
}

// Blocks returns the block children to render for n: the local children,
// or for an expanded <Component> without local children, the component body.
func (n *Node) Blocks() []*Node {
	if n.Tag == "Component" && len(n.Children) == 0 {
		return n.ComponentBody
	}
	return n.Children
}

// TextContent returns the text of n and its descendants with variables
// written back as {namespace.name} and whitespace collapsed; it is what a
// person sees as a button or link label.
func (n *Node) TextContent() string {
	var b strings.Builder
	var walk func(*Node)
	walk = func(m *Node) {
		switch m.Type {
		case TextNode:
			b.WriteString(m.Text)
		case VarNode:
			b.WriteString(m.Var.Placeholder())
		case ElementNode:
			if m.Tag == "Br" {
				b.WriteByte(' ')
			}
			for _, c := range m.Children {
				walk(c)
			}
		}
	}
	walk(n)
	return collapseSpace(b.String())
}

// collapseSpace trims s and collapses runs of ASCII whitespace (not
// no-break spaces) into one space.
func collapseSpace(s string) string {
	var b strings.Builder
	space := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			if !space {
				b.WriteByte(' ')
				space = true
			}
			continue
		}
		b.WriteByte(c)
		space = false
	}
	return strings.TrimRight(b.String(), " ")
}

// Doc is a parsed LMX document.
type Doc struct {
	// Style is the top-level <Style/> element, or nil.
	Style *Node
	// Blocks are the top-level blocks in order, without Style.
	Blocks []*Node
}

// Walk calls fn for every element node of d in document order, including
// the bodies of expanded components. If fn returns false the children of
// that node are skipped.
func (d *Doc) Walk(fn func(n *Node) bool) {
	if d == nil {
		return
	}
	var walk func(ns []*Node)
	walk = func(ns []*Node) {
		for _, n := range ns {
			if n.Type != ElementNode {
				continue
			}
			if !fn(n) {
				continue
			}
			walk(n.Children)
			if len(n.Children) == 0 {
				walk(n.ComponentBody)
			}
		}
	}
	walk(d.Blocks)
}

// Variables returns the variables the document uses, sorted by namespace
// and name, without duplicates. It includes variables in dynamic
// attributes (Button/Link/Section href, Image alt/href/dynamicSrc) and, for
// a document returned by Expand, in the expanded components. A
// transactional email's dataVariables are the Names of the entries whose
// Namespace is NamespaceData.
func (d *Doc) Variables() []Variable {
	var vs []Variable
	d.Walk(func(n *Node) bool {
		for _, c := range n.Children {
			if c.Type == VarNode {
				vs = append(vs, c.Var)
			}
		}
		for _, a := range n.Attrs {
			if isDynamicAttr(n.Tag, a.Name) {
				vs = append(vs, VariablesIn(a.Value)...)
			}
		}
		return true
	})
	return sortVars(vs)
}

func sortVars(vs []Variable) []Variable {
	slices.SortFunc(vs, func(a, b Variable) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return slices.Compact(vs)
}
