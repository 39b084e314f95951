package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"reflect"
	"sync/atomic"
)

// SQLite statement cache.
//
// modernc's database/sql driver compiles the SQL of every Exec and Query
// (sqlite3_prepare) and throws the statement away afterwards; under load
// that parsing was a third of the server's CPU. This connector wraps the
// driver so that each connection keeps the statements it compiled, by SQL
// text, and runs the next Exec or Query of the same text on the compiled
// statement (modernc resets a single-statement handle for reuse). It works
// below database/sql, so the queue's queries (River, on the writer pool)
// are cached too, and a transaction never needs a second connection to
// prepare on.
//
// A statement is used by one caller at a time: while rows of it are open,
// the same text runs uncached. A connection keeps at most maxStmts
// statements; past that it starts over.

const maxStmts = 512

// cacheConnector opens connections of the wrapped driver with a statement
// cache.
type cacheConnector struct {
	dsn  string
	base driver.Driver
}

func (c cacheConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.base.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	bc, ok := conn.(baseConn)
	if !ok {
		return conn, nil // not the driver we know: uncached
	}
	return &cacheConn{baseConn: bc, stmts: map[string]*cachedStmt{}}, nil
}

func (c cacheConnector) Driver() driver.Driver { return c.base }

// openCached opens a *sql.DB on the driver registered as name, with the
// statement cache.
func openCached(name, dsn string) (*sql.DB, error) {
	probe, err := sql.Open(name, "")
	if err != nil {
		return nil, err
	}
	base := probe.Driver()
	_ = probe.Close()
	return sql.OpenDB(cacheConnector{dsn: dsn, base: base}), nil
}

// baseConn is what modernc's connection implements and database/sql uses.
type baseConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type cachedStmt struct {
	s    driver.Stmt
	busy atomic.Bool
}

type cacheConn struct {
	baseConn
	stmts map[string]*cachedStmt
}

// stmt returns the cached statement for q, compiling it on first use; nil
// when it is in use (the caller runs q uncached).
func (c *cacheConn) stmt(ctx context.Context, q string) (*cachedStmt, error) {
	if cs, ok := c.stmts[q]; ok {
		if cs.busy.CompareAndSwap(false, true) {
			return cs, nil
		}
		return nil, nil
	}
	s, err := c.baseConn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if _, ok := s.(driver.StmtQueryContext); !ok {
		_ = s.Close()
		return nil, nil
	}
	if _, ok := s.(driver.StmtExecContext); !ok {
		_ = s.Close()
		return nil, nil
	}
	if len(c.stmts) >= maxStmts {
		c.closeStmts()
	}
	cs := &cachedStmt{s: s}
	cs.busy.Store(true)
	c.stmts[q] = cs
	return cs, nil
}

func (c *cacheConn) closeStmts() {
	for q, cs := range c.stmts {
		if !cs.busy.Load() { // a busy one is closed by its rows
			_ = cs.s.Close()
		} else {
			cs.busy.Store(false)
			orphan := cs.s
			cs.s = closeOnRelease{orphan}
		}
		delete(c.stmts, q)
	}
}

// closeOnRelease marks a statement evicted while its rows were open.
type closeOnRelease struct{ driver.Stmt }

func (c *cacheConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	cs, err := c.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.baseConn.ExecContext(ctx, q, args)
	}
	defer cs.busy.Store(false)
	return cs.s.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cacheConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	cs, err := c.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.baseConn.QueryContext(ctx, q, args)
	}
	rows, err := cs.s.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		cs.busy.Store(false)
		return nil, err
	}
	return &cachedRows{Rows: rows, cs: cs}, nil
}

func (c *cacheConn) Close() error {
	for _, cs := range c.stmts {
		_ = cs.s.Close()
	}
	c.stmts = nil
	return c.baseConn.Close()
}

// cachedRows releases its statement when closed.
type cachedRows struct {
	driver.Rows
	cs     *cachedStmt
	closed bool
}

func (r *cachedRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.Rows.Close()
	if o, ok := r.cs.s.(closeOnRelease); ok { // evicted meanwhile
		return errors.Join(err, o.Stmt.Close())
	}
	r.cs.busy.Store(false)
	return err
}

// Column type information, when the driver's rows have it (Rows.ColumnTypes).

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if x, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return x.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if x, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return x.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(i int) (bool, bool) {
	if x, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return x.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if x, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return x.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if x, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return x.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}
