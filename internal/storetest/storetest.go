// Package storetest is the storage conformance suite: the same behaviour
// checks against every database dialect. Run calls each check with a fresh
// database opened by open. Only _test.go files import it.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/events"
	"github.com/lasso-mail/lasso/internal/queue"
	"github.com/lasso-mail/lasso/internal/ratelimit"
	"github.com/lasso-mail/lasso/internal/senders"
)

// Clock is a settable clock for the suite.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts at a fixed time.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Env is what each check gets.
type Env struct {
	DB       db.DB
	Clock    *Clock
	Accounts *accounts.Service
	Contacts *contacts.Service
	Events   *events.Service
	Senders  *senders.Service
	Queue    *queue.Queue
	Team     accounts.Team
}

// Open returns a fresh, migrated database.
type Open func(t *testing.T) db.DB

// Run runs every conformance check.
func Run(t *testing.T, open Open) {
	checks := []struct {
		name string
		fn   func(t *testing.T, e *Env)
	}{
		{"Keys", testKeys},
		{"ContactCreateFind", testContactCreateFind},
		{"ContactUpsertSemantics", testContactUpsert},
		{"ContactTypedValues", testTypedValues},
		{"ContactDelete", testContactDelete},
		{"Properties", testProperties},
		{"Lists", testLists},
		{"Suppression", testSuppression},
		{"EventsRecord", testEvents},
		{"IdempotencyWindow", testIdempotency},
		{"IdempotencyConcurrent", testIdempotencyConcurrent},
		{"Domains", testDomains},
		{"RateLimit", testRateLimit},
		{"TenantIsolation", testTenantIsolation},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			d := open(t)
			clock := NewClock()
			q, err := queue.New(d, nil, queue.Config{})
			if err != nil {
				t.Fatal(err)
			}
			e := &Env{DB: d, Clock: clock, Queue: q,
				Accounts: accounts.New(d, clock.Now),
				Contacts: contacts.New(d, contacts.Config{SuppressionRemovalLimit: 2}, clock.Now),
				Senders:  senders.New(d, "mail.lasso.test", clock.Now),
			}
			e.Events = events.New(d, e.Contacts, q, clock.Now)
			if e.Team, err = e.Accounts.EnsureTeam(context.Background(), "Acme"); err != nil {
				t.Fatal(err)
			}
			c.fn(t, e)
		})
	}
}

func ctx() context.Context { return context.Background() }

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantKind(t *testing.T, err, kind error, msg string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("err = %v, want kind %v", err, kind)
	}
	if msg != "" {
		if m, _ := apperr.Message(err); m != msg {
			t.Fatalf("message = %q, want %q", m, msg)
		}
	}
}

func str(s string) *string { return &s }

func num(s string) json.Number { return json.Number(s) }

