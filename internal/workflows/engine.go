package workflows

// The engine runs contacts through active workflows (issue 5 "Engine",
// spec §10.5–§10.6).
//
// A run is one row of workflow_runs: the contact, the node it is at
// (node_id), its status (queued while in the workflow), the triggering
// event, the end of the timer it waits on (due_at, app clock), the number of
// its current step job (seq) and its history (JSON). Every state change is
// one transaction that also inserts the next step job (workflow_step
// {run_id, seq}), so a run never loses its job and never gets two: a job
// whose seq is not the run's current one does nothing.
//
// A step job claims the run (bumps seq), then walks the graph from the run's
// node through every node that takes no time (filters, branches,
// experiments, emails) until the run ends or reaches a timer. A timer sets
// due_at and schedules the next step job; that job checks due_at against
// the app clock and snoozes while it is early, so a clock the tests control
// (and wall-clock drift) cannot make a timer end early.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/audience"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/emails"
	"github.com/lasso-mail/lasso/internal/events"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/lmx"
	"github.com/lasso-mail/lasso/internal/queue"
)

// StepArgs is the job that moves one run on. Kind "workflow_step".
type StepArgs struct {
	RunID string `json:"run_id"`
	Seq   int64  `json:"seq"`
}

// Kind implements queue.Args.
func (StepArgs) Kind() string { return "workflow_step" }

// StepWorker works workflow_step jobs. Set Engine before the queue starts.
type StepWorker struct {
	queue.WorkerDefaults[StepArgs]
	Engine *Engine
}

// Work implements queue.Worker.
func (w *StepWorker) Work(ctx context.Context, job *queue.Job[StepArgs]) error {
	return w.Engine.Step(ctx, job.Args)
}

// Engine dependencies; the app's services implement them.
type (
	// Inserter inserts jobs in a transaction (*queue.Queue).
	Inserter interface {
		InsertTx(ctx context.Context, tx db.Tx, args queue.Args, opts *queue.InsertOpts) error
	}
	// Enqueuer creates sends (*emails.Service).
	Enqueuer interface {
		Enqueue(ctx context.Context, tx db.Tx, n emails.New) (string, error)
	}
	// Audiences loads contact facts and segments (*audience.Service).
	// Both read through the querier they are given: the walk's
	// transaction on PostgreSQL (a walk holding a pooled connection must
	// never wait for a second one: with every connection held by a walk,
	// none would come), SQLite's read pool (off the one writer).
	Audiences interface {
		FactsIn(ctx context.Context, q db.Querier, teamID, contactID string, filters ...audience.Filter) (audience.ContactFacts, error)
		SegmentIn(ctx context.Context, q db.Querier, teamID, id string) (audience.Segment, error)
	}
	// Compiler compiles a workflow email message (*content.Service).
	Compiler interface {
		WorkflowMessage(ctx context.Context, teamID, id string) (*content.Published, error)
	}
	// ContactGetter reads a contact (*contacts.Service).
	ContactGetter interface {
		Get(ctx context.Context, teamID, id string) (*contacts.Contact, error)
	}
	// EventGetter reads a stored event (*events.Service).
	EventGetter interface {
		Get(ctx context.Context, q db.Querier, id string) (events.Event, error)
	}
	// Domains tells whether a sending domain is verified (*senders.Service).
	Domains interface {
		IsVerified(ctx context.Context, teamID, domain string) (bool, error)
	}
)

// EngineConfig configures an Engine.
type EngineConfig struct {
	Queue    Inserter
	Emails   Enqueuer
	Audience Audiences
	Messages Compiler
	Contacts ContactGetter
	Events   EventGetter
	// Domains, when set, refuses sends from a domain that is not verified.
	Domains Domains
	// Now is the clock timers are measured with (default time.Now).
	Now func() time.Time
	// TimerPoll, when > 0, is the longest a step job sleeps (wall clock)
	// before checking the clock again: tests that move Now set it small.
	// 0 schedules a timer's job exactly at its end.
	TimerPoll time.Duration
	Logger    *slog.Logger
}

