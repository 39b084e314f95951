package workflows

// Inspecting runs (Lasso extension): a team's runs of a workflow, filtered
// by contact and status and paged like the content lists (newest first,
// keyset pagination on (created_at, id)), and one run by id. Every query is
// scoped to the team, so another team's workflow or run is not found.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/db"
)

// RunStatuses lists the statuses a run can have.
var RunStatuses = []string{RunQueued, RunCompleted, RunExited, RunCancelled}

// RunView is a run with its contact's email ("" when the contact no longer
// exists).
type RunView struct {
	*Run
	ContactEmail string
}

// RunFilter selects runs of a workflow; empty fields select everything.
type RunFilter struct {
	ContactID string
	// Email selects the runs of the team's contact with this email (none
	// when there is no such contact).
	Email  string
	Status string // one of RunStatuses
}

// runViewCols are runCols plus the contact's email.
const runViewCols = runCols + `, (SELECT c.email FROM contacts c WHERE c.id = workflow_runs.contact_id AND c.team_id = workflow_runs.team_id)`

// extraCol scans one more column after the ones scanRun asks for.
type extraCol struct {
	row db.Row
	dst any
}

func (x extraCol) Scan(dest ...any) error { return x.row.Scan(append(dest, x.dst)...) }

func scanRunView(r db.Row) (RunView, error) {
	var email *string
	run, err := scanRun(extraCol{row: r, dst: &email})
	if err != nil {
		return RunView{}, err
	}
	v := RunView{Run: run}
	if email != nil {
		v.ContactEmail = *email
	}
	return v, nil
}

// ListRuns lists the runs of a (not deleted) workflow of the team that
// match f, most recently created first. The cursor is the id of the first
// run of the page; it stays valid when runs change status between pages.
func (s *Service) ListRuns(ctx context.Context, teamID, workflowID string, f RunFilter, p content.Page) (content.List[RunView], error) {
	out := content.List[RunView]{PerPage: p.PerPage, Items: []RunView{}}
	if err := checkID(workflowID, "workflow"); err != nil {
		return out, err
	}
	var one int
	err := s.db.QueryRow(ctx, `SELECT 1 FROM workflows WHERE id = $1 AND team_id = $2 AND deleted_at IS NULL`, workflowID, teamID).Scan(&one)
	if errors.Is(err, db.ErrNoRows) {
		return out, errNotFound
	}
	if err != nil {
		return out, fmt.Errorf("list runs: %w", err)
	}
	where, args := `team_id = $1 AND workflow_id = $2`, []any{teamID, workflowID}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.ContactID != "" {
		if err := checkID(f.ContactID, "contact"); err != nil {
			return out, err
		}
		where += ` AND contact_id = ` + arg(f.ContactID)
	}
	if f.Email != "" {
		email, err := contacts.NormalizeEmail(f.Email)
		if err != nil {
			return out, err
		}
		where += ` AND contact_id IN (SELECT id FROM contacts WHERE team_id = $1 AND email = ` + arg(email) + `)`
	}
	if f.Status != "" {
		if !validRunStatus(f.Status) {
			return out, apperr.New(apperr.Invalid, "status must be one of %s.", strings.Join(RunStatuses, ", "))
		}
		where += ` AND status = ` + arg(f.Status)
	}
	return db.Paginate(ctx, s.db, db.Listing{Table: "workflow_runs", Cols: runViewCols, Where: where, Args: args,
		CursorWhere: `team_id = $1 AND workflow_id = $2`, CursorArgs: []any{teamID, workflowID}},
		p, func(r db.Rows) (RunView, error) { return scanRunView(r) }, func(v RunView) string { return v.ID })
}

// GetRun returns a run of the team (of any of its workflows, deleted ones
// included); apperr.NotFound if absent.
func (s *Service) GetRun(ctx context.Context, teamID, id string) (*RunView, error) {
	if err := checkID(id, "workflow run"); err != nil {
		return nil, err
	}
	v, err := scanRunView(s.db.QueryRow(ctx, `SELECT `+runViewCols+` FROM workflow_runs WHERE id = $1 AND team_id = $2`, id, teamID))
	if errors.Is(err, db.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "Workflow run not found.")
	}
	if err != nil {
		return nil, fmt.Errorf("get run: %w", err)
	}
	return &v, nil
}

// QueuedCounts counts the queued runs of each of the team's workflows (a
// workflow without any is absent).
func (s *Service) QueuedCounts(ctx context.Context, teamID string) (map[string]int, error) {
	rows, err := s.db.Query(ctx, `SELECT workflow_id, COUNT(*) FROM workflow_runs WHERE team_id = $1 AND status = $2 GROUP BY workflow_id`,
		teamID, RunQueued)
	if err != nil {
		return nil, fmt.Errorf("queued counts: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] = n
	}
	return out, rows.Err()
}

func validRunStatus(s string) bool {
	for _, v := range RunStatuses {
		if s == v {
			return true
		}
	}
	return false
}
