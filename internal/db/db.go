// Package db is the thin SQL layer shared by every store: one Querier
// interface over SQLite (database/sql on modernc) and PostgreSQL (pgx), so a
// query written once with $N placeholders runs on both. Dialect differences
// are asked of Dialect, never spelled out by callers.
//
// SQLite is opened with two pools: a single-connection writer (every
// transaction; _txlock=immediate so a transaction takes the write lock up
// front instead of failing with SQLITE_BUSY_SNAPSHOT) and a small read-only
// pool for reads outside transactions (WAL lets them run beside the writer).
package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Dialect names the database engine.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Querier runs SQL with $N placeholders.
type Querier interface {
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Rows is the result of Query.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is the result of QueryRow. Scan returns ErrNoRows when there is none.
type Row interface {
	Scan(dest ...any) error
}

// Tx is a transaction. Raw returns the driver transaction (*sql.Tx or
// pgx.Tx) for the queue to insert jobs in it.
type Tx interface {
	Querier
	Raw() any
	// Collect hands item to flush, inside this transaction and before it
	// commits, together with the items other callers collected under the
	// same key in the same group commit: one multi-row write instead of
	// many. Items of a caller whose function fails are dropped with its
	// writes. Where transactions are not grouped, flush runs at once.
	Collect(key string, item any, flush Flush) error
}

// Flush writes collected items in tx.
type Flush func(ctx context.Context, tx Tx, items []any) error

// DB is an open database.
type DB interface {
	Querier
	// InTx runs fn in a transaction, committed when fn returns nil. A panic
	// in fn rolls back and is returned as an error.
	InTx(ctx context.Context, fn func(tx Tx) error) error
	Dialect() Dialect
	Ping(ctx context.Context) error
	Close() error
}

// ErrNoRows is returned by Row.Scan when the query selected nothing.
var ErrNoRows = errors.New("db: no rows")

// ErrUnique is wrapped into errors caused by a unique constraint.
var ErrUnique = errors.New("db: unique violation")

// Open opens url: "postgres://…" or "postgresql://…" selects PostgreSQL;
// anything else is a SQLite file path (optionally prefixed "sqlite://" or
// "file:").
func Open(ctx context.Context, url string) (DB, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return openPostgres(ctx, url)
	default:
		path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite://"), "file:")
		if path == "" {
			return nil, fmt.Errorf("open database: empty path")
		}
		return openSQLite(ctx, path)
	}
}

// IsUnique reports whether err came from a unique constraint.
func IsUnique(err error) bool { return errors.Is(err, ErrUnique) }

// Placeholders returns "$start, $start+1, …" n times.
func Placeholders(start, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", start+i)
	}
	return b.String()
}

// OffWriter returns what a read inside tx should go through when it may
// see data as last committed rather than tx's own view (configuration
// that changes rarely): on SQLite the read pool, since every transaction
// runs on the one writer connection, the bottleneck of intake; on
// PostgreSQL tx itself, since a second connection per transaction could
// exhaust the pool.
func OffWriter(d DB, tx Tx) Querier {
	if d.Dialect() == SQLite {
		return d
	}
	return tx
}

// All runs query and returns every row scanned with scan (an empty, non-nil
// slice when there are none).
func All[T any](ctx context.Context, q Querier, scan func(Rows) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
