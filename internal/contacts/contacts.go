// Package contacts owns the audience: contacts with typed custom properties,
// mailing lists and list membership, subscription state and suppression.
//
// Custom property values are stored one row per contact and property in
// contact_values, typed (str or num) and indexed by (team, property, value),
// so audience filters compile to index scans on both databases.
package contacts

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"sort"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// Contact is one member of a team's audience.
type Contact struct {
	ID           string
	TeamID       string
	Email        string
	UserID       *string
	FirstName    *string
	LastName     *string
	Notes        *string
	Source       string
	Subscribed   bool
	UserGroup    string
	OptInStatus  *string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	MailingLists []string
	// Custom holds every custom property of the team by name, nil when unset.
	Custom map[string]any
}

// Property is a contact property definition.
type Property struct {
	Key   string `json:"key"`
	Label string `json:"label"`
	Type  string `json:"type"`
}

// builtins are the default properties, in the order the API lists them.
var builtins = []Property{
	{"firstName", "First Name", TypeString},
	{"lastName", "Last Name", TypeString},
	{"email", "Email", TypeString},
	{"notes", "Notes", TypeString},
	{"source", "Source", TypeString},
	{"userGroup", "User Group", TypeString},
	{"userId", "User Id", TypeString},
	{"subscribed", "Subscribed", TypeBoolean},
	{"createdAt", "Created At", TypeDate},
}

// reserved names can never be custom properties nor set through the API.
var reserved = map[string]bool{
	"id": true, "listId": true, "softDeleteAt": true, "teamId": true, "updatedAt": true,
	"mailingLists": true, "optInStatus": true, "createdAt": true,
}

func isBuiltin(name string) bool {
	for _, p := range builtins {
		if p.Key == name {
			return true
		}
	}
	return false
}

// Config holds the audience rules that are policy, not contract.
type Config struct {
	// SuppressionRemovalLimit is the number of suppression removals a team
	// may make in any rolling 30 days (default 100).
	SuppressionRemovalLimit int
}

// Announcer receives the contact webhooks (contact.created, …) inside the
// transaction that caused them. payload is called only if wanted.
type Announcer interface {
	Announce(ctx context.Context, tx db.Tx, teamID, event string, payload func() (map[string]any, error)) error
}

// Service manages contacts, properties, lists and suppression.
type Service struct {
	db       db.DB
	now      func() time.Time
	cfg      Config
	announce Announcer
	hook     ChangeHook
}

// SetAnnouncer wires the webhook announcer (optional).
func (s *Service) SetAnnouncer(a Announcer) { s.announce = a }

func (s *Service) emit(ctx context.Context, tx db.Tx, teamID, event string, payload func() (map[string]any, error)) error {
	if s.announce == nil {
		return nil
	}
	return s.announce.Announce(ctx, tx, teamID, event, payload)
}

// Identity returns the webhook contactIdentity object.
func (c *Contact) Identity() map[string]any {
	return map[string]any{"id": c.ID, "email": c.Email, "userId": c.UserID}
}

// JSON renders the contract's Contact object (§6.1): built-in keys, the
// lists the contact is on ({id: true}) and every custom property.
func (c *Contact) JSON() map[string]any {
	lists := make(map[string]bool, len(c.MailingLists))
	for _, l := range c.MailingLists {
		lists[l] = true
	}
	m := make(map[string]any, 10+len(c.Custom))
	for k, v := range c.Custom {
		m[k] = v
	}
	m["id"] = c.ID
	m["email"] = c.Email
	m["firstName"] = c.FirstName
	m["lastName"] = c.LastName
	m["source"] = c.Source
	m["subscribed"] = c.Subscribed
	m["userGroup"] = c.UserGroup
	m["userId"] = c.UserID
	m["mailingLists"] = lists
	m["optInStatus"] = c.OptInStatus
	return m
}

func (s *Service) contactPayload(ctx context.Context, tx db.Tx, teamID, id string, withContact bool, extra map[string]any) func() (map[string]any, error) {
	return func() (map[string]any, error) {
		c, err := s.get(ctx, tx, teamID, id)
		if err != nil {
			return nil, err
		}
		m := map[string]any{"contactIdentity": c.Identity()}
		if withContact {
			m["contact"] = c.JSON()
		}
		for k, v := range extra {
			m[k] = v
		}
		return m, nil
	}
}

