// Package workflows owns automation workflows as the contract's workflow API
// exposes them (spec §5.15–§5.16, §6.10, §10): a workflow, its status and
// mailing list, and its node graph (a single trigger root, edges held by the
// parent as an ordered list of child ids, several parents allowed, no
// cycles). Every edit is checked against the workflow's revision token and
// the graph rules and saved in one transaction with a new token.
//
// Executing workflows is the engine's business: it reads graphs with Load,
// records each contact's run in the workflow_runs table (status "queued"
// while the contact is in the workflow, at node_id) and learns of status
// changes from the Status field.
package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/audience"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// Workflow statuses (§6.10).
const (
	StatusDraft             = "Draft"
	StatusSending           = "Sending"
	StatusPaused            = "Paused"
	StatusPausedAndQueueing = "PausedAndQueueing"
)

// MaxNodes is the most nodes a workflow may have (§10.6).
const MaxNodes = 300

// Run statuses of the workflow_runs table. Only RunQueued counts as queued.
const (
	RunQueued    = "queued"
	RunCompleted = "completed"
	RunExited    = "exited"
	RunCancelled = "cancelled"
)

// Queued-contact policies of edits that may drop queued contacts (§5.15).
const (
	PolicyFail    = "fail"
	PolicyDiscard = "discard"
)

// Messages creates the email messages of SendEmailAction nodes.
// *content.Service implements it.
type Messages interface {
	Begin(ctx context.Context, teamID string) error
	CreateMessage(ctx context.Context, tx db.Tx, teamID, parentKind, parentID string) (*content.Message, error)
}

// Filters validates AudienceFilter node settings. *audience.Service
// implements it.
type Filters interface {
	Validate(ctx context.Context, teamID string, f audience.Filter) error
	GetSegment(ctx context.Context, teamID, id string) (audience.Segment, error)
}

// Properties lists a team's contact properties. *contacts.Service
// implements it.
type Properties interface {
	ListProperties(ctx context.Context, teamID string, customOnly bool) ([]contacts.Property, error)
}

// Config configures a Service.
type Config struct {
	Messages   Messages
	Filters    Filters
	Properties Properties
	Now        func() time.Time
}

// Service manages workflows.
type Service struct {
	db        db.DB
	cfg       Config
	graphs    graphs
	onSending func(ctx context.Context, tx db.Tx, w *Workflow) error
}

// New returns a Service.
func New(d db.DB, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{db: d, cfg: cfg}
}

// Workflow is a workflow with (when loaded by Get or Load) its graph.
type Workflow struct {
	ID, TeamID, Name string
	Description      *string
	Status           string
	MailingListID    *string
	RootNodeID       string
	RevisionID       *string
	CreatedAt        time.Time
	UpdatedAt        time.Time
	// Nodes is the graph by node id; nil in lists.
	Nodes map[string]*Node

	removed []string // node ids deleted by an edit, not yet saved
}

// Node returns the node with id, or nil.
func (w *Workflow) Node(id string) *Node { return w.Nodes[id] }

