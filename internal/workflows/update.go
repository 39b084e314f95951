package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/audience"
	"github.com/lasso-mail/lasso/internal/db"
)

// ErrNotImplemented is the 501 of node updates the contract does not
// support (SendEmailAction, BranchNode, BlankTrigger, ExitAction).
var ErrNotImplemented = apperr.New(apperr.NotImplemented, "This node update is not implemented.")

// payload keys allowed per (target) node type.
var payloadKeys = map[string][]string{
	TypeSignupTrigger:          {"typeName"},
	TypeEventTrigger:           {"typeName", "eventPatternId", "eventName", "reEligible"},
	TypeContactPropertyTrigger: {"typeName", "contactPropertyQuery", "reEligible"},
	TypeAddToListTrigger:       {"typeName", "reEligible"},
	TypeAudienceFilter:         {"audienceSegmentId", "audienceFilter", "appliesDownstream"},
	TypeTimer:                  {"amount", "unit"},
	TypeExperiment:             {"samplingRate"},
	TypeVariant:                {"isControl"},
}

// MaxTimerMinutes bounds a TimerAction's wait (one year).
const MaxTimerMinutes = 365 * 24 * 60

// UpdateNode applies an update payload (§10.4) to a node. The fields
// allowed depend on the node's type; a trigger may change type with
// payload.typeName. The payload is the decoded JSON object (numbers as
// json.Number or float64).
func (s *Service) UpdateNode(ctx context.Context, teamID, wfID, nodeID string, expected *string, payload map[string]any) (NodeResult, error) {
	var res NodeResult
	_, n, err := s.GetNode(ctx, teamID, wfID, nodeID)
	if err != nil {
		return res, err
	}
	if payload == nil {
		return res, apperr.New(apperr.Invalid, "payload is required.")
	}
	apply, err := s.parsePayload(ctx, teamID, n, payload)
	if err != nil {
		return res, err
	}
	w, err := s.mutate(ctx, teamID, wfID, expected, true, func(tx db.Tx, w *Workflow) error {
		cur := w.Nodes[nodeID]
		if cur == nil {
			return errNodeNotFound
		}
		if cur.Type != n.Type {
			return errStale
		}
		res.Node = cur
		return apply(w, cur)
	})
	res.Workflow = w
	return res, err
}

type applyFunc func(w *Workflow, n *Node) error

