package contacts

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
)

// SearchQuery selects one page of a team's contacts for the dashboard.
type SearchQuery struct {
	// Email, when set, keeps the contacts whose address starts with it
	// (case-insensitive); results are then ordered by address.
	Email string
	// ListID, when set, keeps the members of that mailing list.
	ListID string
	// Subscribed, when set, keeps the contacts in that state.
	Subscribed *bool
	// After is the Next cursor of the previous page ("" for the first).
	After string
	// Limit is the page size (default 50, at most 200).
	Limit int
}

// SearchPage is one page of contacts (built-in fields only) and the cursor
// of the next page ("" on the last page).
type SearchPage struct {
	Contacts []Contact
	Next     string
}

// Search returns a page of contacts using keyset pagination: newest first
// over the (team_id, created_at, id) index, or by address over the
// (team_id, email) index when Email is set. It never counts nor skips rows,
// so every page costs the same on a million contacts. A list or
// subscription filter is applied while walking that index.
func (s *Service) Search(ctx context.Context, teamID string, q SearchQuery) (SearchPage, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	if limit > 200 {
		limit = 200
	}
	args := []any{teamID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	where := []string{"c.team_id = $1"}
	byEmail := strings.TrimSpace(q.Email) != ""
	var order string
	if byEmail {
		prefix := strings.ToLower(strings.TrimSpace(q.Email))
		// A range, not LIKE: it uses the (team_id, email) index on both
		// databases whatever the collation.
		where = append(where, "c.email >= "+arg(prefix), "c.email < "+arg(prefix+"\U0010FFFF"))
		if q.After != "" {
			after, err := decodeCursor(q.After)
			if err != nil {
				return SearchPage{}, err
			}
			where = append(where, "c.email > "+arg(after))
		}
		order = "c.email"
	} else {
		if q.After != "" {
			raw, err := decodeCursor(q.After)
			if err != nil {
				return SearchPage{}, err
			}
			msStr, id, ok := strings.Cut(raw, ":")
			ms, perr := strconv.ParseInt(msStr, 10, 64)
			if !ok || perr != nil {
				return SearchPage{}, apperr.New(apperr.Invalid, "Invalid page cursor.")
			}
			// The leading bound keeps it an index range scan; the OR breaks ties.
			m := arg(ms)
			where = append(where, fmt.Sprintf("c.created_at <= %s AND (c.created_at < %s OR c.id < %s)", m, m, arg(id)))
		}
		order = "c.created_at DESC, c.id DESC"
	}
	if q.Subscribed != nil {
		where = append(where, "c.subscribed = "+arg(*q.Subscribed))
	}
	if q.ListID != "" {
		where = append(where, "EXISTS (SELECT 1 FROM contact_lists cl WHERE cl.contact_id = c.id AND cl.list_id = "+arg(q.ListID)+")")
	}
	query := `SELECT c.id, c.email, c.user_id, c.first_name, c.last_name, c.source, c.subscribed, c.created_at, c.updated_at
		FROM contacts c WHERE ` + strings.Join(where, " AND ") + ` ORDER BY ` + order + ` LIMIT ` + arg(limit+1)
	rows, err := s.db.Query(ctx, query, args...)
	if err != nil {
		return SearchPage{}, fmt.Errorf("search contacts: %w", err)
	}
	defer rows.Close()
	var page SearchPage
	for rows.Next() {
		var c Contact
		var created, updated int64
		if err := rows.Scan(&c.ID, &c.Email, &c.UserID, &c.FirstName, &c.LastName, &c.Source, &c.Subscribed, &created, &updated); err != nil {
			return SearchPage{}, err
		}
		c.TeamID = teamID
		c.CreatedAt = time.UnixMilli(created).UTC()
		c.UpdatedAt = time.UnixMilli(updated).UTC()
		page.Contacts = append(page.Contacts, c)
	}
	if err := rows.Err(); err != nil {
		return SearchPage{}, err
	}
	if len(page.Contacts) > limit {
		page.Contacts = page.Contacts[:limit]
		last := page.Contacts[limit-1]
		if byEmail {
			page.Next = encodeCursor(last.Email)
		} else {
			page.Next = encodeCursor(strconv.FormatInt(last.CreatedAt.UnixMilli(), 10) + ":" + last.ID)
		}
	}
	return page, nil
}

func encodeCursor(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func decodeCursor(s string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", apperr.New(apperr.Invalid, "Invalid page cursor.")
	}
	return string(b), nil
}
