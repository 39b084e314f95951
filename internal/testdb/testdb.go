// Package testdb gives tests fresh databases of both dialects: a SQLite file
// in a temp dir, and (when LASSO_TEST_POSTGRES_URL is set) a fresh schema in
// PostgreSQL, dropped at the end. In CI (CI=true) the PostgreSQL half is
// required, never skipped. Only _test.go files import it.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Dialects are the names Each runs subtests under.
var Dialects = []string{"sqlite", "postgres"}

// Each runs fn once per database dialect, as subtests "sqlite" and
// "postgres", each with the URL of a fresh, empty database.
func Each(t *testing.T, fn func(t *testing.T, url string)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(d, func(t *testing.T) {
			fn(t, URL(t, d))
		})
	}
}

// URL returns a fresh database URL of the dialect, skipping PostgreSQL when
// it is not configured (outside CI).
func URL(t testing.TB, dialect string) string {
	t.Helper()
	if dialect == "sqlite" {
		return filepath.Join(t.TempDir(), "lasso.db")
	}
	base := os.Getenv("LASSO_TEST_POSTGRES_URL")
	if base == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("LASSO_TEST_POSTGRES_URL is required in CI")
		}
		t.Skip("PostgreSQL: set LASSO_TEST_POSTGRES_URL to run")
	}
	return PostgresSchema(t, base)
}

// PostgresSchema creates a fresh schema in the database at base and returns a
// URL whose search_path selects it. The schema is dropped at cleanup.
func PostgresSchema(t testing.TB, base string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect postgres: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse url: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
