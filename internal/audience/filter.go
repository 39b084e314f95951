// Package audience owns who an email goes to: the audience filter model of
// the contract (§11: property, opt-in and activity conditions combined with
// all/any), its two evaluators, and audience segments (§5.13, §6.6).
//
// A filter is evaluated in two places that must always agree: compiled to a
// SQL predicate over contacts (segments, campaign audiences, counts; both
// SQLite and PostgreSQL) and evaluated in memory for one contact (workflow
// filter nodes). Both evaluators are driven by the same Plan (Prepare), which
// reduces every condition to an atom with one meaning; a property-based test
// checks that the SQL and Go renderings of every atom agree on real
// databases.
//
// # Semantics
//
// Strings (built-in string columns and string properties):
//   - A missing value is the empty string: "empty" is true when there is no
//     value or it is "", notEquals "x" and notContains "x" are true when
//     there is no value, equals "" is the same as empty, contains "" is true.
//   - equals and contains are case-insensitive for ASCII letters only (A–Z
//     fold to a–z; every other character compares exactly). This is what
//     SQLite's lower() does, PostgreSQL gets translate(x, 'A…Z', 'a…z') and Go
//     gets foldASCII, so the three agree whatever the database locale.
//   - contains is a plain substring test (instr/strpos), so % and _ are
//     ordinary characters.
//
// Numbers, booleans and dates (custom properties; stored in contact_values.num,
// dates as unix milliseconds):
//   - A missing value matches no comparison: equals, greaterThan, lessThan,
//     after, before and between are false; their negations are true.
//   - notEquals is exactly "not equals" (true when missing), isFalse is
//     exactly "not isTrue" (a missing boolean is false).
//   - between is inclusive at both ends.
//   - empty/dateEmpty are true when there is no value; notEmpty/dateNotEmpty
//     are their negations.
//
// The operator "any" places no constraint (matches every contact), on every
// type. A filter with no conditions also matches every contact (a workflow
// branch's default path); Validate and segments still require one.
//
// Activity: "sent" means a send of the target to the contact that was
// delivered (sent_at set, or status delivered/opened/clicked); "opened" and
// "clicked" mean opened_at / clicked_at set. Targets: campaign (source_type
// campaign, source_id), workflow (source_type loop, source_id), workflowEmail
// (the send's email_message_id). negate: true means "did not".
//
// OptIn: status equals the contact's opt_in_status; null matches contacts
// without one.
package audience

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/lasso-mail/lasso/internal/apperr"
)

// Match values.
const (
	MatchAll = "all"
	MatchAny = "any"
)

// Condition types.
const (
	TypeProperty = "property"
	TypeOptIn    = "optIn"
	TypeActivity = "activity"
)

// Activity actions and targets.
const (
	ActionSent    = "sent"
	ActionOpened  = "opened"
	ActionClicked = "clicked"

	TargetCampaign      = "campaign"
	TargetWorkflow      = "workflow"
	TargetWorkflowEmail = "workflowEmail"
)

// Property operators (§11).
const (
	OpAny          = "any"
	OpContains     = "contains"
	OpNotContains  = "notContains"
	OpEquals       = "equals"
	OpNotEquals    = "notEquals"
	OpGreaterThan  = "greaterThan"
	OpLessThan     = "lessThan"
	OpIsTrue       = "isTrue"
	OpIsFalse      = "isFalse"
	OpEmpty        = "empty"
	OpNotEmpty     = "notEmpty"
	OpDateEmpty    = "dateEmpty"
	OpDateNotEmpty = "dateNotEmpty"
	OpAfter        = "after"
	OpBefore       = "before"
	OpBetween      = "between"
)

// Property types (the same names as package contacts).
const (
	String  = "string"
	Number  = "number"
	Boolean = "boolean"
	Date    = "date"
)

// MaxConditions is the most conditions a filter may have. Loops has a limit
// it does not publish; this one is ours.
const MaxConditions = 50

// operators lists the operators each property type accepts.
var operators = map[string][]string{
	String:  {OpAny, OpContains, OpNotContains, OpEquals, OpNotEquals, OpEmpty, OpNotEmpty},
	Number:  {OpAny, OpEquals, OpNotEquals, OpGreaterThan, OpLessThan, OpEmpty, OpNotEmpty},
	Boolean: {OpAny, OpIsTrue, OpIsFalse, OpEmpty, OpNotEmpty},
	Date:    {OpAny, OpAfter, OpBefore, OpBetween, OpDateEmpty, OpDateNotEmpty, OpEmpty, OpNotEmpty},
}