// Parents returns the ids of the nodes pointing to id, in a stable order.
func (w *Workflow) Parents(id string) []string {
	var out []string
	for _, pid := range w.order() {
		for _, c := range w.Nodes[pid].Next {
			if c == id {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// order lists node ids depth-first from the root (children left to right),
// then any unreachable ones.
func (w *Workflow) order() []string {
	seen := map[string]bool{}
	var out []string
	var walk func(id string)
	walk = func(id string) {
		n := w.Nodes[id]
		if n == nil || seen[id] {
			return
		}
		seen[id] = true
		out = append(out, id)
		for _, c := range n.Next {
			walk(c)
		}
	}
	walk(w.RootNodeID)
	for id := range w.Nodes {
		if !seen[id] {
			out = append(out, id)
		}
	}
	return out
}

var (
	errNotFound     = apperr.New(apperr.NotFound, "Workflow not found.")
	errNodeNotFound = apperr.New(apperr.NotFound, "Workflow node not found.")
	errStale        = apperr.New(apperr.Conflict, "The workflow has changed since it was read (stale expectedRevisionId). Fetch it again for the latest workflowRevisionId and retry.")
	errSending      = apperr.New(apperr.Invalid, "Workflow cannot be edited while in a SENDING state. Pause it first.")
	// errRollback ends a transaction that must not commit (dry runs).
	errRollback = errors.New("rollback")
)

func checkID(id, what string) error {
	if !ids.Valid(id) {
		return apperr.New(apperr.Invalid, "Invalid %s id.", what)
	}
	return nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func (s *Service) now() time.Time { return s.cfg.Now() }

const wfCols = `id, team_id, name, description, status, mailing_list_id, root_node_id, revision_id, created_at, updated_at`

func scanWorkflow(r db.Row) (*Workflow, error) {
	w := &Workflow{}
	var c, u int64
	if err := r.Scan(&w.ID, &w.TeamID, &w.Name, &w.Description, &w.Status, &w.MailingListID, &w.RootNodeID, &w.RevisionID, &c, &u); err != nil {
		return nil, err
	}
	w.CreatedAt, w.UpdatedAt = fromMS(c), fromMS(u)
	return w, nil
}

// Load reads a (not deleted) workflow of the team and its whole graph
// through q, with the derived node fields filled in (message subjects,
// event-pattern properties). The engine uses it to walk the graph.
func (s *Service) Load(ctx context.Context, q db.Querier, teamID, id string) (*Workflow, error) {
	w, err := scanWorkflow(q.QueryRow(ctx, `SELECT `+wfCols+` FROM workflows WHERE id = $1 AND team_id = $2 AND deleted_at IS NULL`, id, teamID))
	if errors.Is(err, db.ErrNoRows) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("load workflow: %w", err)
	}
	rows, err := q.Query(ctx, `SELECT id, type, next_node_ids, payload FROM workflow_nodes WHERE workflow_id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("load workflow nodes: %w", err)
	}
	defer rows.Close()
	w.Nodes = map[string]*Node{}
	for rows.Next() {
		n := &Node{WorkflowID: id}
		var next, payload string
		if err := rows.Scan(&n.ID, &n.Type, &next, &payload); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(next), &n.Next); err != nil {
			return nil, fmt.Errorf("node %s edges: %w", n.ID, err)
		}
		if err := json.Unmarshal([]byte(payload), &n.Payload); err != nil {
			return nil, fmt.Errorf("node %s payload: %w", n.ID, err)
		}
		if n.Next == nil {
			n.Next = []string{}
		}
		n.saved = n.fingerprint()
		w.Nodes[n.ID] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return w, s.derive(ctx, q, w)
}

// derive fills the node fields that are not stored on the node.
func (s *Service) derive(ctx context.Context, q db.Querier, w *Workflow) error {
	subjects := map[string]string{}
	needSubjects, events := false, map[string][]EventProperty{}
	for _, n := range w.Nodes {
		switch n.Type {
		case TypeSendEmail:
			needSubjects = true
		case TypeEventTrigger:
			if n.EventName != nil {
				events[*n.EventName] = nil
			}
		}
	}
	if needSubjects {
		rows, err := q.Query(ctx, `SELECT id, subject FROM email_messages WHERE team_id = $1 AND parent_kind = $2 AND parent_id = $3`,
			w.TeamID, content.ParentWorkflow, w.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, subj string
			if err := rows.Scan(&id, &subj); err != nil {
				return err
			}
			subjects[id] = subj
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
	}
	for name := range events {
		props, err := db.All(ctx, q, func(r db.Rows) (EventProperty, error) {
			var p EventProperty
			err := r.Scan(&p.Name, &p.Type)
			return p, err
		}, `SELECT pp.name, pp.type FROM event_pattern_properties pp JOIN event_patterns p ON p.id = pp.pattern_id
			WHERE p.team_id = $1 AND p.name = $2 ORDER BY pp.created_at, pp.name`, w.TeamID, name)
		if err != nil {
			return err
		}
		events[name] = props
	}
	for _, n := range w.Nodes {
		n.WorkflowID = w.ID
		switch n.Type {
		case TypeSendEmail:
			if n.EmailMessageID != nil {
				n.Subject = subjects[*n.EmailMessageID]
			}
		case TypeAddToListTrigger:
			n.MailingListID = w.MailingListID
		case TypeEventTrigger:
			n.EventProperties = []EventProperty{}
			if n.EventName != nil {
				n.EventProperties = events[*n.EventName]
			}
		}
	}
	return nil
}

// List lists a team's workflows (without graphs), most recently created
// first.
func (s *Service) List(ctx context.Context, teamID string, p content.Page) (content.List[Workflow], error) {
	return db.Paginate(ctx, s.db, db.Listing{Table: "workflows", Cols: wfCols, Where: `team_id = $1 AND deleted_at IS NULL`, Args: []any{teamID}},
		p, func(r db.Rows) (Workflow, error) {
			w, err := scanWorkflow(r)
			if err != nil {
				return Workflow{}, err
			}
			return *w, nil
		}, func(w Workflow) string { return w.ID })
}

// Get returns a workflow with its graph.
func (s *Service) Get(ctx context.Context, teamID, id string) (*Workflow, error) {
	if err := checkID(id, "workflow"); err != nil {
		return nil, err
	}
	return s.Load(ctx, s.db, teamID, id)
}

// GetNode returns a workflow and one of its nodes.
func (s *Service) GetNode(ctx context.Context, teamID, id, nodeID string) (*Workflow, *Node, error) {
	w, err := s.Get(ctx, teamID, id)
	if err != nil {
		return nil, nil, err
	}
	if err := checkID(nodeID, "node"); err != nil {
		return nil, nil, err
	}
	n := w.Nodes[nodeID]
	if n == nil {
		return nil, nil, errNodeNotFound
	}
	return w, n, nil
}

// CreateInput is the body of POST /v1/workflows.
type CreateInput struct {
	Name          string
	Description   *string
	MailingListID *string
}

// Create creates a Draft workflow whose graph is BlankTrigger → ExitAction.
func (s *Service) Create(ctx context.Context, teamID string, in CreateInput) (*Workflow, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" {
		return nil, apperr.New(apperr.Invalid, "name is required.")
	}
	now := ms(s.now())
	rev := ids.New()
	w := &Workflow{ID: ids.New(), TeamID: teamID, Name: name, Description: in.Description, Status: StatusDraft,
		MailingListID: in.MailingListID, RevisionID: &rev, CreatedAt: fromMS(now), UpdatedAt: fromMS(now)}
	trigger := &Node{ID: ids.New(), WorkflowID: w.ID, Type: TypeBlankTrigger}
	exit := &Node{ID: ids.New(), WorkflowID: w.ID, Type: TypeExit, Next: []string{}}
	trigger.Next = []string{exit.ID}
	w.RootNodeID = trigger.ID
	w.Nodes = map[string]*Node{trigger.ID: trigger, exit.ID: exit}
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		if in.MailingListID != nil {
			if err := checkList(ctx, tx, teamID, *in.MailingListID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO workflows (id, team_id, name, description, status, mailing_list_id, root_node_id, revision_id, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`, w.ID, teamID, w.Name, w.Description, w.Status, w.MailingListID, w.RootNodeID, rev, now); err != nil {
			return err
		}
		return s.saveNodes(ctx, tx, w, now)
	})
	if err != nil {
		return nil, fmt.Errorf("create workflow: %w", err)
	}
	return w, nil
}

func checkList(ctx context.Context, q db.Querier, teamID, listID string) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM mailing_lists WHERE id = $1 AND team_id = $2`, listID, teamID).Scan(&one)
	if errors.Is(err, db.ErrNoRows) {
		return apperr.New(apperr.Invalid, "Mailing list %q not found.", listID)
	}
	return err
}

// UpdateInput is the body of POST /v1/workflows/{id}; nil fields are kept.
type UpdateInput struct {
	ExpectedRevisionID *string
	Name, Description  *string
}

// Update renames or re-describes a workflow (allowed in every status).
func (s *Service) Update(ctx context.Context, teamID, id string, in UpdateInput) (*Workflow, error) {
	if in.Name == nil && in.Description == nil {
		return nil, apperr.New(apperr.Invalid, "Provide at least one of name, description.")
	}
	if in.Name != nil && strings.TrimSpace(*in.Name) == "" {
		return nil, apperr.New(apperr.Invalid, "name cannot be empty.")
	}
	return s.mutate(ctx, teamID, id, in.ExpectedRevisionID, false, func(tx db.Tx, w *Workflow) error {
		if in.Name != nil {
			w.Name = strings.TrimSpace(*in.Name)
		}
		if in.Description != nil {
			w.Description = in.Description
		}
		return nil
	})
}

// ConfirmSuffix ends the message of the 409 that asks to confirm the
// deletion of a sending workflow or one with queued contacts (§5.15; the Go
// SDK matches it).
const ConfirmSuffix = "Confirm deletion by sending a second request with confirmDelete: true."

// Delete deletes a workflow: it stops sending and cancels queued contacts.
// A Sending workflow or one with queued contacts needs confirm.
func (s *Service) Delete(ctx context.Context, teamID, id string, expected *string, confirm bool) error {
	_, err := s.mutate(ctx, teamID, id, expected, false, func(tx db.Tx, w *Workflow) error {
		queued, err := queuedCount(ctx, tx, w.ID, nil)
		if err != nil {
			return err
		}
		if !confirm && (w.Status == StatusSending || queued > 0) {
			impact := fmt.Sprintf("Workflow %q has %d queued contact(s); deleting it cancels them.", w.Name, queued)
			if w.Status == StatusSending {
				impact = fmt.Sprintf("Workflow %q is sending and has %d queued contact(s); deleting it stops sending and cancels them.", w.Name, queued)
			}
			return apperr.New(apperr.Conflict, "%s %s", impact, ConfirmSuffix).With("queuedContactCount", queued)
		}
		if err := cancelRuns(ctx, tx, w.ID, nil, s.now()); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE workflows SET deleted_at = $2 WHERE id = $1`, w.ID, ms(s.now()))
		return err
	})
	return err
}

