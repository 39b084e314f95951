package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresDB is the PostgreSQL implementation of DB.
type PostgresDB struct {
	pool *pgxpool.Pool
}

func openPostgres(ctx context.Context, url string) (*PostgresDB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if cfg.MaxConns < 20 {
		cfg.MaxConns = 20
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	return &PostgresDB{pool: pool}, nil
}

// Pool returns the pgx pool (for the queue).
func (d *PostgresDB) Pool() *pgxpool.Pool { return d.pool }

func (d *PostgresDB) Dialect() Dialect               { return Postgres }
func (d *PostgresDB) Ping(ctx context.Context) error { return d.pool.Ping(ctx) }
func (d *PostgresDB) Close() error                   { d.pool.Close(); return nil }

type pgQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func pgExec(ctx context.Context, q pgQuerier, s string, args []any) (int64, error) {
	tag, err := q.Exec(ctx, s, args...)
	if err != nil {
		return 0, pgErr(err)
	}
	return tag.RowsAffected(), nil
}

func pgQuery(ctx context.Context, q pgQuerier, s string, args []any) (Rows, error) {
	rows, err := q.Query(ctx, s, args...)
	if err != nil {
		return nil, pgErr(err)
	}
	return pgRows{rows}, nil
}

func (d *PostgresDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return pgExec(ctx, d.pool, q, args)
}
func (d *PostgresDB) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	return pgQuery(ctx, d.pool, q, args)
}
func (d *PostgresDB) QueryRow(ctx context.Context, q string, args ...any) Row {
	return pgRow{d.pool.QueryRow(ctx, q, args...)}
}

func (d *PostgresDB) InTx(ctx context.Context, fn func(Tx) error) error {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return pgErr(err)
	}
	if err := callTx(fn, pgTx{tx}); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	return pgErr(tx.Commit(ctx))
}

type pgTx struct{ tx pgx.Tx }

func (t pgTx) Raw() any { return t.tx }

func (t pgTx) Collect(_ string, item any, flush Flush) error {
	return flush(context.Background(), t, []any{item})
}
func (t pgTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return pgExec(ctx, t.tx, q, args)
}
func (t pgTx) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	return pgQuery(ctx, t.tx, q, args)
}
func (t pgTx) QueryRow(ctx context.Context, q string, args ...any) Row {
	return pgRow{t.tx.QueryRow(ctx, q, args...)}
}

type pgRows struct{ r pgx.Rows }

func (r pgRows) Next() bool             { return r.r.Next() }
func (r pgRows) Scan(dest ...any) error { return r.r.Scan(dest...) }
func (r pgRows) Err() error             { return pgErr(r.r.Err()) }
func (r pgRows) Close()                 { r.r.Close() }

type pgRow struct{ r pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNoRows
	}
	return pgErr(err)
}

func pgErr(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return fmt.Errorf("%w: %v", ErrUnique, err)
	}
	return err
}
