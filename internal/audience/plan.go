package audience

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/db"
)

// Plan is a validated filter reduced to atoms, each of which has exactly one
// SQL rendering and one Go rendering. Compile and Match both go through it,
// which is what makes them agree.
type Plan struct {
	any   bool // match "any" (OR); otherwise AND
	atoms []atom
}

type atomKind int

const (
	kConst    atomKind = iota // always true (neg: always false)
	kBuiltin                  // a column of contacts
	kValue                    // a row in contact_values
	kActivity                 // a row in sends
	kOptIn                    // contacts.opt_in_status
)

// testOp is a test on one value. String tests see "" for a missing string;
// every string test is false on "" so that, for custom properties, "no row"
// and "row with str = ”" behave the same.
type testOp int

const (
	tStrEq       testOp = iota // fold(s) = fold(arg)   (arg ≠ "")
	tStrContains               // fold(arg) in fold(s)  (arg ≠ "")
	tStrNonEmpty               // s ≠ ""
	tNumEq
	tNumGt
	tNumLt
	tNumBetween // a ≤ n ≤ b
	tNumPresent // there is a value
	tNumTrue    // n ≠ 0 (booleans)
)

type atom struct {
	kind  atomKind
	neg   bool
	field string // builtin name or custom property name
	test  testOp
	s     string  // folded string argument
	a, b  float64 // numeric arguments

	status *string // kOptIn

	action, target, id string // kActivity
}

// builtinColumns maps built-in properties to contacts columns.
var builtinColumns = map[string]string{
	"email":      "email",
	"firstName":  "first_name",
	"lastName":   "last_name",
	"notes":      "notes",
	"source":     "source",
	"userGroup":  "user_group",
	"userId":     "user_id",
	"subscribed": "subscribed",
	"createdAt":  "created_at",
}

// Prepare validates f against the team's custom property types (name →
// type) and reduces it to a Plan. A filter with no conditions is accepted
// and matches everyone. Errors are apperr.Invalid.
func Prepare(f Filter, props map[string]string) (*Plan, error) {
	if f.Match != MatchAll && f.Match != MatchAny {
		return nil, invalid(`filter.match must be "all" or "any".`)
	}
	if len(f.Conditions) > MaxConditions {
		return nil, invalid("The filter has too many conditions (at most %d).", MaxConditions)
	}
	p := &Plan{any: f.Match == MatchAny, atoms: make([]atom, 0, len(f.Conditions))}
	for i, c := range f.Conditions {
		a, err := prepareCondition(c, props, fmt.Sprintf("filter.conditions[%d]", i))
		if err != nil {
			return nil, err
		}
		p.atoms = append(p.atoms, a)
	}
	return p, nil
}

func prepareCondition(c Condition, props map[string]string, at string) (atom, error) {
	switch c.Type {
	case TypeOptIn:
		if c.Status != nil && !validOptIn(*c.Status) {
			return atom{}, invalid(`%s.status must be "accepted", "pending", "rejected" or null.`, at)
		}
		return atom{kind: kOptIn, status: c.Status}, nil
	case TypeActivity:
		if c.Action != ActionSent && c.Action != ActionOpened && c.Action != ActionClicked {
			return atom{}, invalid(`%s.action must be "sent", "opened" or "clicked".`, at)
		}
		if c.Target != TargetCampaign && c.Target != TargetWorkflow && c.Target != TargetWorkflowEmail {
			return atom{}, invalid(`%s.target must be "campaign", "workflow" or "workflowEmail".`, at)
		}
		if c.ID == "" {
			return atom{}, invalid("%s.id is required.", at)
		}
		return atom{kind: kActivity, neg: c.Negate, action: c.Action, target: c.Target, id: c.ID}, nil
	case TypeProperty:
		return prepareProperty(c, props, at)
	}
	return atom{}, invalid("%s.type %q is not supported (use property, optIn or activity).", at, c.Type)
}

