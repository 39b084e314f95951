// Package ratelimit counts API requests per team in one-second windows.
// Memory counts in the process (SQLite: one node). Postgres counts in a
// shared UNLOGGED table, so the limit holds across any number of nodes.
package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/lasso-mail/lasso/internal/db"
)

// Decision is the outcome of one request.
type Decision struct {
	Limit     int
	Remaining int
	Allowed   bool
}

// Limiter decides whether a team may make one more request now.
type Limiter interface {
	Allow(ctx context.Context, teamID string) (Decision, error)
	// Limit is the requests per second per team (0: unlimited).
	Limit() int
}

// New returns the limiter that fits d: shared counters on PostgreSQL, memory
// otherwise. limit <= 0 means no limit.
func New(d db.DB, limit int, now func() time.Time) Limiter {
	if now == nil {
		now = time.Now
	}
	if limit <= 0 {
		return unlimited{}
	}
	if d != nil && d.Dialect() == db.Postgres {
		return &Postgres{db: d, limit: limit, now: now}
	}
	return &Memory{limit: limit, now: now, windows: map[string]*window{}}
}

type unlimited struct{}

func (unlimited) Limit() int { return 0 }

// Limit implements Limiter.
func (m *Memory) Limit() int { return m.limit }

// Limit implements Limiter.
func (p *Postgres) Limit() int { return p.limit }

func (unlimited) Allow(context.Context, string) (Decision, error) {
	return Decision{Limit: 0, Remaining: 0, Allowed: true}, nil
}

func decide(limit int, count int64) Decision {
	rem := limit - int(count)
	if rem < 0 {
		rem = 0
	}
	return Decision{Limit: limit, Remaining: rem, Allowed: count <= int64(limit)}
}

// Memory is a per-process fixed-window counter.
type Memory struct {
	limit int
	now   func() time.Time

	mu      sync.Mutex
	windows map[string]*window
	swept   int64
}

type window struct {
	second int64
	count  int64
}

// Allow implements Limiter.
func (m *Memory) Allow(_ context.Context, teamID string) (Decision, error) {
	sec := m.now().Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	if sec != m.swept { // drop idle teams once a second
		for k, w := range m.windows {
			if w.second < sec-1 {
				delete(m.windows, k)
			}
		}
		m.swept = sec
	}
	w := m.windows[teamID]
	if w == nil {
		w = &window{}
		m.windows[teamID] = w
	}
	if w.second != sec {
		w.second, w.count = sec, 0
	}
	w.count++
	return decide(m.limit, w.count), nil
}

// Postgres counts in the rate_windows table shared by all nodes.
type Postgres struct {
	db    db.DB
	limit int
	now   func() time.Time

	mu      sync.Mutex
	cleaned int64
}

// Allow implements Limiter.
func (p *Postgres) Allow(ctx context.Context, teamID string) (Decision, error) {
	sec := p.now().Unix()
	var n int64
	err := p.db.QueryRow(ctx, `INSERT INTO rate_windows (team_id, window_start, count) VALUES ($1, $2, 1)
		ON CONFLICT (team_id, window_start) DO UPDATE SET count = rate_windows.count + 1 RETURNING count`, teamID, sec).Scan(&n)
	if err != nil {
		return Decision{}, err
	}
	p.mu.Lock()
	clean := sec-p.cleaned >= 10
	if clean {
		p.cleaned = sec
	}
	p.mu.Unlock()
	if clean {
		_, _ = p.db.Exec(ctx, `DELETE FROM rate_windows WHERE window_start < $1`, sec-5)
	}
	return decide(p.limit, n), nil
}
