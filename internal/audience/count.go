package audience

import (
	"strconv"
	"strings"

	"github.com/lasso-mail/lasso/internal/db"
)

// Counting. A predicate over contacts (Where) costs one probe per contact
// and condition, which over a million contacts is seconds. Count instead
// works with sets of contact ids read straight from covering indexes:
//
//   - a custom property condition is the set of contact_values rows that
//     pass the test (index range scan on (team, name, value, contact));
//   - an activity condition is the set of sends rows that pass it (index
//     range scan on (team, source, contact, …));
//   - built-in and opt-in conditions stay a predicate over contacts (the
//     "residual").
//
// "all" is P1 ∩ P2 … \ N1 \ N2 … (positive and negated sets), restricted by
// the residual with a join on contacts; without a positive set it is
// |R| − |(N1 ∪ N2 …) ∩ R|. "any" is |U| − |all of the negated conditions|
// (De Morgan). The count is a signed sum of such queries, run as one
// SELECT of scalar subqueries; the |U| terms cancel for an "any" of
// positive sets, which is then one UNION.
//
// The property test checks these counts against the in-memory evaluator
// as well.

// countTerm is coef × (SELECT count(*) …).
type countTerm struct {
	coef int
	sql  string
}

type counter struct {
	b     *sqlBuilder
	terms []countTerm
}

func (k *counter) add(coef int, sql string) {
	if coef == 0 {
		return
	}
	for i := range k.terms {
		if k.terms[i].sql == sql {
			k.terms[i].coef += coef
			return
		}
	}
	k.terms = append(k.terms, countTerm{coef, sql})
}

func (k *counter) universe() string {
	return "SELECT count(*) FROM contacts c WHERE c.team_id = " + k.b.team
}

// set renders a value or activity atom (ignoring its negation) as a
// SELECT of contact ids named id; ghost reports that the set may hold ids
// of contacts that no longer exist (sends outlive their contacts).
func (k *counter) set(a *atom) (sql string, ghost bool) {
	b := k.b
	if a.kind == kActivity {
		return "SELECT DISTINCT s.contact_id AS id FROM sends s WHERE s.team_id = " + b.team + " AND " + b.activity(a) + " AND s.contact_id IS NOT NULL", true
	}
	var t string
	switch a.test {
	case tStrEq, tStrContains, tStrNonEmpty:
		t = b.strTest(a, "v.str")
	default:
		t = b.numTest(a, "v.num", false)
	}
	return "SELECT v.contact_id AS id FROM contact_values v WHERE v.team_id = " + b.team + " AND v.name = " + b.arg(a.field) + " AND " + t, false
}

// all adds coef × |atoms combined with AND|.
func (k *counter) all(coef int, atoms []atom) {
	for i := range atoms {
		if atoms[i].kind == kConst && atoms[i].neg {
			return // false: nothing matches
		}
	}
	var pos, neg, residual []string
	ghost := false
	for i := range atoms {
		a := &atoms[i]
		switch a.kind {
		case kValue, kActivity:
			s, g := k.set(a)
			if a.neg {
				neg = append(neg, s)
			} else {
				pos = append(pos, s)
				ghost = ghost || g
			}
		case kConst:
		default:
			residual = append(residual, k.b.atom(a))
		}
	}
	res := strings.Join(residual, " AND ")
	if len(pos) > 0 {
		q := strings.Join(pos, " INTERSECT ")
		for _, n := range neg {
			q += " EXCEPT " + n
		}
		q = "SELECT count(*) FROM (" + q + ") x"
		if res != "" {
			q += " JOIN contacts c ON c.id = x.id WHERE c.team_id = " + k.b.team + " AND " + res
		} else if ghost {
			q += " JOIN contacts c ON c.id = x.id"
		}
		k.add(coef, q)
		return
	}
	// No positive set: all of R minus those in any negated set.
	if res != "" {
		k.add(coef, k.universe()+" AND "+res)
	} else {
		k.add(coef, k.universe())
	}
	if len(neg) == 0 {
		return
	}
	u := "SELECT count(*) FROM (" + strings.Join(neg, " UNION ") + ") x JOIN contacts c ON c.id = x.id"
	if res != "" {
		u += " WHERE c.team_id = " + k.b.team + " AND " + res
	}
	k.add(-coef, u)
}

// CountSQL renders a query returning the number of the team's contacts that
// match the plan, with the team id at $1 and args from $2.
func (p *Plan) CountSQL(dialect db.Dialect) (string, []any) {
	k := &counter{b: &sqlBuilder{dialect: dialect, team: "$1", next: 2}}
	switch {
	case len(p.atoms) == 0:
		k.add(1, k.universe())
	case !p.any:
		k.all(1, p.atoms)
	default:
		// any(A) = U − all(¬A).
		flipped := make([]atom, len(p.atoms))
		for i, a := range p.atoms {
			a.neg = !a.neg
			flipped[i] = a
		}
		k.add(1, k.universe())
		k.all(-1, flipped)
	}
	var parts []string
	for _, t := range k.terms {
		switch {
		case t.coef == 0:
			continue
		case t.coef == 1:
			parts = append(parts, "+ ("+t.sql+")")
		case t.coef == -1:
			parts = append(parts, "- ("+t.sql+")")
		default:
			parts = append(parts, "+ "+strconv.Itoa(t.coef)+" * ("+t.sql+")")
		}
	}
	if len(parts) == 0 {
		return "SELECT count(*) FROM contacts c WHERE c.team_id = $1 AND 1=0", nil
	}
	return "SELECT 0 " + strings.Join(parts, " "), k.b.args
}