// Engine runs workflows.
type Engine struct {
	svc *Service
	db  db.DB
	cfg EngineConfig
}

// NewEngine returns an Engine over the workflows of svc.
func NewEngine(svc *Service, d db.DB, cfg EngineConfig) *Engine {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{svc: svc, db: d, cfg: cfg}
	svc.onSending = e.rearm
	return e
}

// RearmArgs is the job that gives the queued runs of a workflow that
// starts sending again their step jobs, one batch of rearmBatch runs (in
// id order, after After) per job. Kind "workflow_rearm".
type RearmArgs struct {
	WorkflowID string `json:"workflow_id"`
	After      string `json:"after,omitempty"`
}

// Kind implements queue.Args.
func (RearmArgs) Kind() string { return "workflow_rearm" }

// RearmWorker works workflow_rearm jobs. Set Engine before the queue starts.
type RearmWorker struct {
	queue.WorkerDefaults[RearmArgs]
	Engine *Engine
}

// Work implements queue.Worker.
func (w *RearmWorker) Work(ctx context.Context, job *queue.Job[RearmArgs]) error {
	return w.Engine.Rearm(ctx, job.Args)
}

// Resuming releases held runs rearmBatch at a time, one batch every
// rearmEvery (2,000 runs/s): the released runs' step jobs compete with
// intake for the database, so a workflow holding many contacts is let go
// gradually rather than all at once.
const (
	rearmBatch = 500
	rearmEvery = 250 * time.Millisecond
)