func (s *Service) listPayload(ctx context.Context, tx db.Tx, teamID, contactID, listID string) func() (map[string]any, error) {
	return func() (map[string]any, error) {
		var l List
		if err := tx.QueryRow(ctx, `SELECT id, name, description, is_public FROM mailing_lists WHERE id = $1`, listID).Scan(&l.ID, &l.Name, &l.Description, &l.IsPublic); err != nil {
			return nil, err
		}
		return s.contactPayload(ctx, tx, teamID, contactID, false, map[string]any{"mailingList": l.JSON()})()
	}
}

// JSON renders the contract's MailingList object (§6.2).
func (l List) JSON() map[string]any {
	return map[string]any{"id": l.ID, "name": l.Name, "description": l.Description, "isPublic": l.IsPublic}
}

// New returns a Service. now may be nil.
func New(d db.DB, cfg Config, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	if cfg.SuppressionRemovalLimit == 0 {
		cfg.SuppressionRemovalLimit = 100
	}
	return &Service{db: d, now: now, cfg: cfg}
}

// NormalizeEmail validates an address and returns its canonical (lowercase)
// form, or an apperr.Invalid error.
func NormalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" || len(s) > 254 {
		return "", apperr.New(apperr.Invalid, "Invalid email address.")
	}
	at := strings.LastIndexByte(s, '@')
	if at < 1 || !strings.Contains(s[at+1:], ".") || strings.HasSuffix(s, ".") {
		return "", apperr.New(apperr.Invalid, "Invalid email address.")
	}
	return strings.ToLower(s), nil
}

// Upsert is the input of Create, Update and the contact part of events.
type Upsert struct {
	Email  string // "" when not given
	UserID string // "" when not given
	// Props holds every other body key, decoded with json.Decoder.UseNumber:
	// built-in fields (firstName, subscribed, …) and custom properties. A nil
	// value resets the property.
	Props        map[string]any
	MailingLists map[string]bool
	// NoTriggers keeps the change from the ChangeHook (workflow triggers),
	// e.g. an import made with "trigger workflows" off.
	NoTriggers bool
}

// Result tells what an upsert did.
type Result struct {
	ID      string
	Created bool
}

// Create creates a contact; apperr.Conflict if the email or userId exists.
func (s *Service) Create(ctx context.Context, teamID string, in Upsert) (Result, error) {
	var res Result
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		var err error
		res, err = s.upsertTx(ctx, tx, teamID, in, modeCreate)
		return err
	})
	return res, err
}

// Update updates the contact matching either identifier, or creates one.
func (s *Service) Update(ctx context.Context, teamID string, in Upsert) (Result, error) {
	var res Result
	err := retryUnique(func() error {
		return s.db.InTx(ctx, func(tx db.Tx) error {
			var err error
			res, err = s.upsertTx(ctx, tx, teamID, in, modeUpsert)
			return err
		})
	})
	return res, err
}

// UpsertTx is Update inside the caller's transaction (for events). Callers
// retry the whole transaction on db.ErrUnique (see RetryUnique).
func (s *Service) UpsertTx(ctx context.Context, tx db.Tx, teamID string, in Upsert) (Result, error) {
	return s.upsertTx(ctx, tx, teamID, in, modeUpsert)
}

// RetryUnique runs fn again (up to three times) when it fails on a unique
// constraint: two concurrent upserts that both found nothing and both
// inserted; the retry finds the winner's row.
func RetryUnique(fn func() error) error { return retryUnique(fn) }

func retryUnique(fn func() error) error {
	var err error
	for range 3 {
		if err = fn(); !db.IsUnique(err) {
			return err
		}
	}
	return err
}

type mode int

const (
	modeCreate mode = iota
	modeUpsert
)

// row is the built-in columns of a contact as they will be written.
type row struct {
	email, source, userGroup                  string
	userID, firstName, lastName, notes, optIn *string
	subscribed                                bool
}

