package db_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/testdb"
)

// TestInTxIsolation runs many concurrent transactions, a third of which fail
// or panic after writing: on SQLite they share group commits, yet only the
// successful ones' writes remain, on both dialects.
func TestInTxIsolation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		d := openWith(t, url, `CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`)
		boom := errors.New("boom")
		const n = 300
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = d.InTx(ctx, func(tx db.Tx) error {
					if _, err := tx.Exec(ctx, `INSERT INTO kv (k, v) VALUES ($1, $2)`, fmt.Sprint("k", i), i); err != nil {
						return err
					}
					switch i % 3 {
					case 1:
						return boom
					case 2:
						if i%2 == 0 {
							panic("bug")
						}
						// A unique violation inside the transaction.
						_, err := tx.Exec(ctx, `INSERT INTO kv (k, v) VALUES ($1, $2)`, fmt.Sprint("k", i), i)
						return err
					}
					return nil
				})
			}()
		}
		wg.Wait()
		var count int
		if err := d.QueryRow(ctx, `SELECT count(*) FROM kv`).Scan(&count); err != nil {
			t.Fatal(err)
		}
		if count != n/3 {
			t.Fatalf("rows = %d, want %d", count, n/3)
		}
		for i, err := range errs {
			switch i % 3 {
			case 0:
				if err != nil {
					t.Fatalf("tx %d: %v", i, err)
				}
			case 1:
				if !errors.Is(err, boom) {
					t.Fatalf("tx %d: %v", i, err)
				}
			}
		}
	})
}

// TestCollect checks that items collected by transactions that succeed are
// flushed inside their transaction (and those of failed ones are not), and
// that on SQLite concurrent transactions share flushes.
func TestCollect(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		d := openWith(t, url, `CREATE TABLE items (k TEXT PRIMARY KEY)`)
		var mu sync.Mutex
		flushes := 0
		flush := func(ctx context.Context, tx db.Tx, items []any) error {
			mu.Lock()
			flushes++
			mu.Unlock()
			for _, it := range items {
				if _, err := tx.Exec(ctx, `INSERT INTO items (k) VALUES ($1)`, it.(string)); err != nil {
					return err
				}
			}
			return nil
		}
		const n = 200
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = d.InTx(ctx, func(tx db.Tx) error {
					if err := tx.Collect("items", fmt.Sprint("k", i), flush); err != nil {
						return err
					}
					if i%4 == 0 {
						return errors.New("fail after collecting")
					}
					return nil
				})
			}()
		}
		wg.Wait()
		var count int
		if err := d.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&count); err != nil {
			t.Fatal(err)
		}
		if count != n-n/4 {
			t.Fatalf("items = %d, want %d", count, n-n/4)
		}
		t.Logf("%s: %d transactions, %d flushes", d.Dialect(), n, flushes)
	})
}

// openWith opens a fresh database of the test and runs its schema.
func openWith(t *testing.T, url, schema string) db.DB {
	t.Helper()
	d, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := d.Exec(context.Background(), schema); err != nil {
		t.Fatal(err)
	}
	return d
}
