package audience

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/testdb"
)

// The property-based test: random contacts (with adversarial strings) are
// stored in a real database, random filters are compiled to SQL and
// evaluated in memory, and the two result sets must be equal.

var pool = []string{
	"", "%", "_", "a%b", "a_b", "100%", "%%", "__", "\\", `a\b`, `\%`, "'", "O'Brien", `"`, `"quoted"`,
	"Pro", "pro", "PRO", "pRo", " pro ", "pro plan", "Prò", "PRÒ", "prò", "É", "é", "e\u0301",
	"Straße", "STRASSE", "strasse", "İstanbul", "istanbul", "ı", "K", "\u212a", "k", "ǅ", "ǆ",
	"日本語", "日本", "🙂", "a🙂b", "ÀÉÎ", "àéî", "x", "X", "xy", "Y", "tab\there", "new\nline", "*", "?", "[a]", "^$", ".", "a.b",
}

var (
	numPool  = []float64{-1e9, -2.5, -1, 0, 0.5, 1, 2, 3, 10, 99.99, 1e9, 1.7e12}
	datePool = []int64{0, 86_400_000, 1_600_000_000_000, 1_700_000_000_000, 1_700_000_000_001, 1_751_183_259_370, 1_800_000_000_000, -86_400_000}
	idPool   = []string{"camp1", "camp2", "wf1", "wf2", "em1", "em2", "nope"}
	optPool  = []string{"accepted", "pending", "rejected"}
)

var testProps = map[string]string{
	"plan":   String,
	"city":   String,
	"score":  Number,
	"active": Boolean,
	"signup": Date,
}

type genSend struct {
	contactID                     string // "" for NULL
	sourceType, sourceID, message string
	status                        string
	sentAt, openedAt, clickedAt   *int64
}

type world struct {
	facts []ContactFacts
	sends []genSend
	lists []string
}

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

func randString(r *rand.Rand) string {
	s := pick(r, pool)
	for r.IntN(3) == 0 {
		s += pick(r, pool)
	}
	return s
}

func optStr(r *rand.Rand) *string {
	if r.IntN(4) == 0 {
		return nil
	}
	s := randString(r)
	return &s
}

func optTime(r *rand.Rand) *int64 {
	if r.IntN(2) == 0 {
		return nil
	}
	t := pick(r, datePool)
	return &t
}

func genWorld(r *rand.Rand, n int, prefix string) world {
	w := world{lists: []string{prefix + "list1", prefix + "list2"}}
	for i := range n {
		c := ContactFacts{
			ID:           fmt.Sprintf("%s%05d", prefix, i),
			Email:        fmt.Sprintf("u%d-%s@x.test", i, pick(r, pool)),
			FirstName:    optStr(r),
			LastName:     optStr(r),
			Notes:        optStr(r),
			Source:       randString(r),
			UserGroup:    randString(r),
			Subscribed:   r.IntN(2) == 0,
			CreatedAt:    pick(r, datePool) + int64(r.IntN(3)),
			Custom:       map[string]Value{},
			MailingLists: map[string]bool{},
		}
		if r.IntN(2) == 0 {
			u := fmt.Sprintf("id%d-%s", i, pick(r, pool))
			c.UserID = &u
		}
		if r.IntN(3) > 0 {
			s := pick(r, optPool)
			c.OptInStatus = &s
		}
		for _, name := range slices.Sorted(maps.Keys(testProps)) {
			typ := testProps[name]
			v := Value{Type: typ}
			if r.IntN(10) < 3 {
				c.Custom[name] = v
				continue
			}
			switch typ {
			case String:
				s := randString(r)
				v.Str = &s
			case Number:
				f := pick(r, numPool)
				v.Num = &f
			case Boolean:
				f := float64(r.IntN(2))
				v.Num = &f
			case Date:
				f := float64(pick(r, datePool))
				v.Num = &f
			}
			c.Custom[name] = v
		}
		for _, l := range w.lists {
			if r.IntN(2) == 0 {
				c.MailingLists[l] = true
			}
		}
		for range r.IntN(4) {
			s := genSend{
				contactID:  c.ID,
				sourceType: pick(r, []string{"campaign", "loop", "transactional"}),
				sourceID:   pick(r, idPool),
				message:    pick(r, []string{"em1", "em2", ""}),
				status:     pick(r, []string{"queued", "delivered", "opened", "clicked", "hard_bounced", "complained", "failed"}),
				sentAt:     optTime(r),
				openedAt:   optTime(r),
				clickedAt:  optTime(r),
			}
			w.sends = append(w.sends, s)
		}
		w.facts = append(w.facts, c)
	}
	// Sends without a contact, and for a contact that no longer exists.
	w.sends = append(w.sends, genSend{sourceType: "campaign", sourceID: "camp1", status: "delivered"},
		genSend{contactID: prefix + "ghost", sourceType: "campaign", sourceID: "camp1", status: "clicked", clickedAt: new(int64(1))})
	// The Go side of activity: the same rules as the SQL, over the sends.
	byContact := map[string][]genSend{}
	for _, s := range w.sends {
		byContact[s.contactID] = append(byContact[s.contactID], s)
	}
	for i := range w.facts {
		mine := byContact[w.facts[i].ID]
		w.facts[i].Did = func(action, target, id string) bool {
			for _, s := range mine {
				switch target {
				case TargetCampaign:
					if s.sourceType != "campaign" || s.sourceID != id {
						continue
					}
				case TargetWorkflow:
					if s.sourceType != "loop" || s.sourceID != id {
						continue
					}
				case TargetWorkflowEmail:
					if s.message != id {
						continue
					}
				}
				switch action {
				case ActionSent:
					if s.sentAt != nil || s.status == "delivered" || s.status == "opened" || s.status == "clicked" {
						return true
					}
				case ActionOpened:
					if s.openedAt != nil {
						return true
					}
				case ActionClicked:
					if s.clickedAt != nil {
						return true
					}
				}
			}
			return false
		}
	}
	return w
}

