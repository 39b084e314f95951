package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/testdb"
)

// TestContactsListScale measures the contacts page over many contacts:
// LASSO_SCALE_CONTACTS=1000000 go test -run Scale -v ./internal/dashboard/
// (SQLite; PostgreSQL too with LASSO_TEST_POSTGRES_URL). The target is a
// p95 under 300 ms per page.
func TestContactsListScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LASSO_SCALE_CONTACTS"))
	if n == 0 {
		t.Skip("set LASSO_SCALE_CONTACTS=1000000 to run")
	}
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := start(t, dbURL, nil)
		b := e.setup(t, "Acme", "owner@example.com")
		ctx := context.Background()
		tm, _ := e.app.Accounts.TeamByName(ctx, "Acme")
		list, _ := e.app.Contacts.CreateList(ctx, tm.ID, "Half", "", false)
		seedStart := time.Now()
		base := time.Now().Add(-time.Duration(n) * time.Second).UnixMilli()
		// Generated in SQL (a recursive CTE runs on both databases).
		const batch = 100000
		for i := 0; i < n; i += batch {
			err := e.app.DB.InTx(ctx, func(tx db.Tx) error {
				gen := `WITH RECURSIVE s(j) AS (SELECT CAST($1 AS BIGINT) UNION ALL SELECT j + 1 FROM s WHERE j + 1 < $2) `
				if _, err := tx.Exec(ctx, `INSERT INTO contacts (id, team_id, email, source, subscribed, created_at, updated_at) `+gen+
					`SELECT 'c' || j, $3, 'user' || j || '@example.com', 'Import', j % 3 <> 0, $4 + (j / 2) * 1000, $4 FROM s`,
					int64(i), int64(min(i+batch, n)), tm.ID, base); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO contact_lists (contact_id, list_id, team_id, created_at) `+gen+
					`SELECT 'c' || j, $3, $4, 0 FROM s WHERE j % 2 = 0`, int64(i), int64(min(i+batch, n)), list.ID, tm.ID)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("seeded %d contacts in %v", n, time.Since(seedStart))

		nextRe := regexp.MustCompile(`href="(/contacts\?[^"]*after=[^"]*)" rel="next"`)
		measure := func(name string, paths func(i int, prev string) string) {
			var ds []time.Duration
			prev := ""
			for i := range 100 {
				path := paths(i, prev)
				t0 := time.Now()
				p := b.get(path)
				ds = append(ds, time.Since(t0))
				want(t, p, 200)
				prev = ""
				if m := nextRe.FindStringSubmatch(p.body); m != nil {
					prev = strings.ReplaceAll(m[1], "&amp;", "&")
				}
			}
			slices.Sort(ds)
			p95 := ds[len(ds)*95/100]
			t.Logf("%-28s p50 %8v p95 %8v max %8v", name, ds[len(ds)/2].Round(time.Microsecond), p95.Round(time.Microsecond), ds[len(ds)-1].Round(time.Microsecond))
			if p95 > 300*time.Millisecond {
				t.Errorf("%s: p95 %v > 300ms", name, p95)
			}
		}
		follow := func(first string) func(int, string) string {
			return func(i int, prev string) string {
				if prev == "" {
					return first
				}
				return prev
			}
		}
		measure("first page", func(int, string) string { return "/contacts" })
		measure("next pages", follow("/contacts"))
		measure("search prefix", func(i int, _ string) string { return fmt.Sprintf("/contacts?q=user%04d", i*37) })
		measure("search, next pages", follow("/contacts?q=user1"))
		measure("list filter, next pages", follow("/contacts?list="+list.ID))
		measure("unsubscribed, next pages", follow("/contacts?status=unsubscribed"))
		measure("list+status, next pages", follow("/contacts?status=subscribed&list="+list.ID))
	})
}
