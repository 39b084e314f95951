package db

import (
	"context"
	"fmt"
	"strings"
)

// PruneBatch is how many rows one Prune transaction deletes: expired
// history can be millions of rows, and on SQLite a transaction holds the
// one writer that intake waits for.
const PruneBatch = 1000

// Prune deletes the rows of table that match where (its placeholders are
// $1…$len(args)), PruneBatch rows per transaction, oldest first by
// orderBy, until none is left, and returns how many rows it deleted. key is
// the table's primary key: a column, or columns separated by commas.
// Tables, columns and conditions are the caller's SQL, never user input.
func Prune(ctx context.Context, d DB, table, key, where, orderBy string, args ...any) (int64, error) {
	match := key
	if strings.Contains(key, ",") {
		match = "(" + key + ")"
	}
	q := fmt.Sprintf(`DELETE FROM %s WHERE %s IN (SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT %d)`,
		table, match, key, table, where, orderBy, PruneBatch)
	var total int64
	for {
		var n int64
		err := d.InTx(ctx, func(tx Tx) error {
			var err error
			n, err = tx.Exec(ctx, q, args...)
			return err
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("prune %s: %w", table, err)
		}
		if n < PruneBatch {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