// rearm schedules Rearm in the transaction that sets the workflow sending.
// While a workflow is paused its runs have no live job: a step job that
// finds the workflow paused ends, and runs admitted while
// PausedAndQueueing get none, so held contacts cost nothing until the
// workflow resumes.
func (e *Engine) rearm(ctx context.Context, tx db.Tx, w *Workflow) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM workflow_runs WHERE workflow_id = $1 AND status = $2 LIMIT 1`, w.ID, RunQueued).Scan(&one)
	if errors.Is(err, db.ErrNoRows) {
		return nil // nobody held (a first start): nothing to rearm
	}
	if err != nil {
		return fmt.Errorf("rearm runs: %w", err)
	}
	return e.cfg.Queue.InsertTx(ctx, tx, RearmArgs{WorkflowID: w.ID}, nil)
}

// Rearm gives the next rearmBatch queued runs of the workflow (in id order,
// after a.After) a step job that runs at once and, when there may be more,
// schedules the job for the next batch rearmEvery later, all in one
// transaction: each job is short, and progress survives a crash. A run
// still waiting on a timer is snoozed to the timer's end by the worker that
// takes its job. Each run's seq is bumped with its new job, so a job left
// from before the pause, or from a batch that is retried, does nothing.
// Rearm stops when the workflow is no longer sending.
func (e *Engine) Rearm(ctx context.Context, a RearmArgs) error {
	err := e.db.InTx(ctx, func(tx db.Tx) error {
		var status string
		err := tx.QueryRow(ctx, `SELECT status FROM workflows WHERE id = $1 AND deleted_at IS NULL`, a.WorkflowID).Scan(&status)
		if errors.Is(err, db.ErrNoRows) || status != StatusSending {
			return nil
		}
		if err != nil {
			return err
		}
		type arm struct {
			id  string
			seq int64
		}
		arms, err := db.All(ctx, tx, func(r db.Rows) (arm, error) {
			var x arm
			err := r.Scan(&x.id, &x.seq)
			return x, err
		}, `SELECT id, seq FROM workflow_runs WHERE workflow_id = $1 AND status = $2 AND id > $3 ORDER BY id LIMIT `+strconv.Itoa(rearmBatch),
			a.WorkflowID, RunQueued, a.After)
		if err != nil {
			return err
		}
		for _, x := range arms {
			k, err := tx.Exec(ctx, `UPDATE workflow_runs SET seq = seq + 1 WHERE id = $1 AND seq = $2 AND status = $3`, x.id, x.seq, RunQueued)
			if err != nil {
				return err
			}
			if k == 1 { // else a step job moved the run meanwhile: it has its job
				if err := e.cfg.Queue.InsertTx(ctx, tx, StepArgs{RunID: x.id, Seq: x.seq + 1}, nil); err != nil {
					return err
				}
			}
		}
		if len(arms) < rearmBatch {
			return nil
		}
		next := RearmArgs{WorkflowID: a.WorkflowID, After: arms[len(arms)-1].id}
		return e.cfg.Queue.InsertTx(ctx, tx, next, &queue.InsertOpts{ScheduledAt: time.Now().Add(rearmEvery)})
	})
	if err != nil {
		return fmt.Errorf("rearm runs: %w", err)
	}
	return nil
}

// Run is a contact's run through a workflow.
type Run struct {
	ID, TeamID, WorkflowID, ContactID string
	NodeID, Status                    string
	EventID                           string
	// DueAt is the end of the timer the run waits on, nil when not waiting.
	DueAt     *time.Time
	Seq       int64
	History   []Step
	CreatedAt time.Time
	UpdatedAt time.Time

	due *int64
}

// Step is one entry of a run's history.
type Step struct {
	NodeID string `json:"nodeId"`
	Type   string `json:"type"`
	At     int64  `json:"at"` // unix ms
	// Result: entered, waiting, waited, matched, notMatched, chose, sent,
	// skipped, exited, completed, cancelled.
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
}

// Results of history steps.
const (
	StepEntered    = "entered"
	StepWaiting    = "waiting"
	StepWaited     = "waited"
	StepMatched    = "matched"
	StepNotMatched = "notMatched"
	StepChose      = "chose"
	StepSent       = "sent"
	StepSkipped    = "skipped"
	StepExited     = "exited"
	StepCompleted  = "completed"
	StepCancelled  = "cancelled"
)

const runCols = `id, team_id, workflow_id, contact_id, node_id, status, event_id, due_at, seq, history, created_at, updated_at`

func scanRun(r db.Row) (*Run, error) {
	x := &Run{}
	var ev *string
	var hist string
	var c, u int64
	if err := r.Scan(&x.ID, &x.TeamID, &x.WorkflowID, &x.ContactID, &x.NodeID, &x.Status, &ev, &x.due, &x.Seq, &hist, &c, &u); err != nil {
		return nil, err
	}
	if ev != nil {
		x.EventID = *ev
	}
	if x.due != nil {
		t := fromMS(*x.due)
		x.DueAt = &t
	}
	if err := json.Unmarshal([]byte(hist), &x.History); err != nil {
		return nil, fmt.Errorf("run %s history: %w", x.ID, err)
	}
	x.CreatedAt, x.UpdatedAt = fromMS(c), fromMS(u)
	return x, nil
}

// GetRun returns a run; apperr.NotFound if absent.
func (e *Engine) GetRun(ctx context.Context, id string) (*Run, error) {
	r, err := scanRun(e.db.QueryRow(ctx, `SELECT `+runCols+` FROM workflow_runs WHERE id = $1`, id))
	if errors.Is(err, db.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "Workflow run not found.")
	}
	return r, err
}

// Runs lists the runs of a workflow (of one contact when contactID is not
// ""), oldest first.
func (e *Engine) Runs(ctx context.Context, workflowID, contactID string) ([]*Run, error) {
	rows, err := e.db.Query(ctx, `SELECT `+runCols+` FROM workflow_runs WHERE workflow_id = $1 AND ($2 = '' OR contact_id = $2)
		ORDER BY created_at, id`, workflowID, contactID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Trigger starts the runs that recorded events trigger: every active
// workflow of the event's team whose trigger is an EventTrigger for the
// event's name takes the event's contact, once per contact unless the
// trigger is reEligible. Idempotent: a run's key (workflow, contact[, event])
// is unique, so handling the same events again starts nothing.
func (e *Engine) Trigger(ctx context.Context, evs []events.Recorded) error {
	active := map[string][]*Workflow{}
	type start struct {
		w  *Workflow
		ev events.Recorded
	}
	var starts []start
	for _, ev := range evs {
		wfs, ok := active[ev.TeamID]
		if !ok {
			var err error
			if wfs, err = e.svc.Active(ctx, e.db, ev.TeamID); err != nil {
				return err
			}
			active[ev.TeamID] = wfs
		}
		for _, w := range wfs {
			root := w.Node(w.RootNodeID)
			if root != nil && root.Type == TypeEventTrigger && root.EventName != nil && *root.EventName == ev.Name {
				starts = append(starts, start{w, ev})
			}
		}
	}
	if len(starts) == 0 {
		return nil
	}
	return e.db.InTx(ctx, func(tx db.Tx) error {
		for _, s := range starts {
			if _, err := e.startRun(ctx, tx, s.w, s.ev.ContactID, s.ev.EventID); err != nil {
				return err
			}
		}
		return nil
	})
}

// startRun starts a run of w for the contact at the workflow's trigger and
// inserts its first step job. It returns "" when the contact may not enter
// (already ran a workflow it may enter once, or this run already exists).
func (e *Engine) startRun(ctx context.Context, tx db.Tx, w *Workflow, contactID, eventID string) (string, error) {
	return e.startRunKey(ctx, tx, w, contactID, eventID, eventID)
}

// startRunKey is startRun where occasion (the event id, or the id of the
// contact change that triggered) makes a reEligible trigger's run key.
func (e *Engine) startRunKey(ctx context.Context, tx db.Tx, w *Workflow, contactID, eventID, occasion string) (string, error) {
	root := w.Node(w.RootNodeID)
	key := contactID
	if root.ReEligible {
		key = contactID + ":" + occasion
	} else {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM workflow_runs WHERE workflow_id = $1 AND contact_id = $2 LIMIT 1`, w.ID, contactID).Scan(&one)
		if err == nil {
			return "", nil
		}
		if !errors.Is(err, db.ErrNoRows) {
			return "", fmt.Errorf("start run: %w", err)
		}
	}
	now := ms(e.cfg.Now())
	hist, _ := json.Marshal([]Step{{NodeID: root.ID, Type: root.Type, At: now, Result: StepEntered, Detail: eventID}})
	var evID *string
	if eventID != "" {
		evID = &eventID
	}
	id := ids.New()
	var got string
	err := tx.QueryRow(ctx, `INSERT INTO workflow_runs (id, team_id, workflow_id, contact_id, node_id, status, run_key, event_id, seq, history, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9, $10, $10) ON CONFLICT (workflow_id, run_key) DO NOTHING RETURNING id`,
		id, w.TeamID, w.ID, contactID, root.ID, RunQueued, key, evID, string(hist), now).Scan(&got)
	if errors.Is(err, db.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("start run: %w", err)
	}
	if w.Status != StatusSending {
		return id, nil // PausedAndQueueing: admitted and held; resuming re-arms it
	}
	// A sending workflow walks the new run at once, in this transaction,
	// up to its first timer or its end: no step job between the trigger
	// and the first email.
	r := &Run{ID: id, TeamID: w.TeamID, WorkflowID: w.ID, ContactID: contactID, NodeID: root.ID, Status: RunQueued,
		EventID: eventID, History: []Step{{NodeID: root.ID, Type: root.Type, At: now, Result: StepEntered, Detail: eventID}}}
	return id, e.advance(ctx, tx, w, r, fromMS(now))
}