// queuedCount counts queued runs of a workflow, at nodeIDs when not nil.
func queuedCount(ctx context.Context, q db.Querier, wfID string, nodeIDs []string) (int, error) {
	query, args := `SELECT COUNT(*) FROM workflow_runs WHERE workflow_id = $1 AND status = $2`, []any{wfID, RunQueued}
	if nodeIDs != nil {
		if len(nodeIDs) == 0 {
			return 0, nil
		}
		query += ` AND node_id IN (` + db.Placeholders(3, len(nodeIDs)) + `)`
		for _, id := range nodeIDs {
			args = append(args, id)
		}
	}
	var n int
	err := q.QueryRow(ctx, query, args...).Scan(&n)
	return n, err
}

// cancelRuns cancels the queued runs of a workflow (at nodeIDs if not nil).
func cancelRuns(ctx context.Context, q db.Querier, wfID string, nodeIDs []string, now time.Time) error {
	query, args := `UPDATE workflow_runs SET status = $3, updated_at = $4 WHERE workflow_id = $1 AND status = $2`, []any{wfID, RunQueued, RunCancelled, ms(now)}
	if nodeIDs != nil {
		if len(nodeIDs) == 0 {
			return nil
		}
		query += ` AND node_id IN (` + db.Placeholders(5, len(nodeIDs)) + `)`
		for _, id := range nodeIDs {
			args = append(args, id)
		}
	}
	_, err := q.Exec(ctx, query, args...)
	return err
}

