package db

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Secret returns the installation-wide secret called name (32 random bytes),
// creating it on first use. It lives in the database, so every node signs
// and verifies with the same key, and it survives restarts.
func Secret(ctx context.Context, d Querier, name string) ([]byte, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	if _, err := d.Exec(ctx, `INSERT INTO content_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
		name, hex.EncodeToString(b[:]), time.Now().UnixMilli()); err != nil {
		return nil, err
	}
	var v string
	if err := d.QueryRow(ctx, `SELECT value FROM content_secrets WHERE name = $1`, name).Scan(&v); err != nil {
		return nil, err
	}
	return hex.DecodeString(v)
}
