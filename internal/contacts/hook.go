package contacts

import (
	"context"
	"sort"

	"github.com/lasso-mail/lasso/internal/db"
)

// Change is what one upsert did to a contact, announced to the ChangeHook
// inside the transaction that did it (workflow triggers, issue 5).
type Change struct {
	TeamID    string `json:"teamId"`
	ContactID string `json:"contactId"`
	// Created: the contact did not exist before.
	Created bool `json:"created,omitempty"`
	// Props holds the properties of an existing contact whose value changed:
	// [old, new] in API form (string, float64, bool, or an ISO date string
	// for dates; nil when empty). Not filled for a created contact.
	Props map[string][2]any `json:"props,omitempty"`
	// Types is the type of each property of Props (string, number, boolean,
	// date).
	Types map[string]string `json:"types,omitempty"`
	// ListsAdded are the mailing lists the contact joined.
	ListsAdded []string `json:"listsAdded,omitempty"`
	// Source is the contact's source after the change.
	Source string `json:"source,omitempty"`
}

// ChangeHook receives contact changes inside the transaction that made
// them; an error rolls the change back.
type ChangeHook interface {
	ContactChanged(ctx context.Context, tx db.Tx, ch Change) error
}

// SetChangeHook wires the contact-change hook (optional).
func (s *Service) SetChangeHook(h ChangeHook) { s.hook = h }

// hooked reports whether an upsert of in is announced to the hook.
func (s *Service) hooked(in Upsert) bool { return s.hook != nil && !in.NoTriggers }

// prevValues reads the stored values of the custom properties an upsert of
// an existing contact is about to write or clear (nil when not hooked).
func (s *Service) prevValues(ctx context.Context, tx db.Tx, in Upsert, created bool, id string, custom map[string]stored, clear map[string]bool) (map[string]stored, error) {
	if !s.hooked(in) || created || len(custom)+len(clear) == 0 {
		return nil, nil
	}
	all, err := storedValues(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	prev := map[string]stored{}
	for name, st := range all {
		if _, ok := custom[name]; ok || clear[name] {
			prev[name] = st
		}
	}
	return prev, nil
}

// storedValues reads every custom property value of a contact, by name.
func storedValues(ctx context.Context, q db.Querier, contactID string) (map[string]stored, error) {
	out := map[string]stored{}
	rows, err := q.Query(ctx, `SELECT name, str, num FROM contact_values WHERE contact_id = $1`, contactID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var st stored
		if err := rows.Scan(&name, &st.str, &st.num); err != nil {
			return nil, err
		}
		out[name] = st
	}
	return out, rows.Err()
}

func optVal(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// announceChange tells the hook what an upsert did; nothing when the upsert
// changed nothing a trigger watches.
func (s *Service) announceChange(ctx context.Context, tx db.Tx, teamID, id string, in Upsert, created bool,
	old, cur row, prev, custom map[string]stored, clear map[string]bool, defs map[string]string, added []string) error {
	if !s.hooked(in) {
		return nil
	}
	ch := Change{TeamID: teamID, ContactID: id, Created: created, ListsAdded: added, Source: cur.source}
	if !created {
		ch.Props, ch.Types = map[string][2]any{}, map[string]string{}
		put := func(k, typ string, o, n any) {
			if o != n {
				ch.Props[k], ch.Types[k] = [2]any{o, n}, typ
			}
		}
		put("email", TypeString, old.email, cur.email)
		put("userId", TypeString, optVal(old.userID), optVal(cur.userID))
		put("firstName", TypeString, optVal(old.firstName), optVal(cur.firstName))
		put("lastName", TypeString, optVal(old.lastName), optVal(cur.lastName))
		put("notes", TypeString, optVal(old.notes), optVal(cur.notes))
		put("source", TypeString, old.source, cur.source)
		put("userGroup", TypeString, old.userGroup, cur.userGroup)
		put("subscribed", TypeBoolean, old.subscribed, cur.subscribed)
		for k, st := range custom {
			typ := defs[k]
			put(k, typ, prev[k].value(typ), st.value(typ))
		}
		for k := range clear {
			typ := defs[k]
			put(k, typ, prev[k].value(typ), nil)
		}
		if len(ch.Props) == 0 && len(added) == 0 {
			return nil
		}
	}
	sort.Strings(ch.ListsAdded)
	return s.hook.ContactChanged(ctx, tx, ch)
}
