package contacts

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// BatchResult is what UpsertBatch did with one input: Err is a person-readable
// apperr for a row that was refused (nothing of it was written).
type BatchResult struct {
	Result
	Err error
}

// errBatchFallback aborts a batch transaction so that its rows are retried
// one by one.
var errBatchFallback = errors.New("contacts: batch needs per-row fallback")

// UpsertBatch is Update for many contacts in one transaction (bulk import):
// the same rules, validation and webhooks (contact.created for each new
// contact, list subscriptions…, announced only when the team's endpoint
// wants them), one result per input in order. New contacts identified by
// email take a fast path (property types and lists loaded once per batch);
// anything else runs the ordinary upsert inside a savepoint. If the batch
// meets an unexpected database error (a unique race with a concurrent
// writer, say) it is rolled back and every row is retried alone with Update,
// so a row's outcome never depends on its neighbours.
func (s *Service) UpsertBatch(ctx context.Context, teamID string, ins []Upsert) ([]BatchResult, error) {
	out := make([]BatchResult, len(ins))
	if len(ins) == 0 {
		return out, nil
	}
	// Addresses are checked before the transaction: the writer's time is
	// the import's bottleneck.
	norm := make([]string, len(ins))
	normErr := make([]error, len(ins))
	for i, in := range ins {
		if in.Email != "" {
			norm[i], normErr[i] = NormalizeEmail(in.Email)
		}
	}
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		clear(out)
		b := &batch{s: s, tx: tx, teamID: teamID, lists: map[string]bool{}, now: s.now().UnixMilli(), positional: s.db.Dialect() == db.SQLite}
		var err error
		if b.defs, err = s.propertyTypes(ctx, tx, teamID); err != nil {
			return err
		}
		if err := b.prepare(ctx, norm); err != nil {
			return err
		}
		for i, in := range ins {
			res, err := b.upsert(ctx, in, norm[i], normErr[i])
			if err != nil {
				if _, ok := apperr.Message(err); !ok {
					return fmt.Errorf("%w: %w", errBatchFallback, err)
				}
				out[i].Err = err
				continue
			}
			out[i].Result = res
		}
		return b.flush(ctx)
	})
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// Row by row.
	clear(out)
	for i, in := range ins {
		res, err := s.Update(ctx, teamID, in)
		if err != nil {
			if _, ok := apperr.Message(err); !ok {
				return nil, err
			}
			out[i].Err = err
			continue
		}
		out[i].Result = res
	}
	return out, nil
}

type batch struct {
	s      *Service
	tx     db.Tx
	teamID string
	defs   map[string]string
	lists  map[string]bool // list id → exists
	now    int64
	// existing holds the batch's addresses found in the database up front;
	// pending the new contacts validated but not yet written.
	existing map[string]bool
	pending  []newContact
	inBatch  map[string]bool
	announce bool
	// positional: SQLite, where multi-row statements use ? placeholders.
	positional bool
}

type newContact struct {
	id        string
	r         row
	custom    map[string]stored
	subscribe []string
	trigger   bool // announce to the ChangeHook
}

func (b *batch) upsert(ctx context.Context, in Upsert, email string, err error) (Result, error) {
	if in.Email == "" || in.UserID != "" {
		return b.slow(ctx, in)
	}
	if err != nil {
		return Result{}, err
	}
	if b.existing[email] || b.inBatch[email] {
		return b.slow(ctx, in)
	}

	// A new contact: validate everything before the first write.
	r := row{email: email, source: "API", subscribed: true}
	custom, _, err := applyProps(&r, in, b.defs) // nothing to clear on a new contact
	if err != nil {
		return Result{}, err
	}
	var subscribe []string
	for lid, on := range in.MailingLists {
		ok, err := b.listExists(ctx, lid)
		if err != nil {
			return Result{}, err
		}
		if !ok {
			return Result{}, apperr.New(apperr.Invalid, "Mailing list %s not found.", lid)
		}
		if on {
			subscribe = append(subscribe, lid)
		}
	}
	sort.Strings(subscribe)

	id := ids.New()
	b.inBatch[email] = true
	b.pending = append(b.pending, newContact{id: id, r: r, custom: custom, subscribe: subscribe, trigger: b.s.hooked(in)})
	return Result{ID: id, Created: true}, nil
}