func (s *Service) parsePayload(ctx context.Context, teamID string, n *Node, p map[string]any) (applyFunc, error) {
	target := n.Type
	if IsTrigger(n.Type) {
		if v, ok := p["typeName"]; ok {
			t, _ := v.(string)
			if !IsTrigger(t) || t == TypeBlankTrigger {
				return nil, apperr.New(apperr.Invalid, "payload.typeName must be SignupTrigger, EventTrigger, ContactPropertyTrigger or AddToListTrigger.")
			}
			target = t
		}
	}
	allowed, ok := payloadKeys[target]
	if !ok {
		return nil, ErrNotImplemented
	}
	if len(p) == 0 {
		return nil, apperr.New(apperr.Invalid, "payload must have at least one property.")
	}
	for k := range p {
		if !slices.Contains(allowed, k) {
			return nil, apperr.New(apperr.Invalid, "payload.%s is not allowed for a %s node.", k, target)
		}
	}
	var steps []applyFunc
	step := func(f applyFunc) { steps = append(steps, f) }
	if target != n.Type {
		step(func(w *Workflow, n *Node) error {
			n.Type, n.Payload = target, Payload{}
			return nil
		})
	}
	if v, ok := p["reEligible"]; ok {
		b, ok := v.(bool)
		if !ok {
			return nil, apperr.New(apperr.Invalid, "payload.reEligible must be a boolean.")
		}
		step(func(w *Workflow, n *Node) error { n.ReEligible = b; return nil })
	}
	switch target {
	case TypeEventTrigger:
		_, hasPattern := p["eventPatternId"]
		_, hasName := p["eventName"]
		if hasPattern && hasName {
			return nil, apperr.New(apperr.Invalid, "Send payload.eventPatternId or payload.eventName, not both.")
		}
		var name, pattern *string
		if hasPattern && p["eventPatternId"] != nil {
			id, ok := p["eventPatternId"].(string)
			if !ok {
				return nil, apperr.New(apperr.Invalid, "payload.eventPatternId must be a string or null.")
			}
			var nm string
			err := s.db.QueryRow(ctx, `SELECT name FROM event_patterns WHERE id = $1 AND team_id = $2`, id, teamID).Scan(&nm)
			if errors.Is(err, db.ErrNoRows) {
				return nil, apperr.New(apperr.Invalid, "Event pattern %q not found.", id)
			}
			if err != nil {
				return nil, err
			}
			name, pattern = &nm, &id
		}
		if hasName && p["eventName"] != nil {
			nm, ok := p["eventName"].(string)
			if !ok || strings.TrimSpace(nm) == "" {
				return nil, apperr.New(apperr.Invalid, "payload.eventName must be a non-empty string or null.")
			}
			name = &nm
			var id string
			err := s.db.QueryRow(ctx, `SELECT id FROM event_patterns WHERE name = $1 AND team_id = $2`, nm, teamID).Scan(&id)
			if err == nil {
				pattern = &id
			} else if !errors.Is(err, db.ErrNoRows) {
				return nil, err
			}
		}
		if hasPattern || hasName {
			step(func(w *Workflow, n *Node) error { n.EventName, n.EventPatternID = name, pattern; return nil })
		}
	case TypeContactPropertyTrigger:
		if v, ok := p["contactPropertyQuery"]; ok {
			var q *PropertyQuery
			if v != nil {
				var err error
				if q, err = s.propertyQuery(ctx, teamID, v); err != nil {
					return nil, err
				}
			}
			step(func(w *Workflow, n *Node) error { n.ContactPropertyQuery = q; return nil })
		}
	case TypeAudienceFilter:
		if v, ok := p["appliesDownstream"]; ok {
			b, ok := v.(bool)
			if !ok {
				return nil, apperr.New(apperr.Invalid, "payload.appliesDownstream must be a boolean.")
			}
			step(func(w *Workflow, n *Node) error { n.AppliesDownstream = b; return nil })
		}
		segV, hasSeg := p["audienceSegmentId"]
		if hasSeg {
			var seg *string
			if segV != nil {
				id, ok := segV.(string)
				if !ok {
					return nil, apperr.New(apperr.Invalid, "payload.audienceSegmentId must be a string or null.")
				}
				if s.cfg.Filters == nil {
					return nil, apperr.New(apperr.NotImplemented, "Audience segments are not available.")
				}
				if _, err := s.cfg.Filters.GetSegment(ctx, teamID, id); err != nil {
					return nil, err
				}
				seg = &id
			}
			step(func(w *Workflow, n *Node) error { n.AudienceSegmentID = seg; return nil })
		}
		if v, ok := p["audienceFilter"]; ok {
			var f *audience.Filter
			if v != nil {
				pf, err := audience.FilterFromValue(v)
				if err != nil {
					return nil, err
				}
				if s.cfg.Filters != nil {
					if err := s.cfg.Filters.Validate(ctx, teamID, pf); err != nil {
						return nil, err
					}
				}
				f = &pf
			}
			step(func(w *Workflow, n *Node) error { n.AudienceFilter = f; return nil })
		} else if hasSeg && segV != nil {
			// A segment without a filter replaces the filter (§10.4).
			step(func(w *Workflow, n *Node) error { n.AudienceFilter = nil; return nil })
		}
	case TypeTimer:
		if v, ok := p["amount"]; ok {
			a, ok := intOf(v)
			if !ok || a < 0 {
				return nil, apperr.New(apperr.Invalid, "payload.amount must be a whole number ≥ 0.")
			}
			step(func(w *Workflow, n *Node) error { n.Amount = a; return nil })
		}
		if v, ok := p["unit"]; ok {
			u, _ := v.(string)
			if u != "m" && u != "h" && u != "d" {
				return nil, apperr.New(apperr.Invalid, `payload.unit must be "m", "h" or "d".`)
			}
			step(func(w *Workflow, n *Node) error { n.Unit = u; return nil })
		}
		step(func(w *Workflow, n *Node) error {
			if n.Delay()/60_000 > MaxTimerMinutes {
				return apperr.New(apperr.Invalid, "A timer cannot wait more than 365 days.")
			}
			return nil
		})
	case TypeExperiment:
		r, ok := intOf(p["samplingRate"])
		if !ok || r < 0 || r > 100 {
			return nil, apperr.New(apperr.Invalid, "payload.samplingRate must be a whole number from 0 to 100.")
		}
		step(func(w *Workflow, n *Node) error { n.SamplingRate = r; return nil })
	case TypeVariant:
		b, ok := p["isControl"].(bool)
		if !ok {
			return nil, apperr.New(apperr.Invalid, "payload.isControl must be a boolean.")
		}
		step(func(w *Workflow, n *Node) error {
			if b {
				// The control flag moves from any other variant.
				for _, pid := range w.Parents(n.ID) {
					for _, c := range w.Nodes[pid].Next {
						w.Nodes[c].IsControl = false
					}
				}
			}
			n.IsControl = b
			return nil
		})
	}
	return func(w *Workflow, n *Node) error {
		for _, f := range steps {
			if err := f(w, n); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

func intOf(v any) (int, bool) {
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return 0, false
		}
	case float64:
		f = x
	case int:
		return x, true
	default:
		return 0, false
	}
	if f != math.Trunc(f) || math.Abs(f) > 1e9 {
		return 0, false
	}
	return int(f), true
}

// Operators of contactPropertyQuery by property type (§10.5).
var queryOps = map[string][]string{
	"string":  {"any", "equal", "not_equal", "contains", "not_contains", "empty", "not_empty"},
	"number":  {"any", "greater_than", "less_than", "numeric_equal", "numeric_not_equal", "empty", "not_empty"},
	"boolean": {"any", "true", "false", "empty", "not_empty"},
	"date":    {"any", "empty", "not_empty", "after", "before", "between"},
}

// notTriggerable are properties a Contact-updated trigger cannot watch.
var notTriggerable = map[string]bool{"createdAt": true, "notes": true}

func (s *Service) propertyQuery(ctx context.Context, teamID string, v any) (*PropertyQuery, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, apperr.New(apperr.Invalid, "payload.contactPropertyQuery must be an object or null.")
	}
	for k := range m {
		if k != "key" && k != "is" && k != "was" {
			return nil, apperr.New(apperr.Invalid, "contactPropertyQuery.%s is not allowed.", k)
		}
	}
	key, _ := m["key"].(string)
	if key == "" {
		return nil, apperr.New(apperr.Invalid, "contactPropertyQuery.key is required.")
	}
	typ := ""
	if s.cfg.Properties != nil {
		props, err := s.cfg.Properties.ListProperties(ctx, teamID, false)
		if err != nil {
			return nil, err
		}
		for _, p := range props {
			if p.Key == key {
				typ = p.Type
			}
		}
	}
	if typ == "" || notTriggerable[key] {
		return nil, apperr.New(apperr.Invalid, "contactPropertyQuery.key %q is not a contact property that can trigger a workflow.", key)
	}
	q := &PropertyQuery{Key: key}
	for _, side := range []struct {
		name string
		dst  *Comparison
	}{{"is", &q.Is}, {"was", &q.Was}} {
		c, ok := m[side.name].(map[string]any)
		if !ok {
			return nil, apperr.New(apperr.Invalid, "contactPropertyQuery.%s is required (an object with value and operator).", side.name)
		}
		for k := range c {
			if k != "value" && k != "operator" {
				return nil, apperr.New(apperr.Invalid, "contactPropertyQuery.%s.%s is not allowed.", side.name, k)
			}
		}
		op, _ := c["operator"].(string)
		ops := queryOps[typ]
		if !slices.Contains(ops, op) {
			sorted := slices.Clone(ops)
			sort.Strings(sorted)
			return nil, apperr.New(apperr.Invalid, "contactPropertyQuery.%s.operator must be one of %s for a %s property.", side.name, strings.Join(sorted, ", "), typ)
		}
		if side.name == "is" && op == "empty" && (typ == "number" || typ == "boolean") {
			return nil, apperr.New(apperr.Invalid, "contactPropertyQuery.is cannot use empty for a %s property.", typ)
		}
		val, present := c["value"]
		switch val.(type) {
		case string, json.Number, float64, bool:
		default:
			if !present || val != nil {
				return nil, apperr.New(apperr.Invalid, "contactPropertyQuery.%s.value must be a string, number or boolean.", side.name)
			}
			return nil, apperr.New(apperr.Invalid, "contactPropertyQuery.%s.value is required.", side.name)
		}
		*side.dst = Comparison{Value: val, Operator: op}
	}
	return q, nil
}
