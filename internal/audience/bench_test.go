package audience

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lasso-mail/lasso/internal/db"
)

// TestCount1M loads 1,000,000 contacts of one team (with four custom
// properties and a campaign's sends) and times Count for typical filters.
// Opt-in: it takes minutes.
//
//	LASSO_BENCH_1M=1 go test -run TestCount1M -v -timeout 60m ./internal/audience/
//
// LASSO_BENCH_DIR keeps the SQLite database between runs (the load is
// skipped when it is already there); LASSO_BENCH_PG_SCHEMA does the same for
// PostgreSQL (a schema of that name in LASSO_TEST_POSTGRES_URL).
// LASSO_BENCH_N changes the number of contacts.
func TestCount1M(t *testing.T) {
	if os.Getenv("LASSO_BENCH_1M") == "" {
		t.Skip("set LASSO_BENCH_1M=1 to run")
	}
	n := 1_000_000
	if v := os.Getenv("LASSO_BENCH_N"); v != "" {
		fmt.Sscan(v, &n)
	}
	t.Run("sqlite", func(t *testing.T) {
		dir := os.Getenv("LASSO_BENCH_DIR")
		if dir == "" {
			dir = t.TempDir()
		}
		bench1M(t, filepath.Join(dir, fmt.Sprintf("audience-%d.db", n)), n)
	})
	t.Run("postgres", func(t *testing.T) {
		base := os.Getenv("LASSO_TEST_POSTGRES_URL")
		if base == "" {
			t.Skip("set LASSO_TEST_POSTGRES_URL")
		}
		schema := os.Getenv("LASSO_BENCH_PG_SCHEMA")
		drop := schema == ""
		if drop {
			schema = fmt.Sprintf("bench_%d", time.Now().UnixNano())
		}
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		if drop {
			t.Cleanup(func() {
				c, err := pgx.Connect(context.Background(), base)
				if err == nil {
					c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
					c.Close(context.Background())
				}
			})
		}
		u, _ := url.Parse(base)
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		bench1M(t, u.String(), n)
	})
}

const benchTeam = "bench"

var benchPlans = []string{"free", "free", "free", "starter", "starter", "Pro", "pro", "enterprise"}
var benchCities = []string{"Berlin", "Paris", "London", "Lisbon", "Madrid", "Rome", "Vienna", "Prague", "Oslo", "Bern",
	"Tokyo", "Osaka", "Lima", "Quito", "Bogotá", "Austin", "Boston", "Denver", "Toronto", "Montréal"}

const benchT0 = 1_700_000_000_000 // signup dates spread over three years before this

func bench1M(t *testing.T, url string, n int) {
	ctx := context.Background()
	d, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	var have int64
	_ = d.QueryRow(ctx, `SELECT count(*) FROM contacts WHERE team_id = $1`, benchTeam).Scan(&have)
	if have != int64(n) {
		start := time.Now()
		if err := loadBench(ctx, d, n); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: loaded %d contacts in %v", d.Dialect(), n, time.Since(start).Round(time.Millisecond))
	} else {
		t.Logf("%s: reusing %d contacts", d.Dialect(), have)
	}
	svc := New(d, Config{})
	cases := []struct {
		name string
		f    Filter
	}{
		{"plan equals pro", Filter{MatchAll, []Condition{Property("plan", OpEquals, "pro")}}},
		{"score greaterThan 900", Filter{MatchAll, []Condition{Property("score", OpGreaterThan, 900)}}},
		{"signup after date", Filter{MatchAll, []Condition{Property("signup", OpAfter, "2023-06-01")}}},
		{"city contains \"ber\"", Filter{MatchAll, []Condition{Property("city", OpContains, "ber")}}},
		{"any of three", Filter{MatchAny, []Condition{Property("plan", OpEquals, "enterprise"), Property("vip", OpIsTrue, nil), Property("score", OpLessThan, 10)}}},
		{"opened campaign", Filter{MatchAll, []Condition{Activity(ActionOpened, TargetCampaign, "campbench", false)}}},
		{"not sent campaign", Filter{MatchAll, []Condition{Activity(ActionSent, TargetCampaign, "campbench", true)}}},
		{"all: plan pro, subscribed, score>500", Filter{MatchAll, []Condition{Property("plan", OpEquals, "pro"), Property("subscribed", OpIsTrue, nil), Property("score", OpGreaterThan, 500)}}},
		{"plan notEquals free", Filter{MatchAll, []Condition{Property("plan", OpNotEquals, "free")}}},
	}
	var report strings.Builder
	for _, c := range cases {
		var times []time.Duration
		var count int64
		for range 3 {
			start := time.Now()
			count, err = svc.Count(ctx, benchTeam, c.f)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		fmt.Fprintf(&report, "| %s | %s | %d | %v | %v |\n", d.Dialect(), c.name, count, times[0].Round(time.Millisecond), times[1].Round(time.Millisecond))
	}
	t.Logf("\n| db | filter | count | best | median |\n|---|---|---|---|---|\n%s", report.String())

	// For comparison: the same count as a predicate over every contact (the
	// Compile form, which CountAudience uses), and keyset pages.
	report.Reset()
	for _, c := range cases[:2] {
		start := time.Now()
		n, err := svc.CountAudience(ctx, benchTeam, Audience{Filters: []Filter{c.f}})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&report, "| %s | %s | predicate count | %d | %v |\n", d.Dialect(), c.name, n, time.Since(start).Round(time.Millisecond))
		start = time.Now()
		after, pages, total := "", 0, 0
		for pages < 20 {
			ids, err := svc.ContactIDs(ctx, benchTeam, c.f, after, 1000)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			total += len(ids)
			if len(ids) < 1000 {
				break
			}
			after = ids[len(ids)-1]
		}
		fmt.Fprintf(&report, "| %s | %s | ContactIDs, %d pages of 1000 | %d | %v per page |\n", d.Dialect(), c.name, pages, total, (time.Since(start) / time.Duration(pages)).Round(time.Millisecond))
	}
	t.Logf("\n%s", report.String())
}

