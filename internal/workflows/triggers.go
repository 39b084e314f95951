package workflows

// Contact triggers (issue 5 "Engine", spec §10.5): SignupTrigger (contact
// added: created through the API, an event, or an import that triggers
// workflows), ContactPropertyTrigger (a property changed from a value
// matching `was` to one matching `is`) and AddToListTrigger (the contact
// joined the workflow's list).
//
// The contacts service announces each change to the Engine (a
// contacts.ChangeHook) inside the transaction that made it; the Engine
// collects the changes of the commit into one durable contact_changed job,
// so the change and its job commit together. The job's worker starts the
// runs. Every change carries an id made when it happened: a reEligible
// trigger's run key is (contact, change), any other's the contact, so a job
// worked twice starts each run once.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/queue"
)

// ContactChange is a contacts.Change with the id that makes its runs'
// keys.
type ContactChange struct {
	ID string `json:"id"`
	contacts.Change
}

// ContactChangedArgs is the job of the contact changes of one commit. Kind
// "contact_changed".
type ContactChangedArgs struct {
	Changes []ContactChange `json:"changes"`
}

// Kind implements queue.Args.
func (ContactChangedArgs) Kind() string { return "contact_changed" }

// ContactChangedWorker works contact_changed jobs. Set Engine before the
// queue starts.
type ContactChangedWorker struct {
	queue.WorkerDefaults[ContactChangedArgs]
	Engine *Engine
}

// Work implements queue.Worker.
func (w *ContactChangedWorker) Work(ctx context.Context, job *queue.Job[ContactChangedArgs]) error {
	return w.Engine.ContactsChanged(ctx, job.Args.Changes)
}