func prepareProperty(c Condition, props map[string]string, at string) (atom, error) {
	typ, builtin := Builtins[c.Key]
	if !builtin {
		var ok bool
		if typ, ok = props[c.Key]; !ok {
			return atom{}, invalid("%s.key: %q is not a contact property of this team.", at, c.Key)
		}
	}
	allowed, ok := operators[typ]
	if !ok {
		return atom{}, invalid("%s.key: property %q has an unknown type %q.", at, c.Key, typ)
	}
	if !slices.Contains(allowed, c.Operator) {
		return atom{}, invalid("%s.operator %q does not apply to %s (a %s property); use one of %s.",
			at, c.Operator, c.Key, typ, strings.Join(allowed, ", "))
	}
	a := atom{kind: kValue, field: c.Key}
	if builtin {
		a.kind = kBuiltin
	}
	always := func(v bool) atom { return atom{kind: kConst, neg: !v} }

	switch c.Operator {
	case OpAny:
		return always(true), nil
	case OpEmpty, OpNotEmpty, OpDateEmpty, OpDateNotEmpty:
		a.neg = c.Operator == OpEmpty || c.Operator == OpDateEmpty
		if typ == String {
			a.test = tStrNonEmpty
		} else {
			a.test = tNumPresent
		}
		return a, nil
	case OpIsTrue, OpIsFalse:
		a.test, a.neg = tNumTrue, c.Operator == OpIsFalse
		return a, nil
	}

	if len(c.Value) == 0 {
		return atom{}, invalid("%s.value is required for the operator %q.", at, c.Operator)
	}
	switch typ {
	case String:
		s, err := stringValue(c.Value)
		if err != nil {
			return atom{}, invalid("%s.value must be a string.", at)
		}
		s = foldASCII(s)
		switch c.Operator {
		case OpEquals, OpNotEquals:
			a.neg = c.Operator == OpNotEquals
			if s == "" { // equals "" is empty
				a.test, a.neg = tStrNonEmpty, !a.neg
				return a, nil
			}
			a.test, a.s = tStrEq, s
		case OpContains, OpNotContains:
			if s == "" {
				return always(c.Operator == OpContains), nil
			}
			a.test, a.s, a.neg = tStrContains, s, c.Operator == OpNotContains
		}
		return a, nil
	case Number:
		n, err := numberValue(c.Value)
		if err != nil {
			return atom{}, invalid("%s.value must be a number.", at)
		}
		a.a = n
		switch c.Operator {
		case OpEquals, OpNotEquals:
			a.test, a.neg = tNumEq, c.Operator == OpNotEquals
		case OpGreaterThan:
			a.test = tNumGt
		case OpLessThan:
			a.test = tNumLt
		}
		return a, nil
	case Date:
		if c.Operator == OpBetween {
			from, to, err := betweenValue(c.Value)
			if err != nil {
				return atom{}, invalid(`%s.value must be {"from": date, "to": date} (ISO 8601 or Unix milliseconds): %s`, at, err.Error())
			}
			if from > to {
				return atom{}, invalid("%s.value: from must not be after to.", at)
			}
			a.test, a.a, a.b = tNumBetween, from, to
			return a, nil
		}
		ms, err := dateValue(c.Value)
		if err != nil {
			return atom{}, invalid("%s.value must be a date (ISO 8601 like 2025-06-29T07:47:39.370Z, or Unix milliseconds).", at)
		}
		a.a = ms
		if c.Operator == OpAfter {
			a.test = tNumGt
		} else {
			a.test = tNumLt
		}
		return a, nil
	}
	return atom{}, invalid("%s.operator %q does not apply to %s.", at, c.Operator, c.Key)
}

func decodeValue(raw json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

func stringValue(raw json.RawMessage) (string, error) {
	v, err := decodeValue(raw)
	if err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", fmt.Errorf("not a string")
}

func numberValue(raw json.RawMessage) (float64, error) {
	v, err := decodeValue(raw)
	if err != nil {
		return 0, err
	}
	var f float64
	switch x := v.(type) {
	case json.Number:
		f, err = x.Float64()
	case string:
		f, err = strconv.ParseFloat(strings.TrimSpace(x), 64)
	default:
		return 0, fmt.Errorf("not a number")
	}
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("not a number")
	}
	return f, nil
}

func dateValue(raw json.RawMessage) (float64, error) {
	v, err := decodeValue(raw)
	if err != nil {
		return 0, err
	}
	t, ok := contacts.ParseDate(v)
	if !ok {
		return 0, fmt.Errorf("not a date")
	}
	return float64(t.UnixMilli()), nil
}

func betweenValue(raw json.RawMessage) (from, to float64, err error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return 0, 0, fmt.Errorf("not an object")
	}
	for k := range obj {
		if k != "from" && k != "to" {
			return 0, 0, fmt.Errorf("unknown key %q", k)
		}
	}
	f, okf := obj["from"]
	t, okt := obj["to"]
	if !okf || !okt {
		return 0, 0, fmt.Errorf("both from and to are required")
	}
	if from, err = dateValue(f); err != nil {
		return 0, 0, fmt.Errorf("from is not a date")
	}
	if to, err = dateValue(t); err != nil {
		return 0, 0, fmt.Errorf("to is not a date")
	}
	return from, to, nil
}