func testKeys(t *testing.T, e *Env) {
	again := must[accounts.Team](t)(e.Accounts.EnsureTeam(ctx(), "Acme"))
	if again.ID != e.Team.ID {
		t.Fatal("EnsureTeam created a second team")
	}
	secret, k, err := e.Accounts.CreateKey(ctx(), e.Team.ID, "ci")
	if err != nil {
		t.Fatal(err)
	}
	got := must[accounts.Team](t)(e.Accounts.Authenticate(ctx(), secret))
	if got.ID != e.Team.ID || got.Name != "Acme" {
		t.Fatalf("Authenticate = %+v", got)
	}
	_, err = e.Accounts.Authenticate(ctx(), secret+"x")
	wantKind(t, err, apperr.Unauthenticated, "Invalid API key")
	keys := must[[]accounts.Key](t)(e.Accounts.ListKeys(ctx(), e.Team.ID))
	if len(keys) != 1 || keys[0].Name != "ci" || keys[0].LastUsedAt == nil {
		t.Fatalf("ListKeys = %+v", keys)
	}
	if err := e.Accounts.RevokeKey(ctx(), k.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.Accounts.Authenticate(ctx(), secret)
	wantKind(t, err, apperr.Unauthenticated, "")
	wantKind(t, e.Accounts.RevokeKey(ctx(), k.ID), apperr.NotFound, "")
}

func testContactCreateFind(t *testing.T, e *Env) {
	if err := e.Contacts.CreateProperty(ctx(), e.Team.ID, "plan", contacts.TypeString); err != nil {
		t.Fatal(err)
	}
	list := must[contacts.List](t)(e.Contacts.CreateList(ctx(), e.Team.ID, "News", "", true))
	res := must[contacts.Result](t)(e.Contacts.Create(ctx(), e.Team.ID, contacts.Upsert{
		Email: "Ann@Example.COM", UserID: "u1",
		Props:        map[string]any{"firstName": "Ann", "plan": "pro", "unknownKey": "ignored", "teamId": "x"},
		MailingLists: map[string]bool{list.ID: true},
	}))
	if !res.Created || len(res.ID) != 25 {
		t.Fatalf("Create = %+v", res)
	}
	c := must[*contacts.Contact](t)(e.Contacts.Find(ctx(), e.Team.ID, contacts.Identity{Email: "ann@example.com"}))
	if c == nil || c.Email != "ann@example.com" || *c.FirstName != "Ann" || c.Source != "API" || !c.Subscribed ||
		c.UserGroup != "" || *c.UserID != "u1" || c.Custom["plan"] != "pro" || len(c.MailingLists) != 1 || c.MailingLists[0] != list.ID {
		t.Fatalf("Find = %+v", c)
	}
	if _, ok := c.Custom["unknownKey"]; ok {
		t.Fatal("unknown key stored")
	}
	byUser := must[*contacts.Contact](t)(e.Contacts.Find(ctx(), e.Team.ID, contacts.Identity{UserID: "u1"}))
	if byUser == nil || byUser.ID != c.ID {
		t.Fatal("find by userId failed")
	}
	none := must[*contacts.Contact](t)(e.Contacts.Find(ctx(), e.Team.ID, contacts.Identity{Email: "nobody@example.com"}))
	if none != nil {
		t.Fatal("found a missing contact")
	}
	_, err := e.Contacts.Create(ctx(), e.Team.ID, contacts.Upsert{Email: "ann@example.com"})
	wantKind(t, err, apperr.Conflict, "Email or `userId` already exists.")
	_, err = e.Contacts.Create(ctx(), e.Team.ID, contacts.Upsert{Email: "other@example.com", UserID: "u1"})
	wantKind(t, err, apperr.Conflict, "")
	_, err = e.Contacts.Create(ctx(), e.Team.ID, contacts.Upsert{Email: "not-an-email"})
	wantKind(t, err, apperr.Invalid, "Invalid email address.")
	_, err = e.Contacts.Create(ctx(), e.Team.ID, contacts.Upsert{Email: "x@example.com", MailingLists: map[string]bool{"nolist": true}})
	wantKind(t, err, apperr.Invalid, "")
	if n := must[int64](t)(e.Contacts.Count(ctx(), e.Team.ID)); n != 1 {
		t.Fatalf("a failed create left a contact behind: %d", n)
	}
}

func testContactUpsert(t *testing.T, e *Env) {
	if err := e.Contacts.CreateProperty(ctx(), e.Team.ID, "plan", contacts.TypeString); err != nil {
		t.Fatal(err)
	}
	// Create through update.
	r1 := must[contacts.Result](t)(e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{Email: "b@example.com", Props: map[string]any{"plan": "free", "subscribed": false}}))
	if !r1.Created {
		t.Fatal("update did not create")
	}
	// Update by email sets userId.
	r2 := must[contacts.Result](t)(e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{Email: "b@example.com", UserID: "42"}))
	if r2.Created || r2.ID != r1.ID {
		t.Fatal("update by email created a new contact")
	}
	// Change email through userId.
	must[contacts.Result](t)(e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{Email: "new@example.com", UserID: "42"}))
	c := must[*contacts.Contact](t)(e.Contacts.Get(ctx(), e.Team.ID, r1.ID))
	if c.Email != "new@example.com" || *c.UserID != "42" || c.Subscribed {
		t.Fatalf("after email change: %+v", c)
	}
	// subscribed changes only when sent; null resets a property.
	must[contacts.Result](t)(e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{UserID: "42", Props: map[string]any{"plan": nil, "firstName": "B"}}))
	c = must[*contacts.Contact](t)(e.Contacts.Get(ctx(), e.Team.ID, r1.ID))
	if c.Subscribed || c.Custom["plan"] != nil || *c.FirstName != "B" {
		t.Fatalf("after reset: %+v", c)
	}
	must[contacts.Result](t)(e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{UserID: "42", Props: map[string]any{"subscribed": true, "firstName": nil}}))
	c = must[*contacts.Contact](t)(e.Contacts.Get(ctx(), e.Team.ID, r1.ID))
	if !c.Subscribed || c.FirstName != nil {
		t.Fatalf("after resubscribe: %+v", c)
	}
	// userId alone for an unknown contact cannot create one.
	_, err := e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{UserID: "nope"})
	wantKind(t, err, apperr.Invalid, "Contact not found.")
	// Neither identifier.
	_, err = e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{})
	wantKind(t, err, apperr.Invalid, "")
	// Identifiers of two different contacts.
	must[contacts.Result](t)(e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{Email: "c@example.com", UserID: "43"}))
	_, err = e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{Email: "c@example.com", UserID: "42"})
	wantKind(t, err, apperr.Invalid, "")
	// Wrong type for a built-in.
	_, err = e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{UserID: "42", Props: map[string]any{"subscribed": "maybe"}})
	wantKind(t, err, apperr.Invalid, "")
}