func (s *Service) upsertTx(ctx context.Context, tx db.Tx, teamID string, in Upsert, m mode) (Result, error) {
	var err error
	if in.Email != "" {
		if in.Email, err = NormalizeEmail(in.Email); err != nil {
			return Result{}, err
		}
	}
	if m == modeCreate && in.Email == "" {
		return Result{}, apperr.New(apperr.Invalid, "An email address is required.")
	}
	if in.Email == "" && in.UserID == "" {
		return Result{}, apperr.New(apperr.Invalid, "An email or userId is required.")
	}
	defs, err := s.propertyTypes(ctx, tx, teamID)
	if err != nil {
		return Result{}, err
	}

	// Find by either identifier.
	var byEmail, byUser string
	if in.Email != "" {
		byEmail, err = lookupID(ctx, tx, `SELECT id FROM contacts WHERE team_id = $1 AND email = $2`, teamID, in.Email)
		if err != nil {
			return Result{}, err
		}
	}
	if in.UserID != "" {
		byUser, err = lookupID(ctx, tx, `SELECT id FROM contacts WHERE team_id = $1 AND user_id = $2`, teamID, in.UserID)
		if err != nil {
			return Result{}, err
		}
	}
	if m == modeCreate && (byEmail != "" || byUser != "") {
		return Result{}, apperr.New(apperr.Conflict, "Email or `userId` already exists.")
	}
	if byEmail != "" && byUser != "" && byEmail != byUser {
		return Result{}, apperr.New(apperr.Invalid, "The email and userId belong to two different contacts.")
	}
	id := byEmail
	if id == "" {
		id = byUser
	}
	if id == "" && in.Email == "" {
		return Result{}, apperr.New(apperr.Invalid, "Contact not found.")
	}

	now := s.now().UnixMilli()
	var r row
	created := id == ""
	wasSubscribed := false
	if created {
		r = row{email: in.Email, source: "API", subscribed: true}
	} else {
		if err := tx.QueryRow(ctx, `SELECT email, source, user_group, user_id, first_name, last_name, notes, opt_in_status, subscribed FROM contacts WHERE id = $1`, id).
			Scan(&r.email, &r.source, &r.userGroup, &r.userID, &r.firstName, &r.lastName, &r.notes, &r.optIn, &r.subscribed); err != nil {
			return Result{}, fmt.Errorf("load contact: %w", err)
		}
		if in.Email != "" {
			r.email = in.Email
		}
		wasSubscribed = r.subscribed
	}
	oldRow := r
	if in.UserID != "" {
		uid := in.UserID
		r.userID = &uid
	}

	// Apply the body's properties.
	custom, clear, err := applyProps(&r, in, defs)
	if err != nil {
		return Result{}, err
	}

	// Validate lists before writing.
	listIDs := make([]string, 0, len(in.MailingLists))
	for lid := range in.MailingLists {
		listIDs = append(listIDs, lid)
	}
	sort.Strings(listIDs)
	for _, lid := range listIDs {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM mailing_lists WHERE id = $1 AND team_id = $2`, lid, teamID).Scan(&one)
		if errors.Is(err, db.ErrNoRows) {
			return Result{}, apperr.New(apperr.Invalid, "Mailing list %s not found.", lid)
		}
		if err != nil {
			return Result{}, err
		}
	}

	prev, err := s.prevValues(ctx, tx, in, created, id, custom, clear)
	if err != nil {
		return Result{}, err
	}
	if created {
		id = ids.New()
		_, err = tx.Exec(ctx, `INSERT INTO contacts (id, team_id, email, user_id, first_name, last_name, notes, source, subscribed, user_group, opt_in_status, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)`,
			id, teamID, r.email, r.userID, r.firstName, r.lastName, r.notes, r.source, r.subscribed, r.userGroup, r.optIn, now)
	} else {
		_, err = tx.Exec(ctx, `UPDATE contacts SET email = $2, user_id = $3, first_name = $4, last_name = $5, notes = $6, source = $7, subscribed = $8, user_group = $9, updated_at = $10 WHERE id = $1`,
			id, r.email, r.userID, r.firstName, r.lastName, r.notes, r.source, r.subscribed, r.userGroup, now)
	}
	if err != nil {
		if db.IsUnique(err) && m == modeCreate {
			return Result{}, apperr.New(apperr.Conflict, "Email or `userId` already exists.")
		}
		if db.IsUnique(err) && !created {
			return Result{}, apperr.New(apperr.Invalid, "The email or userId already belongs to another contact.")
		}
		return Result{}, fmt.Errorf("write contact: %w", err)
	}
	for k, st := range custom {
		if _, err := tx.Exec(ctx, `INSERT INTO contact_values (contact_id, team_id, name, str, num) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (contact_id, name) DO UPDATE SET str = excluded.str, num = excluded.num`, id, teamID, k, st.str, st.num); err != nil {
			return Result{}, fmt.Errorf("write property %s: %w", k, err)
		}
	}
	for k := range clear {
		if _, err := tx.Exec(ctx, `DELETE FROM contact_values WHERE contact_id = $1 AND name = $2`, id, k); err != nil {
			return Result{}, err
		}
	}
	type listChange struct {
		id  string
		sub bool
	}
	var changes []listChange
	for _, lid := range listIDs {
		var n int64
		if in.MailingLists[lid] {
			n, err = tx.Exec(ctx, `INSERT INTO contact_lists (contact_id, list_id, team_id, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (contact_id, list_id) DO NOTHING`, id, lid, teamID, now)
		} else {
			n, err = tx.Exec(ctx, `DELETE FROM contact_lists WHERE contact_id = $1 AND list_id = $2`, id, lid)
		}
		if err != nil {
			return Result{}, fmt.Errorf("write list membership: %w", err)
		}
		if n > 0 {
			changes = append(changes, listChange{lid, in.MailingLists[lid]})
		}
	}

	// Webhooks, in the same transaction.
	if created {
		if err := s.emit(ctx, tx, teamID, "contact.created", s.contactPayload(ctx, tx, teamID, id, true, nil)); err != nil {
			return Result{}, err
		}
	} else if wasSubscribed && !r.subscribed {
		if err := s.emit(ctx, tx, teamID, "contact.unsubscribed", s.contactPayload(ctx, tx, teamID, id, false, nil)); err != nil {
			return Result{}, err
		}
	}
	for _, ch := range changes {
		ev := "contact.mailingList.unsubscribed"
		if ch.sub {
			ev = "contact.mailingList.subscribed"
		}
		if err := s.emit(ctx, tx, teamID, ev, s.listPayload(ctx, tx, teamID, id, ch.id)); err != nil {
			return Result{}, err
		}
	}
	var added []string
	for _, ch := range changes {
		if ch.sub {
			added = append(added, ch.id)
		}
	}
	if err := s.announceChange(ctx, tx, teamID, id, in, created, oldRow, r, prev, custom, clear, defs, added); err != nil {
		return Result{}, err
	}
	return Result{ID: id, Created: created}, nil
}

func optString(name string, v any) (*string, error) {
	if v == nil {
		return nil, nil
	}
	st, err := coerce(name, TypeString, v)
	if err != nil {
		return nil, apperr.New(apperr.Invalid, "%s", err.Error())
	}
	return st.str, nil
}

func lookupID(ctx context.Context, q db.Querier, query string, args ...any) (string, error) {
	var id string
	err := q.QueryRow(ctx, query, args...).Scan(&id)
	if errors.Is(err, db.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find contact: %w", err)
	}
	return id, nil
}

func (s *Service) propertyTypes(ctx context.Context, q db.Querier, teamID string) (map[string]string, error) {
	rows, err := q.Query(ctx, `SELECT name, type FROM contact_properties WHERE team_id = $1`, teamID)
	if err != nil {
		return nil, fmt.Errorf("load properties: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var n, t string
		if err := rows.Scan(&n, &t); err != nil {
			return nil, err
		}
		out[n] = t
	}
	return out, rows.Err()
}

// Identity selects a contact by exactly one of email or userId.
type Identity struct {
	Email  string
	UserID string
}

func (s *Service) resolve(ctx context.Context, q db.Querier, teamID string, idn Identity) (string, error) {
	if idn.Email != "" && idn.UserID != "" {
		return "", apperr.New(apperr.Invalid, "Only one parameter is permitted.")
	}
	if idn.Email == "" && idn.UserID == "" {
		return "", apperr.New(apperr.Invalid, "An email or userId is required.")
	}
	if idn.Email != "" {
		e, err := NormalizeEmail(idn.Email)
		if err != nil {
			return "", err
		}
		return lookupID(ctx, q, `SELECT id FROM contacts WHERE team_id = $1 AND email = $2`, teamID, e)
	}
	return lookupID(ctx, q, `SELECT id FROM contacts WHERE team_id = $1 AND user_id = $2`, teamID, idn.UserID)
}

// Find returns the contact with the identity, or nil.
func (s *Service) Find(ctx context.Context, teamID string, idn Identity) (*Contact, error) {
	id, err := s.resolve(ctx, s.db, teamID, idn)
	if err != nil || id == "" {
		return nil, err
	}
	return s.Get(ctx, teamID, id)
}

// Get returns a contact by id; apperr.NotFound if absent.
func (s *Service) Get(ctx context.Context, teamID, id string) (*Contact, error) {
	return s.get(ctx, s.db, teamID, id)
}

func (s *Service) get(ctx context.Context, q db.Querier, teamID, id string) (*Contact, error) {
	c := &Contact{TeamID: teamID}
	var created, updated int64
	err := q.QueryRow(ctx, `SELECT id, email, user_id, first_name, last_name, notes, source, subscribed, user_group, opt_in_status, created_at, updated_at
		FROM contacts WHERE id = $1 AND team_id = $2`, id, teamID).
		Scan(&c.ID, &c.Email, &c.UserID, &c.FirstName, &c.LastName, &c.Notes, &c.Source, &c.Subscribed, &c.UserGroup, &c.OptInStatus, &created, &updated)
	if errors.Is(err, db.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "This contact was not found.")
	}
	if err != nil {
		return nil, fmt.Errorf("get contact: %w", err)
	}
	c.CreatedAt = time.UnixMilli(created).UTC()
	c.UpdatedAt = time.UnixMilli(updated).UTC()

	c.MailingLists, err = db.All(ctx, q, func(r db.Rows) (string, error) {
		var l string
		err := r.Scan(&l)
		return l, err
	}, `SELECT list_id FROM contact_lists WHERE contact_id = $1 ORDER BY created_at, list_id`, id)
	if err != nil {
		return nil, err
	}

	defs, err := s.propertyTypes(ctx, q, teamID)
	if err != nil {
		return nil, err
	}
	c.Custom = make(map[string]any, len(defs))
	for k := range defs {
		c.Custom[k] = nil
	}
	vals, err := storedValues(ctx, q, id)
	if err != nil {
		return nil, err
	}
	for name, st := range vals {
		if typ, ok := defs[name]; ok {
			c.Custom[name] = st.value(typ)
		}
	}
	return c, nil
}

// Delete deletes the contact with the identity; apperr.NotFound if absent.
// The contact's suppression (kept by address) outlives it.
func (s *Service) Delete(ctx context.Context, teamID string, idn Identity) (*Contact, error) {
	var c *Contact
	err := s.db.InTx(ctx, func(tx db.Tx) error {
		id, err := s.resolve(ctx, tx, teamID, idn)
		if err != nil {
			return err
		}
		if id == "" {
			return apperr.New(apperr.NotFound, "Contact not found.")
		}
		if c, err = s.get(ctx, tx, teamID, id); err != nil {
			return err
		}
		// The webhooks carry the identity of a contact about to disappear.
		ident := func() (map[string]any, error) { return map[string]any{"contactIdentity": c.Identity()}, nil }
		if err := s.emit(ctx, tx, teamID, "contact.deleted", ident); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, teamID, "contact.unsubscribed", ident); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM contacts WHERE id = $1`, id)
		return err
	})
	return c, err
}