var allOperators = []string{OpAny, OpContains, OpNotContains, OpEquals, OpNotEquals, OpGreaterThan, OpLessThan,
	OpIsTrue, OpIsFalse, OpEmpty, OpNotEmpty, OpDateEmpty, OpDateNotEmpty, OpAfter, OpBefore, OpBetween}

// Filter is an AudienceFilter (§11): a flat list of conditions combined with
// AND (match "all") or OR (match "any").
type Filter struct {
	Match      string      `json:"match"`
	Conditions []Condition `json:"conditions"`
}

// Condition is one leaf of a filter. Type selects which fields mean
// something:
//
//   - property: Key, Operator and Value (the raw JSON value; nil when absent);
//   - optIn: Status (nil is the JSON null);
//   - activity: Action, Negate, Target, ID.
type Condition struct {
	Type string

	Key      string
	Operator string
	Value    json.RawMessage

	Status *string

	Action string
	Negate bool
	Target string
	ID     string
}

// Property returns a property condition; value is marshalled to JSON (nil
// means no value).
func Property(key, operator string, value any) Condition {
	c := Condition{Type: TypeProperty, Key: key, Operator: operator}
	if value != nil {
		c.Value, _ = json.Marshal(value)
	}
	return c
}

// OptIn returns an opt-in condition; nil status is null.
func OptIn(status *string) Condition { return Condition{Type: TypeOptIn, Status: status} }

// Activity returns an activity condition.
func Activity(action, target, id string, negate bool) Condition {
	return Condition{Type: TypeActivity, Action: action, Target: target, ID: id, Negate: negate}
}

// MarshalJSON writes the contract's shape of the condition's type.
func (c Condition) MarshalJSON() ([]byte, error) {
	switch c.Type {
	case TypeProperty:
		m := struct {
			Type     string          `json:"type"`
			Key      string          `json:"key"`
			Operator string          `json:"operator"`
			Value    json.RawMessage `json:"value,omitempty"`
		}{c.Type, c.Key, c.Operator, nil}
		if len(c.Value) > 0 {
			var b bytes.Buffer
			if err := json.Compact(&b, c.Value); err != nil {
				return nil, err
			}
			m.Value = b.Bytes()
		}
		return json.Marshal(m)
	case TypeOptIn:
		return json.Marshal(struct {
			Type   string  `json:"type"`
			Status *string `json:"status"`
		}{c.Type, c.Status})
	case TypeActivity:
		return json.Marshal(struct {
			Type   string `json:"type"`
			Action string `json:"action"`
			Negate bool   `json:"negate"`
			Target string `json:"target"`
			ID     string `json:"id"`
		}{c.Type, c.Action, c.Negate, c.Target, c.ID})
	}
	return nil, fmt.Errorf("audience: cannot marshal condition of type %q", c.Type)
}

// MarshalJSON writes {"match", "conditions"} (conditions never null).
func (f Filter) MarshalJSON() ([]byte, error) {
	conds := f.Conditions
	if conds == nil {
		conds = []Condition{}
	}
	return json.Marshal(struct {
		Match      string      `json:"match"`
		Conditions []Condition `json:"conditions"`
	}{f.Match, conds})
}

// UnmarshalJSON parses a filter strictly: unknown keys, types, operators,
// actions and targets are apperr.Invalid errors naming the offending field.
// Property values are checked against the property's type by Validate.
func (f *Filter) UnmarshalJSON(data []byte) error {
	g, err := ParseFilter(data)
	if err != nil {
		return err
	}
	*f = g
	return nil
}

func invalid(format string, args ...any) error { return apperr.New(apperr.Invalid, format, args...) }

// ParseFilter parses a filter from JSON (see Filter.UnmarshalJSON).
func ParseFilter(data []byte) (Filter, error) {
	var f Filter
	obj, err := object(data, "filter")
	if err != nil {
		return f, err
	}
	for k := range obj {
		if k != "match" && k != "conditions" {
			return f, invalid("filter: unknown key %q (allowed: match, conditions).", k)
		}
	}
	raw, ok := obj["match"]
	if !ok || isNull(raw) {
		return f, invalid(`filter.match is required ("all" or "any").`)
	}
	if err := json.Unmarshal(raw, &f.Match); err != nil || (f.Match != MatchAll && f.Match != MatchAny) {
		return f, invalid(`filter.match must be "all" or "any".`)
	}
	raw, ok = obj["conditions"]
	if !ok || isNull(raw) {
		return f, invalid("filter.conditions is required (an array of conditions).")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return f, invalid("filter.conditions must be an array of conditions.")
	}
	f.Conditions = make([]Condition, 0, len(items))
	for i, item := range items {
		c, err := parseCondition(item, fmt.Sprintf("filter.conditions[%d]", i))
		if err != nil {
			return f, err
		}
		f.Conditions = append(f.Conditions, c)
	}
	return f, nil
}

