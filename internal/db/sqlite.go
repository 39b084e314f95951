package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLiteDB is the SQLite implementation of DB.
type SQLiteDB struct {
	write *sql.DB // one connection: every transaction and the queue
	read  *sql.DB // read-only pool for reads outside transactions
}

func sqliteDSN(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_time_format", "sqlite")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
	}
	return "file:" + path + "?" + q.Encode()
}

func openSQLite(ctx context.Context, path string) (*SQLiteDB, error) {
	w, err := sql.Open("sqlite", sqliteDSN(path, false))
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", sqliteDSN(path, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	r.SetConnMaxIdleTime(0)
	return &SQLiteDB{write: w, read: r}, nil
}

// WritePool returns the single-connection writer pool (for the queue).
func (d *SQLiteDB) WritePool() *sql.DB { return d.write }

func (d *SQLiteDB) Dialect() Dialect { return SQLite }

func (d *SQLiteDB) Ping(ctx context.Context) error {
	var one int
	return d.read.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

func (d *SQLiteDB) Close() error {
	return errors.Join(d.read.Close(), d.write.Close())
}

func (d *SQLiteDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return sqlExec(ctx, d.write, q, args)
}

func (d *SQLiteDB) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	return sqlQuery(ctx, d.read, q, args)
}

func (d *SQLiteDB) QueryRow(ctx context.Context, q string, args ...any) Row {
	return sqlRow{d.read.QueryRowContext(ctx, q, args...)}
}

func (d *SQLiteDB) InTx(ctx context.Context, fn func(Tx) error) (err error) {
	tx, err := d.write.BeginTx(ctx, nil)
	if err != nil {
		return sqliteErr(err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(sqlTx{tx}); err != nil {
		return err
	}
	return sqliteErr(tx.Commit())
}

type execQuerier interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

func sqlExec(ctx context.Context, e execQuerier, q string, args []any) (int64, error) {
	res, err := e.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, sqliteErr(err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

func sqlQuery(ctx context.Context, e execQuerier, q string, args []any) (Rows, error) {
	rows, err := e.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, sqliteErr(err)
	}
	return sqlRows{rows}, nil
}

type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) Raw() any { return t.tx }
func (t sqlTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return sqlExec(ctx, t.tx, q, args)
}
func (t sqlTx) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	return sqlQuery(ctx, t.tx, q, args)
}
func (t sqlTx) QueryRow(ctx context.Context, q string, args ...any) Row {
	return sqlRow{t.tx.QueryRowContext(ctx, q, args...)}
}

type sqlRows struct{ r *sql.Rows }

func (r sqlRows) Next() bool             { return r.r.Next() }
func (r sqlRows) Scan(dest ...any) error { return r.r.Scan(dest...) }
func (r sqlRows) Err() error             { return sqliteErr(r.r.Err()) }
func (r sqlRows) Close()                 { _ = r.r.Close() }

type sqlRow struct{ r *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNoRows
	}
	return sqliteErr(err)
}

func sqliteErr(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %v", ErrUnique, err)
		}
	}
	return err
}