// Count returns the number of contacts of a team.
func (s *Service) Count(ctx context.Context, teamID string) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM contacts WHERE team_id = $1`, teamID).Scan(&n)
	return n, err
}

// FindTx returns the id of the team's contact with email, or "".
func (s *Service) FindTx(ctx context.Context, q db.Querier, teamID, email string) (string, error) {
	return lookupID(ctx, q, `SELECT id FROM contacts WHERE team_id = $1 AND email = $2`, teamID, strings.ToLower(email))
}

// applyProps applies the built-in fields of in.Props to r and returns the
// custom property values to write and the custom properties to clear
// (null). Keys that are not properties of the team are ignored.
func applyProps(r *row, in Upsert, defs map[string]string) (map[string]stored, map[string]bool, error) {
	var err error
	custom := map[string]stored{}
	clear := map[string]bool{}
	keys := make([]string, 0, len(in.Props))
	for k := range in.Props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := in.Props[k]
		switch k {
		case "email", "userId":
			// Identifiers come through in.Email / in.UserID; a null userId clears it.
			if k == "userId" && v == nil && in.UserID == "" {
				r.userID = nil
			}
		case "firstName":
			if r.firstName, err = optString(k, v); err != nil {
				return nil, nil, err
			}
		case "lastName":
			if r.lastName, err = optString(k, v); err != nil {
				return nil, nil, err
			}
		case "notes":
			if r.notes, err = optString(k, v); err != nil {
				return nil, nil, err
			}
		case "source":
			p, err := optString(k, v)
			if err != nil {
				return nil, nil, err
			}
			if p == nil || *p == "" {
				r.source = "API"
			} else {
				r.source = *p
			}
		case "userGroup":
			p, err := optString(k, v)
			if err != nil {
				return nil, nil, err
			}
			r.userGroup = ""
			if p != nil {
				r.userGroup = *p
			}
		case "subscribed":
			if v == nil {
				continue
			}
			st, err := coerce(k, TypeBoolean, v)
			if err != nil {
				return nil, nil, apperr.New(apperr.Invalid, "%s", err.Error())
			}
			r.subscribed = *st.num != 0
		default:
			typ, ok := defs[k]
			if !ok {
				// Keys that are not properties of the team are ignored, as the
				// contract recommends (reserved names included).
				continue
			}
			if v == nil {
				clear[k] = true
				continue
			}
			st, err := coerce(k, typ, v)
			if err != nil {
				return nil, nil, apperr.New(apperr.Invalid, "%s", err.Error())
			}
			custom[k] = st
		}
	}

	return custom, clear, nil
}