// ListChange is the body of POST /v1/workflows/{id}/mailing-list.
type ListChange struct {
	ExpectedRevisionID *string
	MailingListID      *string // nil clears the list
	DryRun             bool
	Policy             string // PolicyFail (default) or PolicyDiscard
}

// ListChangeResult is the outcome of ChangeMailingList: Status is "dryRun",
// "queuedContactsFound" (nothing changed) or "updated" (Workflow set).
type ListChangeResult struct {
	Status             string
	MailingListID      *string
	QueuedContactCount int
	Workflow           *Workflow
}

// ChangeMailingList sets or clears the workflow's mailing list. Queued
// contacts that are not on a newly assigned list are excluded: with the
// fail policy nothing changes, with discard their runs are cancelled.
func (s *Service) ChangeMailingList(ctx context.Context, teamID, id string, in ListChange) (ListChangeResult, error) {
	res := ListChangeResult{MailingListID: in.MailingListID}
	if err := checkPolicy(in.Policy); err != nil {
		return res, err
	}
	w, err := s.mutate(ctx, teamID, id, in.ExpectedRevisionID, true, func(tx db.Tx, w *Workflow) error {
		n := 0
		if in.MailingListID != nil {
			if err := checkList(ctx, tx, teamID, *in.MailingListID); err != nil {
				return err
			}
			err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM workflow_runs r WHERE r.workflow_id = $1 AND r.status = $2
				AND NOT EXISTS (SELECT 1 FROM contact_lists l WHERE l.contact_id = r.contact_id AND l.list_id = $3)`,
				w.ID, RunQueued, *in.MailingListID).Scan(&n)
			if err != nil {
				return err
			}
		}
		res.QueuedContactCount = n
		switch {
		case in.DryRun:
			res.Status = "dryRun"
			return errRollback
		case n > 0 && in.Policy != PolicyDiscard:
			res.Status = "queuedContactsFound"
			return errRollback
		}
		if n > 0 {
			if _, err := tx.Exec(ctx, `UPDATE workflow_runs SET status = $3, updated_at = $4 WHERE workflow_id = $1 AND status = $2
				AND NOT EXISTS (SELECT 1 FROM contact_lists l WHERE l.contact_id = workflow_runs.contact_id AND l.list_id = $5)`,
				w.ID, RunQueued, RunCancelled, ms(s.now()), *in.MailingListID); err != nil {
				return err
			}
		}
		w.MailingListID = in.MailingListID
		res.Status = "updated"
		return nil
	})
	if errors.Is(err, errRollback) {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	res.Workflow = w
	return res, nil
}

func checkPolicy(p string) error {
	if p != "" && p != PolicyFail && p != PolicyDiscard {
		return apperr.New(apperr.Invalid, `queuedContactPolicy must be "fail" or "discard".`)
	}
	return nil
}

// mutate runs fn on the workflow loaded in a transaction after checking the
// revision token (and, for graph edits, that it is not Sending), then checks
// the graph rules and saves the workflow and its changed nodes with a new
// revision token. fn may return errRollback to discard everything.
func (s *Service) mutate(ctx context.Context, teamID, id string, expected *string, graph bool, fn func(tx db.Tx, w *Workflow) error) (*Workflow, error) {
	if err := checkID(id, "workflow"); err != nil {
		return nil, err
	}
	var out *Workflow
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		// Take the row lock first (PostgreSQL), then read.
		exp := ""
		if expected != nil {
			exp = *expected
		}
		now := s.now()
		rev := ids.New()
		n, err := tx.Exec(ctx, `UPDATE workflows SET revision_id = $4, updated_at = $5 WHERE id = $1 AND team_id = $2 AND deleted_at IS NULL
			AND COALESCE(revision_id, '') = $3`, id, teamID, exp, rev, ms(now))
		if err != nil {
			return err
		}
		if n == 0 {
			if _, err := s.Load(ctx, tx, teamID, id); err != nil {
				return err
			}
			return errStale
		}
		w, err := s.Load(ctx, tx, teamID, id)
		if err != nil {
			return err
		}
		if graph && w.Status == StatusSending {
			return errSending
		}
		if err := fn(tx, w); err != nil {
			return err
		}
		if err := w.check(); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE workflows SET name = $2, description = $3, status = $4, mailing_list_id = $5, root_node_id = $6
			WHERE id = $1`, w.ID, w.Name, w.Description, w.Status, w.MailingListID, w.RootNodeID); err != nil {
			return err
		}
		if err := s.saveNodes(ctx, tx, w, ms(now)); err != nil {
			return err
		}
		w.RevisionID, w.UpdatedAt = &rev, fromMS(ms(now))
		if err := s.derive(ctx, tx, w); err != nil {
			return err
		}
		out = w
		return nil
	})
	return out, err
}