// prepare loads what the whole batch needs: the addresses that exist and
// whether anyone listens to contact webhooks.
func (b *batch) prepare(ctx context.Context, norm []string) error {
	b.existing, b.inBatch = map[string]bool{}, map[string]bool{}
	var emails []any
	for _, e := range norm {
		if e != "" {
			emails = append(emails, e)
		}
	}
	for len(emails) > 0 {
		n := min(len(emails), 50)
		if b.positional {
			n = min(len(emails), 500)
		}
		args := append([]any{b.teamID}, emails[:n]...)
		emails = emails[n:]
		rows, err := b.tx.Query(ctx, `SELECT email FROM contacts WHERE team_id = `+b.ph(1, 1)+` AND email IN (`+b.ph(2, n)+`)`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var e string
			if err := rows.Scan(&e); err != nil {
				rows.Close()
				return err
			}
			b.existing[e] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	// Announce does nothing for a team without an endpoint: skip asking it
	// once per contact then.
	if b.s.announce != nil {
		var one int
		err := b.tx.QueryRow(ctx, `SELECT 1 FROM webhook_endpoints WHERE team_id = $1`, b.teamID).Scan(&one)
		if err != nil && !errors.Is(err, db.ErrNoRows) {
			return err
		}
		b.announce = err == nil
	}
	return nil
}

// flush writes the pending new contacts with multi-row inserts, then
// announces them (contact.created, then each list subscription).
func (b *batch) flush(ctx context.Context) error {
	pending := b.pending
	b.pending = nil
	tx, teamID, now := b.tx, b.teamID, b.now
	chunk, tuples := 16, 40
	if b.positional {
		chunk, tuples = 100, 250
	}
	for start := 0; start < len(pending); start += chunk {
		part := pending[start:min(start+chunk, len(pending))]
		var args []any
		var vals, vargs, lvals, largs = []string{}, []any{}, []string{}, []any{}
		var q strings.Builder
		q.WriteString(`INSERT INTO contacts (id, team_id, email, user_id, first_name, last_name, notes, source, subscribed, user_group, opt_in_status, created_at, updated_at) VALUES `)
		for i, c := range part {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(" + b.ph(len(args)+1, 13) + ")")
			r := c.r
			args = append(args, c.id, teamID, r.email, r.userID, r.firstName, r.lastName, r.notes, r.source, r.subscribed, r.userGroup, r.optIn, now, now)
			for k, st := range c.custom {
				vals = append(vals, "("+b.ph(len(vargs)+1, 5)+")")
				vargs = append(vargs, c.id, teamID, k, st.str, st.num)
			}
			for _, lid := range c.subscribe {
				lvals = append(lvals, "("+b.ph(len(largs)+1, 4)+")")
				largs = append(largs, c.id, lid, teamID, now)
			}
		}
		if _, err := tx.Exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("write contacts: %w", err)
		}
		for len(vals) > 0 {
			n := min(len(vals), tuples)
			if _, err := tx.Exec(ctx, `INSERT INTO contact_values (contact_id, team_id, name, str, num) VALUES `+strings.Join(vals[:n], ", "), vargs[:5*n]...); err != nil {
				return fmt.Errorf("write properties: %w", err)
			}
			vals, vargs = b.renumber(vals[n:], vargs[5*n:], 5)
		}
		for len(lvals) > 0 {
			n := min(len(lvals), tuples)
			if _, err := tx.Exec(ctx, `INSERT INTO contact_lists (contact_id, list_id, team_id, created_at) VALUES `+strings.Join(lvals[:n], ", "), largs[:4*n]...); err != nil {
				return fmt.Errorf("write list memberships: %w", err)
			}
			lvals, largs = b.renumber(lvals[n:], largs[4*n:], 4)
		}
	}
	for _, c := range pending {
		if c.trigger {
			if err := b.s.hook.ContactChanged(ctx, tx, Change{TeamID: teamID, ContactID: c.id, Created: true, ListsAdded: c.subscribe, Source: c.r.source}); err != nil {
				return err
			}
		}
	}
	if !b.announce {
		return nil
	}
	s := b.s
	for _, c := range pending {
		if err := s.emit(ctx, tx, teamID, "contact.created", s.contactPayload(ctx, tx, teamID, c.id, true, nil)); err != nil {
			return err
		}
		for _, lid := range c.subscribe {
			if err := s.emit(ctx, tx, teamID, "contact.mailingList.subscribed", s.listPayload(ctx, tx, teamID, c.id, lid)); err != nil {
				return err
			}
		}
	}
	return nil
}

// renumber rebuilds the placeholders of the remaining value tuples.
func (b *batch) renumber(vals []string, args []any, width int) ([]string, []any) {
	out := make([]string, len(vals))
	for i := range vals {
		out[i] = "(" + b.ph(i*width+1, width) + ")"
	}
	return out, args
}

// ph returns n placeholders from $start. The multi-row statements use
// SQLite's anonymous ? on SQLite: binding $N names costs time quadratic in
// their number there, which would cap the rows per statement.
func (b *batch) ph(start, n int) string {
	if !b.positional {
		return db.Placeholders(start, n)
	}
	return strings.Repeat("?, ", n-1) + "?"
}

func (b *batch) listExists(ctx context.Context, lid string) (bool, error) {
	if ok, seen := b.lists[lid]; seen {
		return ok, nil
	}
	var one int
	err := b.tx.QueryRow(ctx, `SELECT 1 FROM mailing_lists WHERE id = $1 AND team_id = $2`, lid, b.teamID).Scan(&one)
	if err != nil && !errors.Is(err, db.ErrNoRows) {
		return false, err
	}
	b.lists[lid] = err == nil
	return err == nil, nil
}

// slow runs the ordinary upsert inside a savepoint, so that a refused row
// leaves nothing behind (PostgreSQL needs it after a failed statement).
func (b *batch) slow(ctx context.Context, in Upsert) (Result, error) {
	// Earlier new contacts of the batch first: this row may update one.
	if err := b.flush(ctx); err != nil {
		return Result{}, err
	}
	if _, err := b.tx.Exec(ctx, `SAVEPOINT contacts_batch`); err != nil {
		return Result{}, err
	}
	res, err := b.s.upsertTx(ctx, b.tx, b.teamID, in, modeUpsert)
	if err != nil {
		if _, rerr := b.tx.Exec(ctx, `ROLLBACK TO SAVEPOINT contacts_batch`); rerr != nil {
			return Result{}, rerr
		}
	}
	if _, rerr := b.tx.Exec(ctx, `RELEASE SAVEPOINT contacts_batch`); rerr != nil {
		return Result{}, rerr
	}
	return res, err
}