// FilterFromValue parses a filter already decoded into Go values (a
// map[string]any from a request body).
func FilterFromValue(v any) (Filter, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return Filter{}, invalid("filter must be an object.")
	}
	return ParseFilter(data)
}

func object(data []byte, where string) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return nil, invalid("%s must be an object.", where)
	}
	return obj, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

var conditionKeys = map[string][]string{
	TypeProperty: {"type", "key", "operator", "value"},
	TypeOptIn:    {"type", "status"},
	TypeActivity: {"type", "action", "negate", "target", "id"},
}

func parseCondition(data []byte, at string) (Condition, error) {
	var c Condition
	obj, err := object(data, at)
	if err != nil {
		return c, err
	}
	if err := str(obj, "type", at, &c.Type); err != nil {
		return c, err
	}
	keys, ok := conditionKeys[c.Type]
	if !ok {
		return c, invalid("%s.type %q is not supported (use property, optIn or activity).", at, c.Type)
	}
	for k := range obj {
		if !slices.Contains(keys, k) {
			return c, invalid("%s: unknown key %q for a %s condition (allowed: %s).", at, k, c.Type, strings.Join(keys, ", "))
		}
	}
	switch c.Type {
	case TypeProperty:
		if err := str(obj, "key", at, &c.Key); err != nil {
			return c, err
		}
		if err := str(obj, "operator", at, &c.Operator); err != nil {
			return c, err
		}
		if !slices.Contains(allOperators, c.Operator) {
			return c, invalid("%s.operator %q is not supported (use one of %s).", at, c.Operator, strings.Join(allOperators, ", "))
		}
		if v, ok := obj["value"]; ok && !isNull(v) {
			var b bytes.Buffer
			if err := json.Compact(&b, v); err != nil {
				return c, invalid("%s.value is not valid JSON.", at)
			}
			c.Value = b.Bytes()
		}
	case TypeOptIn:
		raw, ok := obj["status"]
		if !ok {
			return c, invalid(`%s.status is required ("accepted", "pending", "rejected" or null).`, at)
		}
		if !isNull(raw) {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil || !validOptIn(s) {
				return c, invalid(`%s.status must be "accepted", "pending", "rejected" or null.`, at)
			}
			c.Status = &s
		}
	case TypeActivity:
		if err := str(obj, "action", at, &c.Action); err != nil {
			return c, err
		}
		if c.Action != ActionSent && c.Action != ActionOpened && c.Action != ActionClicked {
			return c, invalid(`%s.action must be "sent", "opened" or "clicked".`, at)
		}
		raw, ok := obj["negate"]
		if !ok || json.Unmarshal(raw, &c.Negate) != nil {
			return c, invalid("%s.negate is required (true or false).", at)
		}
		if err := str(obj, "target", at, &c.Target); err != nil {
			return c, err
		}
		if c.Target != TargetCampaign && c.Target != TargetWorkflow && c.Target != TargetWorkflowEmail {
			return c, invalid(`%s.target must be "campaign", "workflow" or "workflowEmail".`, at)
		}
		if err := str(obj, "id", at, &c.ID); err != nil {
			return c, err
		}
	}
	return c, nil
}

// str reads a required non-empty string field.
func str(obj map[string]json.RawMessage, key, at string, dst *string) error {
	raw, ok := obj[key]
	if !ok || isNull(raw) {
		return invalid("%s.%s is required.", at, key)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return invalid("%s.%s must be a string.", at, key)
	}
	if *dst == "" {
		return invalid("%s.%s must not be empty.", at, key)
	}
	return nil
}

func validOptIn(s string) bool { return s == "accepted" || s == "pending" || s == "rejected" }

// Builtins are the contact's default properties a filter may name, with
// their types (§15). The rest of a filter's keys must be custom properties.
var Builtins = map[string]string{
	"email":      String,
	"firstName":  String,
	"lastName":   String,
	"notes":      String,
	"source":     String,
	"userGroup":  String,
	"userId":     String,
	"subscribed": Boolean,
	"createdAt":  Date,
}

// Validate checks f against a team's custom property types (name → type):
// match, 1 to MaxConditions conditions, every property key known, every
// operator allowed for the property's type and every value of the right
// kind. Errors are apperr.Invalid with a message naming the condition.
// Whether activity ids exist is the Service's business (ValidateIDs).
func Validate(f Filter, props map[string]string) error {
	if len(f.Conditions) == 0 {
		return invalid("The filter needs at least one condition.")
	}
	_, err := Prepare(f, props)
	return err
}