func testTypedValues(t *testing.T, e *Env) {
	for name, typ := range map[string]string{"score": contacts.TypeNumber, "vip": contacts.TypeBoolean, "renewal": contacts.TypeDate, "color": contacts.TypeString} {
		if err := e.Contacts.CreateProperty(ctx(), e.Team.ID, name, typ); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		props map[string]any
		want  map[string]any
	}{
		{map[string]any{"score": num("42.5"), "vip": true, "renewal": num("1704711066000"), "color": "blue"},
			map[string]any{"score": 42.5, "vip": true, "renewal": "2024-01-08T10:51:06.000Z", "color": "blue"}},
		{map[string]any{"score": "7", "vip": "false", "renewal": "2024-03-05", "color": num("12")},
			map[string]any{"score": 7.0, "vip": false, "renewal": "2024-03-05T00:00:00.000Z", "color": "12"}},
		{map[string]any{"renewal": "2024-03-05T10:20:30.123+02:00"}, map[string]any{"renewal": "2024-03-05T08:20:30.123Z"}},
		{map[string]any{"renewal": "2024-03-05 10:20"}, map[string]any{"renewal": "2024-03-05T10:20:00.000Z"}},
		{map[string]any{"renewal": "1704711066000"}, map[string]any{"renewal": "2024-01-08T10:51:06.000Z"}},
	}
	for i, tc := range cases {
		r := must[contacts.Result](t)(e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{Email: "typed@example.com", Props: tc.props}))
		c := must[*contacts.Contact](t)(e.Contacts.Get(ctx(), e.Team.ID, r.ID))
		for k, v := range tc.want {
			if c.Custom[k] != v {
				t.Errorf("case %d: %s = %#v, want %#v", i, k, c.Custom[k], v)
			}
		}
	}
	for _, bad := range []map[string]any{{"score": "abc"}, {"vip": num("3")}, {"renewal": "tomorrow"}, {"renewal": true}, {"color": map[string]any{}}} {
		_, err := e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{Email: "typed@example.com", Props: bad})
		wantKind(t, err, apperr.Invalid, "")
	}
}

