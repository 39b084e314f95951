package lmx

import (
	"fmt"
	"strings"
)

// ComponentResolver returns the LMX body of a team component by id.
type ComponentResolver interface {
	Component(id string) (lmx string, ok bool)
}

// ComponentMap is a ComponentResolver backed by a map of id → LMX body.
type ComponentMap map[string]string

// Component implements ComponentResolver.
func (m ComponentMap) Component(id string) (string, bool) {
	s, ok := m[id]
	return s, ok
}

// maxExpandedNodes bounds the size of a document after expansion.
const maxExpandedNodes = 200_000

// maxComponentDepth bounds component references inside component bodies.
const maxComponentDepth = 8

// Expand resolves every <Component componentId="…"/> reference of doc
// that has no local override children: it parses the component body and
// stores its blocks in the node's ComponentBody (doc is modified).
// Component bodies may themselves reference components; cycles and
// unknown ids are reported as a *SyntaxError positioned at the reference.
// After Expand, doc.Variables() includes the components' variables.
func Expand(doc *Doc, r ComponentResolver) error {
	e := &expander{r: r, cache: map[string]*Doc{}, expanded: map[string]bool{}}
	e.blocks(doc.Blocks, nil)
	if len(e.errs) == 0 {
		if w := e.weight(doc.Blocks, map[string]int{}); w > maxExpandedNodes {
			e.errs = append(e.errs, Diagnostic{Line: 1, Col: 1, Rule: RuleComponentCycle,
				Msg: fmt.Sprintf("components expand to more than %d elements", maxExpandedNodes)})
		}
	}
	if len(e.errs) > 0 {
		return &SyntaxError{Diagnostic: e.errs[0], Errors: e.errs}
	}
	return nil
}

type expander struct {
	r        ComponentResolver
	cache    map[string]*Doc
	expanded map[string]bool
	uses     int
	errs     []Diagnostic
}

// maxComponentUses bounds the number of component references expanded in
// one document (each reference renders the body again).
const maxComponentUses = 2000

func (e *expander) blocks(ns []*Node, stack []string) {
	for _, n := range ns {
		if n.Type != ElementNode {
			continue
		}
		if n.Tag == "Component" && len(n.Children) == 0 {
			e.component(n, stack)
			continue
		}
		e.blocks(n.Children, stack)
	}
}

func (e *expander) fail(n *Node, rule, format string, args ...any) {
	e.errs = append(e.errs, Diagnostic{Line: n.Pos.Line, Col: n.Pos.Col, Rule: rule, Msg: fmt.Sprintf(format, args...)})
}

func (e *expander) component(n *Node, stack []string) {
	id, _ := n.Attr("componentId")
	for i, s := range stack {
		if s == id {
			e.fail(n, RuleComponentCycle, "component %q includes itself (%s)", id, strings.Join(append(stack[i:], id), " → "))
			return
		}
	}
	if len(stack) >= maxComponentDepth {
		e.fail(n, RuleComponentCycle, "components are nested more than %d deep", maxComponentDepth)
		return
	}
	body, ok := e.cache[id]
	if !ok {
		var src string
		if e.r != nil {
			src, ok = e.r.Component(id)
		}
		if !ok {
			e.fail(n, RuleUnknownComponent, "unknown component %q", id)
			e.cache[id] = nil
			return
		}
		doc, _, err := ParseComponent(src)
		if err != nil {
			e.fail(n, RuleUnknownComponent, "component %q cannot be compiled: %v", id, err)
			e.cache[id] = nil
			return
		}
		e.cache[id] = doc
		body = doc
	}
	if body == nil {
		return
	}
	e.uses++
	if e.uses > maxComponentUses {
		if e.uses == maxComponentUses+1 {
			e.fail(n, RuleComponentCycle, "more than %d component references", maxComponentUses)
		}
		return
	}
	n.ComponentBody = body.Blocks
	if !e.expanded[id] {
		e.expanded[id] = true
		e.blocks(body.Blocks, append(stack, id))
	}
}

// weight counts the nodes of ns after expansion, memoised per component.
func (e *expander) weight(ns []*Node, memo map[string]int) int {
	total := 0
	for _, n := range ns {
		total++
		if n.Type != ElementNode {
			continue
		}
		total += e.weight(n.Children, memo)
		if n.Tag == "Component" && len(n.Children) == 0 {
			id, _ := n.Attr("componentId")
			w, ok := memo[id]
			if !ok {
				memo[id] = maxExpandedNodes + 1 // guards against cycles
				w = e.weight(n.ComponentBody, memo)
				memo[id] = w
			}
			total += w
		}
		if total > maxExpandedNodes {
			return total
		}
	}
	return total
}
