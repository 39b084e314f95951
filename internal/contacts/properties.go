package contacts

import (
	"context"
	"fmt"
	"strings"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
)

// CreateProperty defines a custom property. Names are camelCase; reserved and
// built-in names and duplicates are refused with apperr.Invalid.
func (s *Service) CreateProperty(ctx context.Context, teamID, name, typ string) error {
	name = strings.TrimSpace(name)
	if name == "" {
		return apperr.New(apperr.Invalid, "A property name is required.")
	}
	if !ValidType(typ) {
		return apperr.New(apperr.Invalid, "Invalid property type. Must be one of string, number, boolean, date.")
	}
	if len(name) > 100 || !propNameRe.MatchString(name) {
		return apperr.New(apperr.Invalid, "Property names must be camelCase, like planName or importDate.")
	}
	if reserved[name] {
		return apperr.New(apperr.Invalid, "%s is a reserved name and cannot be used.", name)
	}
	if isBuiltin(name) {
		return apperr.New(apperr.Invalid, "Property already exists.")
	}
	_, err := s.db.Exec(ctx, `INSERT INTO contact_properties (team_id, name, label, type, created_at) VALUES ($1, $2, $3, $4, $5)`,
		teamID, name, Label(name), typ, s.now().UnixMilli())
	if db.IsUnique(err) {
		return apperr.New(apperr.Invalid, "Property already exists.")
	}
	if err != nil {
		return fmt.Errorf("create property: %w", err)
	}
	return nil
}

// ListProperties lists the built-in properties (unless customOnly) followed
// by the team's custom ones in creation order.
func (s *Service) ListProperties(ctx context.Context, teamID string, customOnly bool) ([]Property, error) {
	out := []Property{}
	if !customOnly {
		out = append(out, builtins...)
	}
	rows, err := s.db.Query(ctx, `SELECT name, label, type FROM contact_properties WHERE team_id = $1 ORDER BY created_at, name`, teamID)
	if err != nil {
		return nil, fmt.Errorf("list properties: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p Property
		if err := rows.Scan(&p.Key, &p.Label, &p.Type); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
