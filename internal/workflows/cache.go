package workflows

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/lasso-mail/lasso/internal/db"
)

// graphs caches workflow graphs for the engine, which reads the graph of a
// workflow for every event it matches and every step of every run.
//
// The workflow row is always read fresh (status, list, deletion: one
// indexed query); only the nodes are reused, while the row's revision
// token and mailing list are the ones they were loaded with. Every graph
// edit sets a new revision token in the same transaction (mutate), so a
// node set is never reused after an edit, on this node or any other one
// sharing the database. Derived node fields that do not change the
// revision (the subject of a node's email) may be stale in a cached
// graph: the engine does not read them.
type graphs struct {
	mu sync.Mutex
	m  map[string]cachedGraph // by workflow id
}

type cachedGraph struct {
	key   string
	nodes map[string]*Node
}

// graphKey is what a cached node set is valid for.
func graphKey(w *Workflow) (string, bool) {
	if w.RevisionID == nil {
		return "", false // legacy workflow without a token: always load
	}
	k := *w.RevisionID + "\x00"
	if w.MailingListID != nil {
		k += *w.MailingListID
	}
	return k, true
}

func (g *graphs) get(w *Workflow) bool {
	key, ok := graphKey(w)
	if !ok {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.m[w.ID]
	if !ok || c.key != key {
		return false
	}
	w.Nodes = c.nodes
	return true
}

func (g *graphs) put(w *Workflow) {
	key, ok := graphKey(w)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]cachedGraph{}
	}
	if len(g.m) > 10000 { // bound memory: start over
		g.m = map[string]cachedGraph{}
	}
	g.m[w.ID] = cachedGraph{key: key, nodes: w.Nodes}
}

// Graph returns a (not deleted) workflow of the team with its graph, like
// Load, from the cache when its revision has not changed. The returned
// workflow's Nodes are shared: callers must not modify them.
func (s *Service) Graph(ctx context.Context, q db.Querier, teamID, id string) (*Workflow, error) {
	w, err := scanWorkflow(q.QueryRow(ctx, `SELECT `+wfCols+` FROM workflows WHERE id = $1 AND team_id = $2 AND deleted_at IS NULL`, id, teamID))
	if errors.Is(err, db.ErrNoRows) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("load workflow: %w", err)
	}
	if s.graphs.get(w) {
		return w, nil
	}
	w, err = s.Load(ctx, q, teamID, id)
	if err != nil {
		return nil, err
	}
	s.graphs.put(w)
	return w, nil
}

// Active lists the team's workflows that admit contacts (Sending or
// PausedAndQueueing), with their graphs (shared, from the cache as in
// Graph), oldest first: the engine matches triggers against them.
func (s *Service) Active(ctx context.Context, q db.Querier, teamID string) ([]*Workflow, error) {
	rows, err := q.Query(ctx, `SELECT `+wfCols+` FROM workflows WHERE team_id = $1 AND deleted_at IS NULL AND status IN ($2, $3) ORDER BY created_at, id`,
		teamID, StatusSending, StatusPausedAndQueueing)
	if err != nil {
		return nil, fmt.Errorf("active workflows: %w", err)
	}
	var wfs []*Workflow
	for rows.Next() {
		w, err := scanWorkflow(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		wfs = append(wfs, w)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]*Workflow, 0, len(wfs))
	for _, w := range wfs {
		if !s.graphs.get(w) {
			l, err := s.Load(ctx, q, teamID, w.ID)
			if errors.Is(err, errNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return nil, err
			}
			s.graphs.put(l)
			w = l
		}
		out = append(out, w)
	}
	return out, nil
}
