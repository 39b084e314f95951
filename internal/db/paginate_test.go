package db_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/testdb"
)

// TestPaginate walks a list with ties in created_at page by page: newest
// first, ties broken by id, no row twice or missing, the filter respected,
// and an unknown cursor refused.
func TestPaginate(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		d := openWith(t, url, `CREATE TABLE items (id TEXT PRIMARY KEY, team TEXT NOT NULL, created_at INTEGER NOT NULL)`)
		// 23 items of team a, three per millisecond, plus team b's.
		var want []string // newest first
		for i := 22; i >= 0; i-- {
			want = append(want, fmt.Sprintf("a%02d", i))
		}
		for i := range 23 {
			if _, err := d.Exec(ctx, `INSERT INTO items (id, team, created_at) VALUES ($1, 'a', $2), ($3, 'b', $2)`,
				fmt.Sprintf("a%02d", i), 1000+i/3, fmt.Sprintf("b%02d", i)); err != nil {
				t.Fatal(err)
			}
		}
		l := db.Listing{Table: "items", Cols: "id", Where: "team = $1", Args: []any{"a"}}
		scan := func(r db.Rows) (string, error) {
			var id string
			err := r.Scan(&id)
			return id, err
		}
		self := func(s string) string { return s }

		var got []string
		p := db.Page{PerPage: 5}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("pagination does not end")
			}
			page, err := db.Paginate(ctx, d, l, p, scan, self)
			if err != nil {
				t.Fatal(err)
			}
			if page.Total != 23 || page.PerPage != 5 {
				t.Fatalf("total %d perPage %d", page.Total, page.PerPage)
			}
			got = append(got, page.Items...)
			if page.NextCursor == "" {
				if len(page.Items) != 3 {
					t.Fatalf("last page has %d items", len(page.Items))
				}
				break
			}
			if len(page.Items) != 5 {
				t.Fatalf("page of %d items before the last", len(page.Items))
			}
			p.Cursor = page.NextCursor
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("walk:\n got %v\nwant %v", got, want)
		}

		// A cursor of another scope, or of nothing, is invalid.
		for _, c := range []string{"b05", "zzz"} {
			_, err := db.Paginate(ctx, d, l, db.Page{PerPage: 5, Cursor: c}, scan, self)
			var ae *apperr.Error
			if !errors.As(err, &ae) || !errors.Is(err, apperr.Invalid) {
				t.Fatalf("cursor %s: %v", c, err)
			}
		}
		// CursorWhere: the cursor is looked up in a wider scope than the
		// list (a row whose filtered value changed keeps its place).
		wide := l
		wide.Where, wide.Args = "team = $1 AND id <> $2", []any{"a", "a10"}
		wide.CursorWhere, wide.CursorArgs = "team = $1", []any{"a"}
		page, err := db.Paginate(ctx, d, wide, db.Page{PerPage: 3, Cursor: "a10"}, scan, self)
		if err != nil || fmt.Sprint(page.Items) != "[a09 a08 a07]" || page.Total != 22 {
			t.Fatalf("cursor outside the filter: %v %v (total %d)", page.Items, err, page.Total)
		}
	})
}

// TestPrune deletes in batches until nothing matches, with a composite key.
func TestPrune(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		d := openWith(t, url, `CREATE TABLE marks (a TEXT NOT NULL, b INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (a, b))`)
		const old = db.PruneBatch*2 + 17
		if err := d.InTx(ctx, func(tx db.Tx) error {
			for i := range old + 10 {
				at := 1
				if i >= old {
					at = 100
				}
				if _, err := tx.Exec(ctx, `INSERT INTO marks (a, b, at) VALUES ($1, $2, $3)`, fmt.Sprint(i%7), i, at); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		n, err := db.Prune(ctx, d, "marks", "a, b", "at < $1", "at", 50)
		if err != nil || n != old {
			t.Fatalf("pruned %d, want %d: %v", n, old, err)
		}
		var left int
		if err := d.QueryRow(ctx, `SELECT count(*) FROM marks`).Scan(&left); err != nil || left != 10 {
			t.Fatalf("%d rows left: %v", left, err)
		}
	})
}
