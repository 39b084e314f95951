package db

import (
	"context"
	"fmt"

	"github.com/lasso-mail/lasso/internal/apperr"
)

// Page selects one page of a list: PerPage items starting at Cursor (the id
// of the first item, as returned in NextCursor; "" for the first page).
type Page struct {
	PerPage int
	Cursor  string
}

// List is one page of a list, most recently created first.
type List[T any] struct {
	Items      []T
	Total      int // items of the whole list
	PerPage    int
	NextCursor string // the id of the first item of the next page; "" on the last
}

// Listing is a list read with keyset pagination: the rows of Table that
// match Where (placeholders $1…$len(Args)), newest first by (created_at,
// id). Table, Cols and the conditions are the caller's SQL, never input.
type Listing struct {
	Table, Cols, Where string
	Args               []any
	// CursorWhere and CursorArgs find the cursor's row (default: Where and
	// Args). A list filtered on something that changes, such as a run's
	// status, looks its cursor up in a stabler scope, so that a row that
	// changed since the last page does not invalidate the cursor.
	CursorWhere string
	CursorArgs  []any
}

// Paginate reads page p of l: the total count, then PerPage+1 rows from
// the cursor's (created_at, id) down, scanned with scan; the extra row's
// id (from id) is the next cursor. An unknown cursor is apperr.Invalid
// "Invalid cursor.". p.PerPage must be positive (the callers check it).
func Paginate[T any](ctx context.Context, q Querier, l Listing, p Page, scan func(Rows) (T, error), id func(T) string) (List[T], error) {
	out := List[T]{PerPage: p.PerPage, Items: []T{}}
	if err := q.QueryRow(ctx, `SELECT count(*) FROM `+l.Table+` WHERE `+l.Where, l.Args...).Scan(&out.Total); err != nil {
		return out, fmt.Errorf("count %s: %w", l.Table, err)
	}
	var err error
	where, args := l.Where, append([]any{}, l.Args...)
	if p.Cursor != "" {
		cw, ca := l.CursorWhere, l.CursorArgs
		if cw == "" {
			cw, ca = l.Where, l.Args
		}
		var at int64
		err := q.QueryRow(ctx, `SELECT created_at FROM `+l.Table+` WHERE `+cw+fmt.Sprintf(` AND id = $%d`, len(ca)+1),
			append(append([]any{}, ca...), p.Cursor)...).Scan(&at)
		if err == ErrNoRows {
			return out, apperr.New(apperr.Invalid, "Invalid cursor.")
		}
		if err != nil {
			return out, fmt.Errorf("list %s: %w", l.Table, err)
		}
		n := len(args)
		where += fmt.Sprintf(` AND (created_at < $%d OR (created_at = $%d AND id <= $%d))`, n+1, n+1, n+2)
		args = append(args, at, p.Cursor)
	}
	if out.Items, err = All(ctx, q, scan, `SELECT `+l.Cols+` FROM `+l.Table+` WHERE `+where+fmt.Sprintf(` ORDER BY created_at DESC, id DESC LIMIT %d`, p.PerPage+1), args...); err != nil {
		return out, fmt.Errorf("list %s: %w", l.Table, err)
	}
	if len(out.Items) > p.PerPage {
		out.NextCursor = id(out.Items[p.PerPage])
		out.Items = out.Items[:p.PerPage]
	}
	return out, nil
}