func storeWorld(t testing.TB, ctx context.Context, d db.DB, teamID string, w world) {
	t.Helper()
	err := d.InTx(ctx, func(tx db.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO teams (id, name, created_at) VALUES ($1, $1, 0)`, teamID); err != nil {
			return err
		}
		for name, typ := range testProps {
			if _, err := tx.Exec(ctx, `INSERT INTO contact_properties (team_id, name, label, type, created_at) VALUES ($1, $2, $2, $3, 0)`, teamID, name, typ); err != nil {
				return err
			}
		}
		for _, l := range w.lists {
			if _, err := tx.Exec(ctx, `INSERT INTO mailing_lists (id, team_id, name, created_at, updated_at) VALUES ($1, $2, $1, 0, 0)`, l, teamID); err != nil {
				return err
			}
		}
		for _, c := range w.facts {
			if _, err := tx.Exec(ctx, `INSERT INTO contacts (id, team_id, email, user_id, first_name, last_name, notes, source, subscribed, user_group, opt_in_status, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 0)`,
				c.ID, teamID, c.Email, c.UserID, c.FirstName, c.LastName, c.Notes, c.Source, c.Subscribed, c.UserGroup, c.OptInStatus, c.CreatedAt); err != nil {
				return fmt.Errorf("contact %q: %w", c.Email, err)
			}
			for name, v := range c.Custom {
				if v.Str == nil && v.Num == nil {
					continue
				}
				if _, err := tx.Exec(ctx, `INSERT INTO contact_values (contact_id, team_id, name, str, num) VALUES ($1, $2, $3, $4, $5)`,
					c.ID, teamID, name, v.Str, v.Num); err != nil {
					return err
				}
			}
			for l := range c.MailingLists {
				if _, err := tx.Exec(ctx, `INSERT INTO contact_lists (contact_id, list_id, team_id, created_at) VALUES ($1, $2, $3, 0)`, c.ID, l, teamID); err != nil {
					return err
				}
			}
		}
		for i, s := range w.sends {
			var cid *string
			if s.contactID != "" {
				cid = &s.contactID
			}
			if _, err := tx.Exec(ctx, `INSERT INTO sends (id, team_id, contact_id, recipient, source_type, source_id, source_name, email_message_id, payload, status, created_at, updated_at, sent_at, opened_at, clicked_at)
				VALUES ($1, $2, $3, 'r@x.test', $4, $5, '', $6, '{}', $7, 0, 0, $8, $9, $10)`,
				teamID+"s"+strconv.Itoa(i), teamID, cid, s.sourceType, s.sourceID, s.message, s.status, s.sentAt, s.openedAt, s.clickedAt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("store world: %v", err)
	}
}

// genValue returns a value for a property condition: usually well-formed
// for the type, drawn from the same pools as the contacts (with case
// variants and substrings of real values).
func genValue(r *rand.Rand, typ, op string, w world) any {
	switch typ {
	case String:
		switch r.IntN(4) {
		case 0:
			// A substring of a real value.
			c := pick(r, w.facts)
			v := c.Custom["plan"]
			if v.Str != nil && *v.Str != "" {
				s := *v.Str
				i := r.IntN(len(s))
				j := i + r.IntN(len(s)-i) + 1
				return s[i:j]
			}
			return c.Source
		case 1:
			return randString(r)
		default:
			return pick(r, pool)
		}
	case Number:
		if r.IntN(5) == 0 {
			return strconv.FormatFloat(pick(r, numPool), 'g', -1, 64)
		}
		return pick(r, numPool) + float64(r.IntN(2))*0.25
	case Date:
		ms := pick(r, datePool) + int64(r.IntN(3)) - 1
		if op == OpBetween {
			to := ms + int64(r.IntN(3))*pick(r, []int64{1, 1000, 1e12})
			return map[string]any{"from": isoMS(ms), "to": to}
		}
		if r.IntN(2) == 0 {
			return isoMS(ms)
		}
		return ms
	}
	return nil
}

func isoMS(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

var builtinKeys = []string{"email", "firstName", "lastName", "notes", "source", "userGroup", "userId", "subscribed", "createdAt"}

func genFilter(r *rand.Rand, w world) Filter {
	f := Filter{Match: pick(r, []string{MatchAll, MatchAny})}
	n := 1 + r.IntN(4)
	if r.IntN(2) == 0 {
		n = 1
	}
	if r.IntN(40) == 0 {
		n = 0
	}
	for range n {
		switch r.IntN(10) {
		case 0:
			var s *string
			if r.IntN(4) > 0 {
				v := pick(r, optPool)
				s = &v
			}
			f.Conditions = append(f.Conditions, OptIn(s))
		case 1, 2:
			f.Conditions = append(f.Conditions, Activity(pick(r, []string{ActionSent, ActionOpened, ActionClicked}),
				pick(r, []string{TargetCampaign, TargetWorkflow, TargetWorkflowEmail}), pick(r, idPool), r.IntN(2) == 0))
		default:
			var key, typ string
			if r.IntN(3) == 0 {
				key = pick(r, builtinKeys)
				typ = Builtins[key]
			} else {
				keys := []string{"plan", "city", "score", "active", "signup"}
				key = pick(r, keys)
				typ = testProps[key]
			}
			op := pick(r, operators[typ])
			var v any
			switch op {
			case OpAny, OpEmpty, OpNotEmpty, OpDateEmpty, OpDateNotEmpty, OpIsTrue, OpIsFalse:
			default:
				v = genValue(r, typ, op, w)
			}
			f.Conditions = append(f.Conditions, Property(key, op, v))
		}
	}
	return f
}

func sqlIDs(t testing.TB, ctx context.Context, d db.DB, teamID string, f Filter) []string {
	t.Helper()
	where, args, err := Compile(f, d.Dialect(), testProps, 1)
	if err != nil {
		t.Fatalf("compile %s: %v", mustJSON(f), err)
	}
	rows, err := d.Query(ctx, `SELECT c.id FROM contacts c WHERE c.team_id = $1 AND `+where+` ORDER BY c.id`, append([]any{teamID}, args...)...)
	if err != nil {
		t.Fatalf("query %s: %v\n%s", mustJSON(f), err, where)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func goIDs(f Filter, w world) []string {
	out := []string{}
	for _, c := range w.facts {
		if Match(f, c) {
			out = append(out, c.ID)
		}
	}
	slices.Sort(out)
	return out
}

func mustPrepare(t testing.TB, f Filter) *Plan {
	p, err := Prepare(f, testProps)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestSQLAndMemoryAgree(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		// PostgreSQL costs a round trip per filter; on a busy machine that
		// is what the test's time is made of.
		cases := 2000
		if strings.HasPrefix(url, "postgres") {
			cases = 400
		}
		if v, err := strconv.Atoi(os.Getenv("LASSO_AUDIENCE_CASES")); err == nil {
			cases = v
		}
		if testing.Short() {
			cases = 200
		}
		ctx := context.Background()
		d, err := db.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		if err := db.Migrate(ctx, d); err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(5, 11))
		w := genWorld(r, 300, "a")
		other := genWorld(r, 50, "b") // another team with similar data
		t0 := time.Now()
		storeWorld(t, ctx, d, "team1", w)
		storeWorld(t, ctx, d, "team2", other)
		t.Logf("stored in %v", time.Since(t0))
		svc := New(d, Config{})

		nonEmpty, total := 0, 0
		filters := make([]Filter, cases)
		for i := range filters {
			f := genFilter(r, w)
			// Round-trip through JSON: what is stored is what is evaluated.
			g, err := ParseFilter([]byte(mustJSON(f)))
			if err != nil {
				t.Fatalf("case %d: parse %s: %v", i, mustJSON(f), err)
			}
			filters[i] = g
		}
		for i, g := range filters {
			got, want := sqlIDs(t, ctx, d, "team1", g), goIDs(g, w)
			if !slices.Equal(got, want) {
				where, args, _ := Compile(g, d.Dialect(), testProps, 1)
				t.Fatalf("case %d: filter %s\nSQL  (%d) %v\nGo   (%d) %v\nwhere %s\nargs %q", i, mustJSON(g), len(got), diff(got, want), len(want), diff(want, got), where, args)
			}
			if n, err := svc.Count(ctx, "team1", g); err != nil || n != int64(len(want)) {
				q, args := mustPrepare(t, g).CountSQL(d.Dialect())
				t.Fatalf("case %d: filter %s\nCount = %d, %v; want %d\n%s\nargs %q", i, mustJSON(g), n, err, len(want), q, args)
			}
			if len(got) > 0 && len(got) < len(w.facts) {
				nonEmpty++
			}
			total++
			if i%100 == 0 {
				n, err := svc.CountAudience(ctx, "team1", Audience{Filters: []Filter{g}})
				if err != nil || n != int64(len(want)) {
					t.Fatalf("case %d: CountAudience = %d, %v; want %d", i, n, err, len(want))
				}
				// Keyset pages give the same set.
				var paged []string
				after := ""
				for {
					page, err := svc.ContactIDs(ctx, "team1", g, after, 40)
					if err != nil {
						t.Fatal(err)
					}
					paged = append(paged, page...)
					if len(page) < 40 {
						break
					}
					after = page[len(page)-1]
				}
				if !slices.Equal(paged, want) {
					t.Fatalf("case %d: ContactIDs pages %v, want %v", i, paged, want)
				}
				// Facts loaded from the database evaluate like the generated ones.
				c := pick(r, w.facts)
				fc, err := svc.Facts(ctx, "team1", c.ID, g)
				if err != nil {
					t.Fatal(err)
				}
				if Match(g, fc) != Match(g, c) {
					t.Fatalf("case %d: Match(loaded facts of %s) = %v, generated %v", i, c.ID, Match(g, fc), Match(g, c))
				}
				ok, err := svc.Matches(ctx, "team1", c.ID, g)
				if err != nil || ok != Match(g, c) {
					t.Fatalf("case %d: Matches(%s) = %v, %v; want %v", i, c.ID, ok, err, Match(g, c))
				}
			}
		}
		// The generator must produce discriminating filters, not just
		// all-or-nothing ones.
		if nonEmpty < total/4 {
			t.Fatalf("only %d of %d filters selected a proper subset", nonEmpty, total)
		}
		t.Logf("%d filters, %d proper subsets; %v", total, nonEmpty, time.Since(t0))

		// Audiences: list and subscription restrictions on top.
		for range 50 {
			a := Audience{Filters: []Filter{genFilter(r, w), genFilter(r, w)}, SubscribedOnly: r.IntN(2) == 0}
			if r.IntN(2) == 0 {
				a.MailingListID = pick(r, w.lists)
			}
			n, err := svc.CountAudience(ctx, "team1", a)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for _, c := range w.facts {
				if MatchAudience(a, c) {
					want++
				}
			}
			if n != int64(want) {
				t.Fatalf("audience %s: SQL %d, Go %d", mustJSON(a), n, want)
			}
		}
	})
}

func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
