package db

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

//go:embed migrations
var migrations embed.FS

// migrationLockID is the PostgreSQL advisory lock that serialises migrations
// when several nodes start at once.
const migrationLockID = 0x6c6173736f // "lasso"

// WithMigrationLock runs fn while holding the cluster-wide migration lock
// (PostgreSQL advisory lock; SQLite needs none beyond its own write lock).
func WithMigrationLock(ctx context.Context, d DB, fn func() error) error {
	pg, ok := d.(*PostgresDB)
	if !ok {
		return fn()
	}
	conn, err := pg.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLockID)); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrationLockID))
	return fn()
}

// Migrate applies the embedded schema migrations of d's dialect. Callers
// that may run concurrently hold WithMigrationLock.
func Migrate(ctx context.Context, d DB) error {
	var (
		sqlDB   *sql.DB
		dialect goose.Dialect
		dir     string
	)
	switch d := d.(type) {
	case *SQLiteDB:
		sqlDB, dialect, dir = d.write, goose.DialectSQLite3, "migrations/sqlite"
	case *PostgresDB:
		sqlDB = stdlib.OpenDBFromPool(d.pool)
		defer sqlDB.Close()
		dialect, dir = goose.DialectPostgres, "migrations/postgres"
	default:
		return fmt.Errorf("migrate: unknown database %T", d)
	}
	sub, err := fs.Sub(migrations, dir)
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(dialect, sqlDB, sub, goose.WithDisableGlobalRegistry(true), goose.WithAllowOutofOrder(true))
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