// saveNodes writes new and changed nodes and deletes removed ones.
func (s *Service) saveNodes(ctx context.Context, tx db.Tx, w *Workflow, now int64) error {
	for _, n := range w.Nodes {
		fp := n.fingerprint()
		if fp == n.saved {
			continue
		}
		next, err := json.Marshal(n.Next)
		if err != nil {
			return err
		}
		payload, err := json.Marshal(n.Payload)
		if err != nil {
			return err
		}
		if n.saved == "" {
			_, err = tx.Exec(ctx, `INSERT INTO workflow_nodes (id, workflow_id, team_id, type, next_node_ids, payload, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`, n.ID, w.ID, w.TeamID, n.Type, string(next), string(payload), now)
		} else {
			_, err = tx.Exec(ctx, `UPDATE workflow_nodes SET type = $2, next_node_ids = $3, payload = $4, updated_at = $5 WHERE id = $1`,
				n.ID, n.Type, string(next), string(payload), now)
		}
		if err != nil {
			return fmt.Errorf("save node %s: %w", n.ID, err)
		}
		n.saved = fp
	}
	for _, id := range w.removed {
		if _, err := tx.Exec(ctx, `DELETE FROM workflow_nodes WHERE id = $1 AND workflow_id = $2`, id, w.ID); err != nil {
			return err
		}
	}
	w.removed = nil
	return nil
}

