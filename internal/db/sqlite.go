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
//
// SQLite has one writer, so transactions are group-committed: InTx hands its
// function to a committer goroutine, which runs every function waiting at
// that moment in one transaction, each inside its own SAVEPOINT (a function
// that fails is rolled back to its savepoint alone), then commits once. Under
// load this turns N commits into one without changing what InTx means to a
// caller: InTx returns after the commit that made its writes durable.
type SQLiteDB struct {
	write *sql.DB // one connection: every transaction and the queue
	read  *sql.DB // read-only pool for reads outside transactions

	reqs     chan *txReq
	stop     chan struct{}
	stopped  chan struct{}
	maxBatch int
}

type txReq struct {
	ctx  context.Context
	fn   func(Tx) error
	done chan error
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
	w, err := openCached("sqlite", sqliteDSN(path, false))
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
	r, err := openCached("sqlite", sqliteDSN(path, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	r.SetConnMaxIdleTime(0)
	d := &SQLiteDB{write: w, read: r, reqs: make(chan *txReq), stop: make(chan struct{}), stopped: make(chan struct{}), maxBatch: 128}
	go d.committer()
	return d, nil
}

// WritePool returns the single-connection writer pool (for the queue).
func (d *SQLiteDB) WritePool() *sql.DB { return d.write }

func (d *SQLiteDB) Dialect() Dialect { return SQLite }

func (d *SQLiteDB) Ping(ctx context.Context) error {
	var one int
	return d.read.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

func (d *SQLiteDB) Close() error {
	select {
	case <-d.stop:
	default:
		close(d.stop)
		<-d.stopped
	}
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

// ErrClosed is returned by InTx after Close.
var ErrClosed = errors.New("db: closed")

func (d *SQLiteDB) InTx(ctx context.Context, fn func(Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &txReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case d.reqs <- req:
	case <-d.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-req.done
}

// committer runs waiting transactions in batches (see SQLiteDB).
func (d *SQLiteDB) committer() {
	defer close(d.stopped)
	batch := make([]*txReq, 0, d.maxBatch)
	for {
		select {
		case <-d.stop:
			return
		case r := <-d.reqs:
			batch = append(batch[:0], r)
		}
	drain:
		for len(batch) < d.maxBatch {
			select {
			case r := <-d.reqs:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		d.runBatch(batch)
	}
}

func (d *SQLiteDB) runBatch(batch []*txReq) {
	if len(batch) == 1 {
		batch[0].done <- d.runOne(batch[0])
		return
	}
	tx, err := d.write.BeginTx(context.Background(), nil)
	if err != nil {
		for _, r := range batch {
			r.done <- sqliteErr(err)
		}
		return
	}
	errs := make([]error, len(batch))
	all := &collector{}
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if _, err := tx.Exec("SAVEPOINT lasso_tx"); err != nil {
			errs[i] = sqliteErr(err)
			continue
		}
		own := &collector{}
		errs[i] = callTx(r.fn, sqlTx{tx: tx, c: own})
		if errs[i] == nil {
			all.merge(own)
		} else {
			if _, err := tx.Exec("ROLLBACK TO lasso_tx"); err != nil {
				// The transaction is unusable: fail everyone.
				_ = tx.Rollback()
				for _, r := range batch {
					r.done <- fmt.Errorf("group commit: %w", err)
				}
				return
			}
		}
		if _, err := tx.Exec("RELEASE lasso_tx"); err != nil && errs[i] == nil {
			errs[i] = sqliteErr(err)
		}
	}
	if err := all.flush(tx); err != nil {
		_ = tx.Rollback()
		for _, r := range batch {
			r.done <- fmt.Errorf("group commit: %w", err)
		}
		return
	}
	cerr := sqliteErr(tx.Commit())
	for i, r := range batch {
		if errs[i] == nil {
			errs[i] = cerr
		}
		r.done <- errs[i]
	}
}

func (d *SQLiteDB) runOne(r *txReq) (err error) {
	tx, err := d.write.BeginTx(r.ctx, nil)
	if err != nil {
		return sqliteErr(err)
	}
	own := &collector{}
	if err = callTx(r.fn, sqlTx{tx: tx, c: own}); err == nil {
		err = own.flush(tx)
	}
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	return sqliteErr(tx.Commit())
}

// callTx runs fn, turning a panic into an error so that one caller's bug
// cannot take the committer (and every other caller) down with it.
func callTx(fn func(Tx) error, tx Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in transaction: %v", p)
		}
	}()
	return fn(tx)
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

type sqlTx struct {
	tx *sql.Tx
	c  *collector
}

func (t sqlTx) Raw() any { return t.tx }

func (t sqlTx) Collect(key string, item any, flush Flush) error {
	if t.c == nil { // a transaction that is not grouped
		return flush(context.Background(), t, []any{item})
	}
	t.c.add(key, item, flush)
	return nil
}

// collector gathers Collect calls of one transaction function.
type collector struct {
	keys    []string
	items   map[string][]any
	flushes map[string]Flush
}

func (c *collector) add(key string, item any, flush Flush) {
	if c.items == nil {
		c.items, c.flushes = map[string][]any{}, map[string]Flush{}
	}
	if _, ok := c.items[key]; !ok {
		c.keys = append(c.keys, key)
		c.flushes[key] = flush
	}
	c.items[key] = append(c.items[key], item)
}

func (c *collector) merge(o *collector) {
	for _, k := range o.keys {
		for _, it := range o.items[k] {
			c.add(k, it, o.flushes[k])
		}
	}
}

func (c *collector) flush(tx *sql.Tx) error {
	for _, k := range c.keys {
		if err := c.flushes[k](context.Background(), sqlTx{tx: tx}, c.items[k]); err != nil {
			return err
		}
	}
	return nil
}
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