// foldASCII lowers A–Z and leaves every other byte alone (see the package
// comment: this is what both databases do).
func foldASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// ---------------------------------------------------------------------------
// In-memory evaluation.

// Match reports whether the contact matches the plan.
func (p *Plan) Match(c *ContactFacts) bool {
	if len(p.atoms) == 0 {
		return true
	}
	for i := range p.atoms {
		m := p.atoms[i].match(c)
		if p.any && m {
			return true
		}
		if !p.any && !m {
			return false
		}
	}
	return !p.any
}

func (a *atom) match(c *ContactFacts) bool {
	return a.positive(c) != a.neg
}

func (a *atom) positive(c *ContactFacts) bool {
	switch a.kind {
	case kConst:
		return true
	case kOptIn:
		if a.status == nil {
			return c.OptInStatus == nil
		}
		return c.OptInStatus != nil && *c.OptInStatus == *a.status
	case kActivity:
		return c.Did != nil && c.Did(a.action, a.target, a.id)
	case kBuiltin:
		switch a.field {
		case "subscribed":
			return a.test == tNumPresent || c.Subscribed
		case "createdAt":
			return a.numTest(float64(c.CreatedAt))
		}
		return a.strTest(c.builtinString(a.field))
	case kValue:
		v, ok := c.Custom[a.field]
		if !ok {
			return false
		}
		switch a.test {
		case tStrEq, tStrContains, tStrNonEmpty:
			return v.Str != nil && a.strTest(*v.Str)
		}
		return v.Num != nil && a.numTest(*v.Num)
	}
	return false
}

func (a *atom) strTest(s string) bool {
	switch a.test {
	case tStrEq:
		return foldASCII(s) == a.s
	case tStrContains:
		return strings.Contains(foldASCII(s), a.s)
	case tStrNonEmpty:
		return s != ""
	}
	return false
}

func (a *atom) numTest(n float64) bool {
	switch a.test {
	case tNumEq:
		return n == a.a
	case tNumGt:
		return n > a.a
	case tNumLt:
		return n < a.a
	case tNumBetween:
		return a.a <= n && n <= a.b
	case tNumPresent:
		return true
	case tNumTrue:
		return n != 0
	}
	return false
}

// ---------------------------------------------------------------------------
// SQL.

// sqlBuilder renders atoms with $N placeholders: the team id is bound by the
// caller at $team, arguments are numbered from next.
type sqlBuilder struct {
	dialect db.Dialect
	team    string // "$N" of the team id
	next    int
	args    []any
}

func (b *sqlBuilder) arg(v any) string {
	b.args = append(b.args, v)
	b.next++
	return "$" + strconv.Itoa(b.next-1)
}

const upperASCII, lowerASCII = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"

func (b *sqlBuilder) fold(e string) string {
	if b.dialect == db.Postgres {
		return "translate(" + e + ", '" + upperASCII + "', '" + lowerASCII + "')"
	}
	return "lower(" + e + ")"
}

// Where renders the plan as a predicate over "contacts c". The caller binds
// the team id at $teamParam; the returned args are bound from $firstArg on.
func (p *Plan) Where(dialect db.Dialect, teamParam, firstArg int) (string, []any) {
	b := &sqlBuilder{dialect: dialect, team: "$" + strconv.Itoa(teamParam), next: firstArg}
	if len(p.atoms) == 0 {
		return "1=1", nil
	}
	parts := make([]string, 0, len(p.atoms))
	for i := range p.atoms {
		parts = append(parts, b.atom(&p.atoms[i]))
	}
	op := " AND "
	if p.any {
		op = " OR "
	}
	return "(" + strings.Join(parts, op) + ")", b.args
}

func (b *sqlBuilder) atom(a *atom) string {
	pos := b.positive(a)
	if a.neg {
		return "NOT " + pos
	}
	return pos
}