// SetStatus moves a workflow to status (Lasso extension: start, pause,
// resume). Starting checks that the graph can run.
func (s *Service) SetStatus(ctx context.Context, teamID, id, status string) (*Workflow, error) {
	if err := checkID(id, "workflow"); err != nil {
		return nil, err
	}
	var out *Workflow
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		w, err := s.Load(ctx, tx, teamID, id)
		if err != nil {
			return err
		}
		switch status {
		case StatusSending:
			if w.Status == StatusSending {
				return apperr.New(apperr.Conflict, "Workflow is already sending.")
			}
			if err := w.Runnable(); err != nil {
				return err
			}
		case StatusPaused, StatusPausedAndQueueing:
			if w.Status != StatusSending && w.Status != StatusPaused && w.Status != StatusPausedAndQueueing {
				return apperr.New(apperr.Conflict, "Only a sending workflow can be paused.")
			}
		default:
			return apperr.New(apperr.Invalid, "Unknown workflow status %q.", status)
		}
		now := s.now()
		if _, err := tx.Exec(ctx, `UPDATE workflows SET status = $2, updated_at = $3 WHERE id = $1`, w.ID, status, ms(now)); err != nil {
			return err
		}
		w.Status, w.UpdatedAt = status, fromMS(ms(now))
		if status == StatusSending && s.onSending != nil {
			if err := s.onSending(ctx, tx, w); err != nil {
				return err
			}
		}
		out = w
		return nil
	})
	return out, err
}

// Resume moves a paused workflow back to Sending.
func (s *Service) Resume(ctx context.Context, teamID, id string) (*Workflow, error) {
	w, err := s.Get(ctx, teamID, id)
	if err != nil {
		return nil, err
	}
	if w.Status != StatusPaused && w.Status != StatusPausedAndQueueing {
		return nil, apperr.New(apperr.Conflict, "Only a paused workflow can be resumed.")
	}
	return s.SetStatus(ctx, teamID, id, StatusSending)
}

// Runnable reports why the workflow cannot be started, or nil: it needs a
// real trigger (an EventTrigger with an event, an AddToListTrigger with a
// list, a ContactPropertyTrigger with a query), every direct child of a
// BranchNode must be an AudienceFilter, and every email must have a subject.
func (w *Workflow) Runnable() error {
	for _, id := range w.order() {
		n := w.Nodes[id]
		switch n.Type {
		case TypeBlankTrigger:
			return apperr.New(apperr.Invalid, "Choose a trigger before starting the workflow.")
		case TypeEventTrigger:
			if n.EventName == nil || *n.EventName == "" {
				return apperr.New(apperr.Invalid, "The event trigger needs an event name.")
			}
		case TypeAddToListTrigger:
			if w.MailingListID == nil {
				return apperr.New(apperr.Invalid, "The added-to-list trigger needs the workflow's mailing list.")
			}
		case TypeContactPropertyTrigger:
			if n.ContactPropertyQuery == nil {
				return apperr.New(apperr.Invalid, "The contact-updated trigger needs a contactPropertyQuery.")
			}
		case TypeBranch:
			for _, c := range n.Next {
				if w.Nodes[c].Type != TypeAudienceFilter {
					return apperr.New(apperr.Invalid, "Every direct child of a BranchNode must be an AudienceFilter (node %s).", n.ID)
				}
			}
		case TypeSendEmail:
			if strings.TrimSpace(n.Subject) == "" {
				return apperr.New(apperr.Invalid, "Email node %s has no subject.", n.ID)
			}
		}
	}
	return nil
}
