package db_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/lasso-mail/lasso/internal/db"
)

// The SQLite statement cache (stmtcache.go) must give the same results as
// compiling every statement: the same text run again while its rows are
// open, a failed statement run again, more distinct statements than the
// cache holds while rows of an evicted one are open, and transactions on
// the single writer connection.
func TestSQLiteStatementCache(t *testing.T) {
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Exec(ctx, `CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	const ins = `INSERT INTO kv (k, v) VALUES ($1, $2)`
	for i := range 50 {
		if _, err := d.Exec(ctx, ins, i, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	// A constraint error leaves the statement usable.
	if _, err := d.Exec(ctx, ins, 100, "v1"); !db.IsUnique(err) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := d.Exec(ctx, ins, 50, "v50"); err != nil {
		t.Fatal(err)
	}

	const sel = `SELECT k, v FROM kv WHERE k >= $1 ORDER BY k`
	err = d.InTx(ctx, func(tx db.Tx) error {
		outer, err := tx.Query(ctx, sel, 40)
		if err != nil {
			return err
		}
		defer outer.Close()
		n := 0
		for outer.Next() {
			var k int
			var v string
			if err := outer.Scan(&k, &v); err != nil {
				return err
			}
			if v != fmt.Sprint("v", k) || k != 40+n {
				return fmt.Errorf("outer row %d: %d %q", n, k, v)
			}
			// The same text while the outer rows are open, and writes.
			inner, err := tx.Query(ctx, sel, 49)
			if err != nil {
				return err
			}
			m := 0
			for inner.Next() {
				m++
			}
			inner.Close()
			if m != 2 {
				return fmt.Errorf("inner rows %d, want 2", m)
			}
			if _, err := tx.Exec(ctx, `UPDATE kv SET v = v WHERE k = $1`, k); err != nil {
				return err
			}
			// Many distinct statements: the cache starts over meanwhile.
			for j := range 300 {
				var one int
				if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT %d + 0 * $1`, j), 1).Scan(&one); err != nil || one != j {
					return fmt.Errorf("distinct %d: %d %v", j, one, err)
				}
			}
			n++
		}
		if err := outer.Err(); err != nil {
			return err
		}
		if n != 11 {
			return fmt.Errorf("outer rows %d, want 11", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // reads on the read pool, again and again
		var c int
		if err := d.QueryRow(ctx, `SELECT count(*) FROM kv WHERE v LIKE $1`, "v%").Scan(&c); err != nil || c != 51 {
			t.Fatalf("count %d %v", c, err)
		}
	}
}