// positive renders the atom without its negation, always as a
// parenthesised expression that is never NULL.
func (b *sqlBuilder) positive(a *atom) string {
	switch a.kind {
	case kConst:
		return "(1=1)"
	case kOptIn:
		if a.status == nil {
			return "(c.opt_in_status IS NULL)"
		}
		return "(c.opt_in_status IS NOT NULL AND c.opt_in_status = " + b.arg(*a.status) + ")"
	case kActivity:
		return "EXISTS (SELECT 1 FROM sends s WHERE s.team_id = " + b.team + " AND s.contact_id = c.id AND " + b.activity(a) + ")"
	case kBuiltin:
		col := "c." + builtinColumns[a.field]
		switch a.field {
		case "subscribed":
			if a.test == tNumPresent {
				return "(1=1)"
			}
			return "(" + col + ")"
		case "createdAt":
			return "(" + b.numTest(a, col, true) + ")"
		}
		return "(" + b.strTest(a, "COALESCE("+col+", '')") + ")"
	case kValue:
		var t string
		switch a.test {
		case tStrEq, tStrContains, tStrNonEmpty:
			t = b.strTest(a, "v.str")
		default:
			t = b.numTest(a, "v.num", false)
		}
		return "EXISTS (SELECT 1 FROM contact_values v WHERE v.contact_id = c.id AND v.team_id = " + b.team +
			" AND v.name = " + b.arg(a.field) + " AND " + t + ")"
	}
	panic("audience: unknown atom")
}

// activity renders the sends predicate of an activity atom (alias s).
func (b *sqlBuilder) activity(a *atom) string {
	var t string
	switch a.target {
	case TargetCampaign:
		t = "s.source_type = 'campaign' AND s.source_id = " + b.arg(a.id)
	case TargetWorkflow:
		t = "s.source_type = 'loop' AND s.source_id = " + b.arg(a.id)
	case TargetWorkflowEmail:
		t = "s.email_message_id = " + b.arg(a.id)
	}
	switch a.action {
	case ActionSent:
		t += " AND (s.sent_at IS NOT NULL OR s.status IN ('delivered', 'opened', 'clicked'))"
	case ActionOpened:
		t += " AND s.opened_at IS NOT NULL"
	case ActionClicked:
		t += " AND s.clicked_at IS NOT NULL"
	}
	return t
}

func (b *sqlBuilder) strTest(a *atom, e string) string {
	switch a.test {
	case tStrEq:
		return b.fold(e) + " = " + b.arg(a.s)
	case tStrContains:
		if b.dialect == db.Postgres {
			return "strpos(" + b.fold(e) + ", " + b.arg(a.s) + ") > 0"
		}
		return "instr(" + b.fold(e) + ", " + b.arg(a.s) + ") > 0"
	case tStrNonEmpty:
		return e + " <> ''"
	}
	panic("audience: not a string test")
}

// numTest renders a numeric test of e; integer binds int64 arguments (for
// BIGINT columns).
func (b *sqlBuilder) numTest(a *atom, e string, integer bool) string {
	num := func(f float64) string {
		if integer {
			return b.arg(int64(f))
		}
		return b.arg(f)
	}
	switch a.test {
	case tNumEq:
		return e + " = " + num(a.a)
	case tNumGt:
		return e + " > " + num(a.a)
	case tNumLt:
		return e + " < " + num(a.a)
	case tNumBetween:
		return e + " >= " + num(a.a) + " AND " + e + " <= " + num(a.b)
	case tNumPresent:
		return e + " IS NOT NULL"
	case tNumTrue:
		return e + " <> 0"
	}
	panic("audience: not a numeric test")
}

// Compile validates f against the team's custom property types and renders
// it as a SQL predicate over "contacts c" of the dialect. The caller binds
// the team id at $teamParam and appends args, which are numbered
// $teamParam+1, $teamParam+2, … So with the team id at $1:
//
//	where, args, err := audience.Compile(f, d.Dialect(), props, 1)
//	d.QueryRow(ctx, "SELECT count(*) FROM contacts c WHERE c.team_id = $1 AND "+where, append([]any{teamID}, args...)...)
func Compile(f Filter, dialect db.Dialect, props map[string]string, teamParam int) (string, []any, error) {
	p, err := Prepare(f, props)
	if err != nil {
		return "", nil, err
	}
	where, args := p.Where(dialect, teamParam, teamParam+1)
	return where, args, nil
}

// Match reports whether one contact matches f. The property types are taken
// from c.Custom; a filter that does not validate against them matches no one.
func Match(f Filter, c ContactFacts) bool {
	props := make(map[string]string, len(c.Custom))
	for k, v := range c.Custom {
		props[k] = v.Type
	}
	p, err := Prepare(f, props)
	if err != nil {
		return false
	}
	return p.Match(&c)
}