func testContactDelete(t *testing.T, e *Env) {
	r := must[contacts.Result](t)(e.Contacts.Create(ctx(), e.Team.ID, contacts.Upsert{Email: "d@example.com", UserID: "d"}))
	_, err := e.Contacts.Delete(ctx(), e.Team.ID, contacts.Identity{Email: "d@example.com", UserID: "d"})
	wantKind(t, err, apperr.Invalid, "")
	c := must[*contacts.Contact](t)(e.Contacts.Delete(ctx(), e.Team.ID, contacts.Identity{UserID: "d"}))
	if c.ID != r.ID {
		t.Fatal("deleted the wrong contact")
	}
	_, err = e.Contacts.Delete(ctx(), e.Team.ID, contacts.Identity{Email: "d@example.com"})
	wantKind(t, err, apperr.NotFound, "")
}

func testProperties(t *testing.T, e *Env) {
	if err := e.Contacts.CreateProperty(ctx(), e.Team.ID, "planName", contacts.TypeString); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(time.Millisecond)
	if err := e.Contacts.CreateProperty(ctx(), e.Team.ID, "importDate", contacts.TypeDate); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, typ, msg string }{
		{"planName", "string", "Property already exists."},
		{"email", "string", "Property already exists."},
		{"teamId", "string", ""},
		{"Plan", "string", ""},
		{"plan_name", "string", ""},
		{"x", "object", ""},
		{"", "string", ""},
	} {
		wantKind(t, e.Contacts.CreateProperty(ctx(), e.Team.ID, tc.name, tc.typ), apperr.Invalid, tc.msg)
	}
	all := must[[]contacts.Property](t)(e.Contacts.ListProperties(ctx(), e.Team.ID, false))
	wantKeys := []string{"firstName", "lastName", "email", "notes", "source", "userGroup", "userId", "subscribed", "createdAt", "planName", "importDate"}
	if len(all) != len(wantKeys) {
		t.Fatalf("ListProperties = %+v", all)
	}
	for i, k := range wantKeys {
		if all[i].Key != k {
			t.Fatalf("property %d = %s, want %s", i, all[i].Key, k)
		}
	}
	custom := must[[]contacts.Property](t)(e.Contacts.ListProperties(ctx(), e.Team.ID, true))
	if len(custom) != 2 || custom[0] != (contacts.Property{Key: "planName", Label: "Plan Name", Type: "string"}) {
		t.Fatalf("custom = %+v", custom)
	}
}