// ContactChanged implements contacts.ChangeHook: the change joins the
// commit's contact_changed job.
func (e *Engine) ContactChanged(ctx context.Context, tx db.Tx, ch contacts.Change) error {
	// Most teams have no running workflow with a contact trigger: then no
	// job at all (one indexed read instead of a job per commit). The read
	// sees workflows as last committed, off SQLite's writer: a workflow
	// started concurrently with the change may miss it, as it would a
	// moment earlier.
	var one int
	err := db.OffWriter(e.db, tx).QueryRow(ctx, `SELECT 1 FROM workflows w JOIN workflow_nodes n ON n.id = w.root_node_id
		WHERE w.team_id = $1 AND w.deleted_at IS NULL AND w.status IN ($2, $3) AND n.type IN ($4, $5, $6) LIMIT 1`,
		ch.TeamID, StatusSending, StatusPausedAndQueueing, TypeSignupTrigger, TypeContactPropertyTrigger, TypeAddToListTrigger).Scan(&one)
	if errors.Is(err, db.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return tx.Collect("contact_changed", ContactChange{ID: ids.New(), Change: ch}, e.flushChanges)
}

func (e *Engine) flushChanges(ctx context.Context, tx db.Tx, items []any) error {
	args := ContactChangedArgs{Changes: make([]ContactChange, len(items))}
	for i, it := range items {
		args.Changes[i] = it.(ContactChange)
	}
	return e.cfg.Queue.InsertTx(ctx, tx, args, nil)
}

// ContactsChanged starts the runs of the active workflows whose contact
// trigger the changes match. Idempotent (see the file comment).
func (e *Engine) ContactsChanged(ctx context.Context, changes []ContactChange) error {
	active := map[string][]*Workflow{}
	type start struct {
		w  *Workflow
		ch ContactChange
	}
	var starts []start
	for _, ch := range changes {
		wfs, ok := active[ch.TeamID]
		if !ok {
			var err error
			if wfs, err = e.svc.Active(ctx, e.db, ch.TeamID); err != nil {
				return err
			}
			active[ch.TeamID] = wfs
		}
		for _, w := range wfs {
			if root := w.Node(w.RootNodeID); root != nil && triggeredBy(w, root, ch.Change) {
				starts = append(starts, start{w, ch})
			}
		}
	}
	if len(starts) == 0 {
		return nil
	}
	return e.db.InTx(ctx, func(tx db.Tx) error {
		for _, s := range starts {
			if _, err := e.startRunKey(ctx, tx, s.w, s.ch.ContactID, "", "c:"+s.ch.ID); err != nil {
				return err
			}
		}
		return nil
	})
}

// triggeredBy reports whether a change matches the workflow's trigger.
func triggeredBy(w *Workflow, root *Node, ch contacts.Change) bool {
	switch root.Type {
	case TypeSignupTrigger:
		return ch.Created
	case TypeAddToListTrigger:
		list := w.MailingListID
		if root.MailingListID != nil {
			list = root.MailingListID
		}
		if list == nil {
			return false
		}
		for _, l := range ch.ListsAdded {
			if l == *list {
				return true
			}
		}
		return false
	case TypeContactPropertyTrigger:
		q := root.ContactPropertyQuery
		if q == nil || ch.Created {
			return false
		}
		v, ok := ch.Props[q.Key]
		if !ok {
			return false
		}
		typ := ch.Types[q.Key]
		return Compare(q.Was, typ, v[0]) && Compare(q.Is, typ, v[1])
	}
	return false
}

// Compare reports whether a property value (API form, nil when empty) of
// type typ satisfies one side of a contactPropertyQuery (§10.5). Negative
// operators (not_equal, not_contains, numeric_not_equal) hold for an empty
// value.
func Compare(c Comparison, typ string, v any) bool {
	empty := v == nil || v == ""
	switch c.Operator {
	case "any":
		return true
	case "empty":
		return empty
	case "not_empty":
		return !empty
	}
	switch typ {
	case contacts.TypeString:
		s, want := fmt.Sprint(v), fmt.Sprint(c.Value)
		switch c.Operator {
		case "equal":
			return !empty && s == want
		case "not_equal":
			return empty || s != want
		case "contains":
			return !empty && strings.Contains(strings.ToLower(s), strings.ToLower(want))
		case "not_contains":
			return empty || !strings.Contains(strings.ToLower(s), strings.ToLower(want))
		}
	case contacts.TypeNumber:
		n, ok1 := toFloat(v)
		want, ok2 := toFloat(c.Value)
		if c.Operator == "numeric_not_equal" {
			return !ok1 || !ok2 || n != want
		}
		if !ok1 || !ok2 {
			return false
		}
		switch c.Operator {
		case "greater_than":
			return n > want
		case "less_than":
			return n < want
		case "numeric_equal":
			return n == want
		}
	case contacts.TypeBoolean:
		b, ok := toBool(v)
		switch c.Operator {
		case "true":
			return ok && b
		case "false":
			return ok && !b
		}
	case contacts.TypeDate:
		t, ok := toTime(v)
		if !ok {
			return false
		}
		switch c.Operator {
		case "after":
			want, ok := toTime(c.Value)
			return ok && t.After(want)
		case "before":
			want, ok := toTime(c.Value)
			return ok && t.Before(want)
		case "between":
			from, to, ok := between(c.Value)
			return ok && !t.Before(from) && !t.After(to)
		}
	}
	return false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

func toBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		b, err := strconv.ParseBool(x)
		return b, err == nil
	}
	return false, false
}

func toTime(v any) (time.Time, bool) {
	if v == nil || v == "" {
		return time.Time{}, false
	}
	if f, ok := v.(float64); ok {
		return time.UnixMilli(int64(f)).UTC(), true
	}
	return contacts.ParseDate(v)
}

// between reads a date range: {"from": date, "to": date}, or "from,to".
func between(v any) (time.Time, time.Time, bool) {
	var a, b any
	switch x := v.(type) {
	case map[string]any:
		a, b = x["from"], x["to"]
	case string:
		parts := strings.SplitN(x, ",", 2)
		if len(parts) != 2 {
			return time.Time{}, time.Time{}, false
		}
		a, b = strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
	default:
		return time.Time{}, time.Time{}, false
	}
	from, ok1 := toTime(a)
	to, ok2 := toTime(b)
	return from, to, ok1 && ok2
}