// loadBench bulk-loads n contacts with multi-row INSERTs, 50,000 contacts
// per transaction.
func loadBench(ctx context.Context, d db.DB, n int) error {
	_, err := d.Exec(ctx, `INSERT INTO teams (id, name, created_at) VALUES ($1, $1, 0) ON CONFLICT DO NOTHING`, benchTeam)
	if err != nil {
		return err
	}
	for _, p := range [][2]string{{"plan", String}, {"city", String}, {"score", Number}, {"signup", Date}, {"vip", Boolean}} {
		if _, err := d.Exec(ctx, `INSERT INTO contact_properties (team_id, name, label, type, created_at) VALUES ($1, $2, $2, $3, 0) ON CONFLICT DO NOTHING`, benchTeam, p[0], p[1]); err != nil {
			return err
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	const perTx = 50_000
	for base := 0; base < n; base += perTx {
		end := min(base+perTx, n)
		var contacts, values, sends []any
		for i := base; i < end; i++ {
			id := fmt.Sprintf("cbench%019d", i)
			contacts = append(contacts, id, benchTeam, fmt.Sprintf("user%d@example.com", i), "API", r.IntN(10) > 0, int64(benchT0-r.IntN(3*365)*86_400_000))
			if r.IntN(10) > 0 {
				values = append(values, id, benchTeam, "plan", pick(r, benchPlans), nil)
			}
			if r.IntN(10) > 0 {
				values = append(values, id, benchTeam, "city", pick(r, benchCities), nil)
			}
			if r.IntN(10) > 0 {
				values = append(values, id, benchTeam, "score", nil, float64(r.IntN(1001)))
			}
			if r.IntN(10) > 0 {
				values = append(values, id, benchTeam, "signup", nil, float64(benchT0-r.IntN(3*365)*86_400_000))
			}
			if r.IntN(2) == 0 {
				values = append(values, id, benchTeam, "vip", nil, float64(r.IntN(10)/9))
			}
			if r.IntN(2) == 0 {
				var opened any
				if r.IntN(5) == 0 {
					opened = int64(benchT0 + 1000)
				}
				sends = append(sends, "sbench"+id[6:], benchTeam, id, "campaign", "campbench", "delivered", int64(benchT0), opened)
			}
		}
		err := d.InTx(ctx, func(tx db.Tx) error {
			if err := insertRows(ctx, tx, d.Dialect(), `INSERT INTO contacts (id, team_id, email, source, subscribed, created_at, updated_at) VALUES `,
				"($%d, $%d, $%d, $%d, $%d, $%d, 0)", 6, contacts); err != nil {
				return err
			}
			if err := insertRows(ctx, tx, d.Dialect(), `INSERT INTO contact_values (contact_id, team_id, name, str, num) VALUES `,
				"($%d, $%d, $%d, $%d, $%d)", 5, values); err != nil {
				return err
			}
			return insertRows(ctx, tx, d.Dialect(), `INSERT INTO sends (id, team_id, contact_id, recipient, source_type, source_id, source_name, payload, status, created_at, updated_at, sent_at, opened_at) VALUES `,
				"($%d, $%d, $%d, 'r@example.com', $%d, $%d, 'Bench', '{}', $%d, $%d, 0, $%[7]d, $%d)", 8, sends)
		})
		if err != nil {
			return err
		}
	}
	if d.Dialect() == db.Postgres {
		_, err = d.Exec(ctx, `VACUUM ANALYZE`) // sets the visibility map for index-only scans
	} else {
		_, err = d.Exec(ctx, `ANALYZE`)
	}
	return err
}

// insertRows inserts flat args, cols per row, 1000 rows per statement.
func insertRows(ctx context.Context, tx db.Tx, dialect db.Dialect, head, tuple string, cols int, args []any) error {
	// modernc's SQLite binds $N parameters in quadratic time: keep its
	// statements small.
	perStmt := 1000
	if dialect == db.SQLite {
		perStmt = 100
	}
	for start := 0; start < len(args); start += perStmt * cols {
		chunk := args[start:min(start+perStmt*cols, len(args))]
		var b strings.Builder
		b.WriteString(head)
		for r := 0; r < len(chunk)/cols; r++ {
			if r > 0 {
				b.WriteString(", ")
			}
			nums := make([]any, cols)
			for c := range cols {
				nums[c] = r*cols + c + 1
			}
			fmt.Fprintf(&b, tuple, nums...)
		}
		if _, err := tx.Exec(ctx, b.String(), chunk...); err != nil {
			return err
		}
	}
	return nil
}