func testLists(t *testing.T, e *Env) {
	a := must[contacts.List](t)(e.Contacts.CreateList(ctx(), e.Team.ID, "A", "first", true))
	b := must[contacts.List](t)(e.Contacts.CreateList(ctx(), e.Team.ID, "B", "", false))
	ls := must[[]contacts.List](t)(e.Contacts.Lists(ctx(), e.Team.ID))
	if len(ls) != 2 || ls[0].ID != a.ID || *ls[0].Description != "first" || !ls[0].IsPublic || ls[1].Description != nil {
		t.Fatalf("Lists = %+v", ls)
	}
	r := must[contacts.Result](t)(e.Contacts.Create(ctx(), e.Team.ID, contacts.Upsert{Email: "l@example.com", MailingLists: map[string]bool{a.ID: true, b.ID: true}}))
	must[contacts.Result](t)(e.Contacts.Update(ctx(), e.Team.ID, contacts.Upsert{Email: "l@example.com", MailingLists: map[string]bool{a.ID: false}}))
	c := must[*contacts.Contact](t)(e.Contacts.Get(ctx(), e.Team.ID, r.ID))
	if len(c.MailingLists) != 1 || c.MailingLists[0] != b.ID {
		t.Fatalf("lists after unsubscribe: %v", c.MailingLists)
	}
	if err := e.Contacts.UpdateList(ctx(), e.Team.ID, b.ID, "B2", "d", true); err != nil {
		t.Fatal(err)
	}
	if err := e.Contacts.DeleteList(ctx(), e.Team.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	c = must[*contacts.Contact](t)(e.Contacts.Get(ctx(), e.Team.ID, r.ID))
	if len(c.MailingLists) != 0 {
		t.Fatalf("membership outlived its list: %v", c.MailingLists)
	}
	wantKind(t, e.Contacts.DeleteList(ctx(), e.Team.ID, b.ID), apperr.NotFound, "")
}

func testSuppression(t *testing.T, e *Env) {
	r := must[contacts.Result](t)(e.Contacts.Create(ctx(), e.Team.ID, contacts.Upsert{Email: "s@example.com", UserID: "s"}))
	st := must[contacts.SuppressionStatus](t)(e.Contacts.CheckSuppression(ctx(), e.Team.ID, contacts.Identity{Email: "s@example.com"}))
	if st.IsSuppressed || st.ContactID != r.ID || st.Quota != (contacts.Quota{Limit: 2, Remaining: 2}) {
		t.Fatalf("status = %+v", st)
	}
	_, err := e.Contacts.RemoveSuppression(ctx(), e.Team.ID, contacts.Identity{Email: "s@example.com"})
	wantKind(t, err, apperr.Invalid, "This contact is not suppressed.")
	_, err = e.Contacts.CheckSuppression(ctx(), e.Team.ID, contacts.Identity{Email: "none@example.com"})
	wantKind(t, err, apperr.NotFound, "This contact was not found.")

	suppress := func() {
		t.Helper()
		if err := e.DB.InTx(ctx(), func(tx db.Tx) error { return e.Contacts.Suppress(ctx(), tx, e.Team.ID, "s@example.com", "hard_bounce") }); err != nil {
			t.Fatal(err)
		}
	}
	suppress()
	st = must[contacts.SuppressionStatus](t)(e.Contacts.CheckSuppression(ctx(), e.Team.ID, contacts.Identity{UserID: "s"}))
	c := must[*contacts.Contact](t)(e.Contacts.Get(ctx(), e.Team.ID, r.ID))
	if !st.IsSuppressed || c.Subscribed {
		t.Fatalf("suppress: %+v subscribed=%v", st, c.Subscribed)
	}
	// Two removals allowed per rolling 30 days, the third refused.
	for want := 1; want >= 0; want-- {
		q := must[contacts.Quota](t)(e.Contacts.RemoveSuppression(ctx(), e.Team.ID, contacts.Identity{Email: "s@example.com"}))
		if q.Remaining != want {
			t.Fatalf("remaining = %d, want %d", q.Remaining, want)
		}
		suppress()
		e.Clock.Advance(24 * time.Hour)
	}
	_, err = e.Contacts.RemoveSuppression(ctx(), e.Team.ID, contacts.Identity{Email: "s@example.com"})
	wantKind(t, err, apperr.Invalid, "")
	e.Clock.Advance(28*24*time.Hour + 12*time.Hour) // only the first removal falls out of the window
	q := must[contacts.Quota](t)(e.Contacts.RemoveSuppression(ctx(), e.Team.ID, contacts.Identity{Email: "s@example.com"}))
	if q.Remaining != 0 {
		t.Fatalf("remaining after window = %d", q.Remaining)
	}
	// Suppression outlives deletion.
	suppress()
	must[*contacts.Contact](t)(e.Contacts.Delete(ctx(), e.Team.ID, contacts.Identity{Email: "s@example.com"}))
	if ok := must[bool](t)(e.Contacts.IsSuppressed(ctx(), e.DB, e.Team.ID, "s@example.com")); !ok {
		t.Fatal("suppression lost with the contact")
	}
}

func countJobs(t *testing.T, d db.DB, kind string) int {
	var n int
	if err := d.QueryRow(ctx(), `SELECT count(*) FROM river_job WHERE kind = $1`, kind).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func testEvents(t *testing.T, e *Env) {
	if err := e.Contacts.CreateProperty(ctx(), e.Team.ID, "plan", contacts.TypeString); err != nil {
		t.Fatal(err)
	}
	id := must[string](t)(e.Events.Send(ctx(), e.Team.ID, events.Send{
		Name:       "signup",
		Contact:    contacts.Upsert{Email: "e@example.com", Props: map[string]any{"plan": "pro"}},
		Properties: map[string]any{"amount": num("12"), "coupon": "X", "trial": true, "at": "2026-01-02"},
	}))
	ev := must[events.Event](t)(e.Events.Get(ctx(), e.DB, id))
	c := must[*contacts.Contact](t)(e.Contacts.Find(ctx(), e.Team.ID, contacts.Identity{Email: "e@example.com"}))
	if c == nil || c.Custom["plan"] != "pro" || ev.ContactID != c.ID || ev.Name != "signup" || ev.Properties["coupon"] != "X" {
		t.Fatalf("event %+v contact %+v", ev, c)
	}
	if n := countJobs(t, e.DB, "events_recorded"); n != 1 {
		t.Fatalf("jobs = %d", n)
	}
	var types = map[string]string{}
	rows, err := e.DB.Query(ctx(), `SELECT p.name, p.type FROM event_pattern_properties p JOIN event_patterns e ON e.id = p.pattern_id WHERE e.team_id = $1 AND e.name = 'signup'`, e.Team.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n, ty string
		_ = rows.Scan(&n, &ty)
		types[n] = ty
	}
	rows.Close()
	want := map[string]string{"amount": "number", "coupon": "string", "trial": "boolean", "at": "date"}
	for k, v := range want {
		if types[k] != v {
			t.Fatalf("pattern types = %v", types)
		}
	}
	// userId alone for an unknown contact is an error and stores nothing.
	_, err = e.Events.Send(ctx(), e.Team.ID, events.Send{Name: "x", Contact: contacts.Upsert{UserID: "ghost"}})
	wantKind(t, err, apperr.Invalid, "Contact not found.")
	_, err = e.Events.Send(ctx(), e.Team.ID, events.Send{Name: "x", Contact: contacts.Upsert{Email: "e@example.com"}, Properties: map[string]any{"nested": map[string]any{}}})
	wantKind(t, err, apperr.Invalid, "")
	if n := must[int64](t)(e.Events.Count(ctx(), e.Team.ID, "")); n != 1 {
		t.Fatalf("events = %d", n)
	}
	if n := countJobs(t, e.DB, "events_recorded"); n != 1 {
		t.Fatalf("a failed send left a job: %d", n)
	}
}

func testIdempotency(t *testing.T, e *Env) {
	send := func() error {
		_, err := e.Events.Send(ctx(), e.Team.ID, events.Send{Name: "paid", Contact: contacts.Upsert{Email: "i@example.com"}, IdempotencyKey: "k1"})
		return err
	}
	if err := send(); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(23 * time.Hour)
	wantKind(t, send(), apperr.Conflict, "")
	e.Clock.Advance(2 * time.Hour)
	if err := send(); err != nil {
		t.Fatalf("key reuse after 24 h: %v", err)
	}
	// Keys are per team.
	other := must[accounts.Team](t)(e.Accounts.EnsureTeam(ctx(), "Other"))
	if _, err := e.Events.Send(ctx(), other.ID, events.Send{Name: "paid", Contact: contacts.Upsert{Email: "i@example.com"}, IdempotencyKey: "k1"}); err != nil {
		t.Fatal(err)
	}
}

func testIdempotencyConcurrent(t *testing.T, e *Env) {
	const n = 50
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.Events.Send(ctx(), e.Team.ID, events.Send{Name: "dup", Contact: contacts.Upsert{Email: "dup@example.com"}, IdempotencyKey: "same"})
		}()
	}
	wg.Wait()
	ok, conflicts := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, apperr.Conflict):
			conflicts++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 || conflicts != n-1 {
		t.Fatalf("ok=%d conflicts=%d", ok, conflicts)
	}
	if c := must[int64](t)(e.Events.Count(ctx(), e.Team.ID, "dup")); c != 1 {
		t.Fatalf("events stored = %d", c)
	}
}