var errStaleStep = errors.New("stale workflow step")

// Step works one step job: it moves the run on from its node until the run
// ends or waits on a timer. A job of a run that moved on since does nothing,
// as does the job of a run whose workflow is paused (see rearm); a run whose
// timer has not ended by the clock is snoozed.
func (e *Engine) Step(ctx context.Context, a StepArgs) error {
	r, err := e.GetRun(ctx, a.RunID)
	if errors.Is(err, apperr.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.Status != RunQueued || r.Seq != a.Seq {
		return nil
	}
	w, err := e.svc.Graph(ctx, e.db, r.TeamID, r.WorkflowID)
	if errors.Is(err, apperr.NotFound) {
		return e.finish(ctx, r, a.Seq, RunCancelled, "workflow deleted")
	}
	if err != nil {
		return err
	}
	if w.Status != StatusSending {
		return nil // paused: the run waits where it is; resuming re-arms it
	}
	now := e.cfg.Now()
	if r.due != nil && ms(now) < *r.due {
		return queue.JobSnooze(e.sleep(time.Duration(*r.due-ms(now)) * time.Millisecond))
	}
	err = e.db.InTx(ctx, func(tx db.Tx) error {
		if err := e.claim(ctx, tx, r, a.Seq); err != nil {
			return err
		}
		return e.advance(ctx, tx, w, r, now)
	})
	if errors.Is(err, errStaleStep) {
		return nil
	}
	return err
}

// claim makes the run's current job this one's successor: only one job of
// a run may act on its state (on PostgreSQL it also locks the row).
func (e *Engine) claim(ctx context.Context, tx db.Tx, r *Run, seq int64) error {
	n, err := tx.Exec(ctx, `UPDATE workflow_runs SET seq = seq + 1 WHERE id = $1 AND seq = $2 AND status = $3`, r.ID, seq, RunQueued)
	if err != nil {
		return fmt.Errorf("claim run: %w", err)
	}
	if n == 0 {
		return errStaleStep
	}
	r.Seq = seq + 1
	return nil
}

// finish ends a run outside the graph walk (deleted workflow).
func (e *Engine) finish(ctx context.Context, r *Run, seq int64, status, detail string) error {
	err := e.db.InTx(ctx, func(tx db.Tx) error {
		if err := e.claim(ctx, tx, r, seq); err != nil {
			return err
		}
		now := ms(e.cfg.Now())
		r.Status, r.due = status, nil
		r.History = append(r.History, Step{NodeID: r.NodeID, At: now, Result: status, Detail: detail})
		return e.save(ctx, tx, r, now)
	})
	if errors.Is(err, errStaleStep) {
		return nil
	}
	return err
}

func (e *Engine) save(ctx context.Context, tx db.Tx, r *Run, now int64) error {
	hist, err := json.Marshal(r.History)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE workflow_runs SET node_id = $2, status = $3, due_at = $4, history = $5, updated_at = $6 WHERE id = $1`,
		r.ID, r.NodeID, r.Status, r.due, string(hist), now)
	if err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	return nil
}

// sleep is how long a step job waits (wall clock) for d of the app clock.
func (e *Engine) sleep(d time.Duration) time.Duration {
	if e.cfg.TimerPoll > 0 && d > e.cfg.TimerPoll {
		return e.cfg.TimerPoll
	}
	if d < time.Millisecond {
		return time.Millisecond
	}
	return d
}

// walk is the state of one step's walk through the graph.
type walk struct {
	e     *Engine
	w     *Workflow
	r     *Run
	q     db.Querier // reads: see Audiences
	now   int64
	facts *audience.ContactFacts
	segs  map[string]*audience.Filter
}

func (k *walk) log(n *Node, result, detail string) {
	k.r.History = append(k.r.History, Step{NodeID: n.ID, Type: n.Type, At: k.now, Result: result, Detail: detail})
}

// errContactGone: the run's contact was deleted.
var errContactGone = errors.New("contact deleted")

// advance walks the run from its node; see Step. A run whose contact was
// deleted exits.
func (e *Engine) advance(ctx context.Context, tx db.Tx, w *Workflow, r *Run, nowT time.Time) error {
	k := &walk{e: e, w: w, r: r, q: db.OffWriter(e.db, tx), now: ms(nowT), segs: map[string]*audience.Filter{}}
	err := k.advance(ctx, tx)
	if errors.Is(err, errContactGone) {
		r.Status, r.due = RunExited, nil
		r.History = append(r.History, Step{NodeID: r.NodeID, At: k.now, Result: StepExited, Detail: "contact deleted"})
		return e.save(ctx, tx, r, k.now)
	}
	return err
}

func (k *walk) advance(ctx context.Context, tx db.Tx) error {
	e, w, r := k.e, k.w, k.r
	end := func(n *Node, status, result, detail string) error {
		r.Status, r.due = status, nil
		if n != nil {
			k.log(n, result, detail)
		} else {
			r.History = append(r.History, Step{NodeID: r.NodeID, At: k.now, Result: result, Detail: detail})
		}
		return e.save(ctx, tx, r, k.now)
	}
	for range MaxNodes + 2 {
		n := w.Node(r.NodeID)
		if n == nil {
			return end(nil, RunCancelled, StepCancelled, "node removed")
		}
		// Filters that apply downstream re-apply at every later node.
		if !IsTrigger(n.Type) {
			ok, by, err := k.downstream(ctx, n)
			if err != nil {
				return err
			}
			if !ok {
				return end(n, RunExited, StepExited, "no longer matches filter "+by)
			}
		}
		next := ""
		if len(n.Next) > 0 {
			next = n.Next[0]
		}
		switch n.Type {
		case TypeTimer:
			if r.due == nil && n.Delay() > 0 {
				due := k.now + n.Delay()
				r.due = &due
				k.log(n, StepWaiting, time.UnixMilli(due).UTC().Format(time.RFC3339))
				if err := e.save(ctx, tx, r, k.now); err != nil {
					return err
				}
				at := time.Now().Add(e.sleep(time.Duration(n.Delay()) * time.Millisecond))
				return e.cfg.Queue.InsertTx(ctx, tx, StepArgs{RunID: r.ID, Seq: r.Seq}, &queue.InsertOpts{ScheduledAt: at})
			}
			r.due = nil
			k.log(n, StepWaited, "")
		case TypeAudienceFilter:
			ok, err := k.match(ctx, n)
			if err != nil {
				return err
			}
			if !ok {
				return end(n, RunExited, StepNotMatched, "")
			}
			k.log(n, StepMatched, "")
		case TypeBranch:
			next = ""
			for _, c := range n.Next {
				cn := w.Node(c)
				if cn == nil || cn.Type != TypeAudienceFilter {
					continue
				}
				ok, err := k.match(ctx, cn)
				if err != nil {
					return err
				}
				if ok {
					next = c
					break
				}
			}
			if next == "" {
				return end(n, RunExited, StepNotMatched, "no branch matches")
			}
			k.log(n, StepChose, next)
		case TypeExperiment:
			next = k.pick(n)
			k.log(n, StepChose, next)
		case TypeSendEmail:
			result, detail, err := k.send(ctx, tx, n)
			if err != nil {
				return err
			}
			k.log(n, result, detail)
		case TypeExit:
			return end(n, RunCompleted, StepCompleted, "")
		default: // triggers, variants: pass through
			if !IsTrigger(n.Type) {
				k.log(n, StepEntered, "")
			}
		}
		if next == "" {
			return end(nil, RunCompleted, StepCompleted, "")
		}
		r.NodeID = next
	}
	// Unreachable with the graphs the API builds (no cycles); a run must
	// not hold its batch of triggers hostage.
	return end(nil, RunCancelled, StepCancelled, "too many steps in one walk")
}

// loadFacts loads the contact's facts once per walk, with the activity
// every filter of the workflow names.
func (k *walk) loadFacts(ctx context.Context) (*audience.ContactFacts, error) {
	if k.facts != nil {
		return k.facts, nil
	}
	var fs []audience.Filter
	for _, n := range k.w.Nodes {
		if n.Type != TypeAudienceFilter {
			continue
		}
		if n.AudienceFilter != nil {
			fs = append(fs, *n.AudienceFilter)
		}
		if f, err := k.segment(ctx, n); err != nil {
			return nil, err
		} else if f != nil {
			fs = append(fs, *f)
		}
	}
	f, err := k.e.cfg.Audience.FactsIn(ctx, k.q, k.w.TeamID, k.r.ContactID, fs...)
	if errors.Is(err, apperr.NotFound) {
		return nil, errContactGone
	}
	if err != nil {
		return nil, err
	}
	k.facts = &f
	return k.facts, nil
}

// segment returns the filter of the node's audience segment (nil when none;
// a deleted segment matches nobody).
func (k *walk) segment(ctx context.Context, n *Node) (*audience.Filter, error) {
	if n.AudienceSegmentID == nil {
		return nil, nil
	}
	id := *n.AudienceSegmentID
	if f, ok := k.segs[id]; ok {
		return f, nil
	}
	g, err := k.e.cfg.Audience.SegmentIn(ctx, k.q, k.w.TeamID, id)
	if errors.Is(err, apperr.NotFound) || errors.Is(err, apperr.Invalid) {
		none := &audience.Filter{Match: "any"} // no conditions under "any": nobody
		k.segs[id] = none
		return none, nil
	}
	if err != nil {
		return nil, err
	}
	k.segs[id] = g.Filter
	return g.Filter, nil
}

// match reports whether the contact passes an AudienceFilter node: its
// segment's filter and its own. A node with neither matches everyone (the
// default path of a branch).
func (k *walk) match(ctx context.Context, n *Node) (bool, error) {
	c, err := k.loadFacts(ctx)
	if err != nil {
		return false, err
	}
	seg, err := k.segment(ctx, n)
	if err != nil {
		return false, err
	}
	for _, f := range []*audience.Filter{seg, n.AudienceFilter} {
		if f == nil {
			continue
		}
		if len(f.Conditions) == 0 {
			if f.Match == "any" {
				return false, nil
			}
			continue
		}
		if !audience.Match(*f, *c) {
			return false, nil
		}
	}
	return true, nil
}

// downstream re-applies the filters the run passed that apply downstream
// (appliesDownstream), except at the filter itself. It returns the id of
// the failing filter.
func (k *walk) downstream(ctx context.Context, at *Node) (bool, string, error) {
	seen := map[string]bool{}
	for _, s := range k.r.History {
		if s.Type != TypeAudienceFilter || s.Result != StepMatched || seen[s.NodeID] || s.NodeID == at.ID {
			continue
		}
		seen[s.NodeID] = true
		f := k.w.Node(s.NodeID)
		if f == nil || f.Type != TypeAudienceFilter || !f.AppliesDownstream {
			continue
		}
		ok, err := k.match(ctx, f)
		if err != nil || !ok {
			return false, f.ID, err
		}
	}
	return true, "", nil
}

// pick chooses an experiment's variant for the contact, deterministically:
// hash(contact, node) % 100 below the sampling rate goes to the
// non-control variants (split evenly), the rest to the control.
func (k *walk) pick(n *Node) string {
	h := fnv.New32a()
	h.Write([]byte(k.r.ContactID + "\x00" + n.ID))
	v := h.Sum32()
	var variants, controls []string
	for _, c := range n.Next {
		if cn := k.w.Node(c); cn != nil && cn.IsControl {
			controls = append(controls, c)
		} else if cn != nil {
			variants = append(variants, c)
		}
	}
	group := variants
	if int(v%100) >= n.SamplingRate {
		group = controls
	}
	if len(group) == 0 {
		group = append(variants, controls...)
	}
	if len(group) == 0 {
		return ""
	}
	return group[int((v/100)%uint32(len(group)))]
}

// sendPayload is a workflow send's emails payload.
type sendPayload struct {
	RunID          string `json:"runId"`
	NodeID         string `json:"nodeId"`
	EmailMessageID string `json:"emailMessageId"`
	EventID        string `json:"eventId,omitempty"`
}

// send enqueues the node's email to the contact: only to a subscribed
// contact on the workflow's mailing list (when it has one); suppression is
// the send pipeline's.
func (k *walk) send(ctx context.Context, tx db.Tx, n *Node) (string, string, error) {
	if n.EmailMessageID == nil {
		return StepSkipped, "no email message", nil
	}
	c, err := k.loadFacts(ctx)
	if err != nil {
		return "", "", err
	}
	switch {
	case !c.Subscribed:
		return StepSkipped, "unsubscribed", nil
	case k.w.MailingListID != nil && !c.MailingLists[*k.w.MailingListID]:
		return StepSkipped, "not on the workflow's mailing list", nil
	}
	id, err := k.e.cfg.Emails.Enqueue(ctx, tx, emails.New{TeamID: k.w.TeamID, ContactID: k.r.ContactID, Recipient: c.Email,
		SourceType: emails.SourceLoop, SourceID: k.w.ID, SourceName: k.w.Name,
		Payload: sendPayload{RunID: k.r.ID, NodeID: n.ID, EmailMessageID: *n.EmailMessageID, EventID: k.r.EventID}})
	if err != nil {
		return "", "", err
	}
	return StepSent, id, nil
}

// Render implements emails.Renderer for workflow sends: the node's email
// message with {contact.x} from the contact as it is now and {event.x}
// from the triggering event, the message's fallbacks for the rest.
func (e *Engine) Render(ctx context.Context, x *emails.Send) (*emails.Rendered, error) {
	var p sendPayload
	if err := json.Unmarshal(x.Payload, &p); err != nil {
		return nil, apperr.New(apperr.Invalid, "bad payload: %v", err)
	}
	pub, err := e.cfg.Messages.WorkflowMessage(ctx, x.TeamID, p.EmailMessageID)
	if err != nil {
		return nil, err
	}
	vals := &lmx.Values{Contact: map[string]string{}, Event: map[string]string{}}
	if x.ContactID != "" {
		c, err := e.cfg.Contacts.Get(ctx, x.TeamID, x.ContactID)
		if err != nil {
			return nil, err
		}
		for k, v := range c.JSON() {
			if s, ok := stringValue(v); ok {
				vals.Contact[k] = s
			}
		}
	}
	if p.EventID != "" {
		ev, err := e.cfg.Events.Get(ctx, e.db, p.EventID)
		if err != nil && !errors.Is(err, apperr.NotFound) {
			return nil, err
		}
		for k, v := range ev.Properties {
			if s, ok := stringValue(v); ok {
				vals.Event[k] = s
			}
		}
	}
	fb := &pub.Fallbacks
	from := lmx.Interpolate(pub.FromEmail, vals, fb)
	if at := strings.LastIndexByte(from, '@'); e.cfg.Domains != nil && at >= 0 {
		// Mail leaves only from a verified sending domain (as transactional).
		ok, err := e.cfg.Domains.IsVerified(ctx, x.TeamID, from[at+1:])
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, apperr.New(apperr.Invalid, "The sending domain %s is not verified.", from[at+1:])
		}
	}
	html, text := pub.Template.Render(vals, fb)
	return &emails.Rendered{
		FromName:       lmx.Interpolate(pub.FromName, vals, fb),
		FromEmail:      from,
		ReplyTo:        lmx.Interpolate(pub.ReplyTo, vals, fb),
		Subject:        lmx.Interpolate(pub.Subject, vals, fb),
		HTML:           html,
		Text:           text,
		EmailMessageID: pub.EmailMessageID,
		Marketing:      true,
	}, nil
}

// stringValue is a property value as email text; false for no value.
func stringValue(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case *string:
		if x == nil {
			return "", false
		}
		return *x, true
	case json.Number:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case bool:
		return strconv.FormatBool(x), true
	case map[string]bool, []string, map[string]any:
		return "", false
	}
	return fmt.Sprint(v), true
}