func testDomains(t *testing.T, e *Env) {
	d := must[senders.Domain](t)(e.Senders.Add(ctx(), e.Team.ID, "Example.COM", false))
	if d.Domain != "example.com" || d.Verified {
		t.Fatalf("domain = %+v", d)
	}
	_, err := e.Senders.Add(ctx(), e.Team.ID, "example.com", true)
	wantKind(t, err, apperr.Conflict, "")
	_, err = e.Senders.Add(ctx(), e.Team.ID, "not a domain", true)
	wantKind(t, err, apperr.Invalid, "")
	ds := must[[]senders.Domain](t)(e.Senders.Domains(ctx(), e.Team.ID))
	if len(ds) != 1 || ds[0].RSAKeyPEM != d.RSAKeyPEM {
		t.Fatal("domain keys not stored")
	}
	recs := must[[]senders.Record](t)(e.Senders.Records(ds[0]))
	if len(recs) != 5 || recs[1].Name != d.RSASelector()+"._domainkey.example.com" {
		t.Fatalf("records = %+v", recs)
	}
	if ok := must[bool](t)(e.Senders.HasDomain(ctx(), e.Team.ID)); !ok {
		t.Fatal("HasDomain = false")
	}
}

func testRateLimit(t *testing.T, e *Env) {
	// Two limiters on one database stand for two nodes: on PostgreSQL they
	// share the count; on SQLite (one node) each counts alone.
	l1 := ratelimit.New(e.DB, 5, e.Clock.Now)
	l2 := ratelimit.New(e.DB, 5, e.Clock.Now)
	allowed := 0
	for i := range 10 {
		l := l1
		if i%2 == 1 {
			l = l2
		}
		d := must[ratelimit.Decision](t)(l.Allow(ctx(), e.Team.ID))
		if d.Limit != 5 {
			t.Fatalf("limit = %d", d.Limit)
		}
		if d.Allowed {
			allowed++
		}
	}
	want := 10
	if e.DB.Dialect() == db.Postgres {
		want = 5
	}
	if allowed != want {
		t.Fatalf("allowed %d of 10, want %d", allowed, want)
	}
	e.Clock.Advance(time.Second)
	if d := must[ratelimit.Decision](t)(l1.Allow(ctx(), e.Team.ID)); !d.Allowed || d.Remaining != 4 {
		t.Fatalf("next window: %+v", d)
	}
	// Teams are counted apart.
	if d := must[ratelimit.Decision](t)(l1.Allow(ctx(), "other")); d.Remaining != 4 {
		t.Fatalf("other team: %+v", d)
	}
}

func testTenantIsolation(t *testing.T, e *Env) {
	other := must[accounts.Team](t)(e.Accounts.EnsureTeam(ctx(), "Other"))
	r := must[contacts.Result](t)(e.Contacts.Create(ctx(), e.Team.ID, contacts.Upsert{Email: "t@example.com", UserID: "t"}))
	if c := must[*contacts.Contact](t)(e.Contacts.Find(ctx(), other.ID, contacts.Identity{Email: "t@example.com"})); c != nil {
		t.Fatal("other team sees the contact")
	}
	_, err := e.Contacts.Get(ctx(), other.ID, r.ID)
	wantKind(t, err, apperr.NotFound, "")
	_, err = e.Contacts.Delete(ctx(), other.ID, contacts.Identity{UserID: "t"})
	wantKind(t, err, apperr.NotFound, "")
	list := must[contacts.List](t)(e.Contacts.CreateList(ctx(), e.Team.ID, "Mine", "", false))
	_, err = e.Contacts.Create(ctx(), other.ID, contacts.Upsert{Email: "t@example.com", MailingLists: map[string]bool{list.ID: true}})
	wantKind(t, err, apperr.Invalid, "")
	// The same address is a different contact in another team.
	must[contacts.Result](t)(e.Contacts.Create(ctx(), other.ID, contacts.Upsert{Email: "t@example.com", UserID: "t"}))
	if ls := must[[]contacts.List](t)(e.Contacts.Lists(ctx(), other.ID)); len(ls) != 0 {
		t.Fatal("other team sees the list")
	}
}

var _ = str
