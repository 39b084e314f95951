package audience

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/testdb"
)

func TestSegments(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		d, err := db.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		if err := db.Migrate(ctx, d); err != nil {
			t.Fatal(err)
		}
		for _, team := range []string{"t1", "t2"} {
			if _, err := d.Exec(ctx, `INSERT INTO teams (id, name, created_at) VALUES ($1, $1, 0)`, team); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.Exec(ctx, `INSERT INTO contact_properties (team_id, name, label, type, created_at) VALUES ('t1', 'plan', 'Plan', 'string', 0)`); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Exec(ctx, `INSERT INTO sends (id, team_id, recipient, source_type, source_id, source_name, payload, status, created_at, updated_at)
			VALUES ('s1', 't1', 'a@x.test', 'campaign', 'camp1', 'C', '{}', 'delivered', 0, 0)`); err != nil {
			t.Fatal(err)
		}
		clock := time.UnixMilli(1_751_183_259_370)
		svc := New(d, Config{Now: func() time.Time { clock = clock.Add(time.Millisecond); return clock }})
		svc.SetIDExists(func(ctx context.Context, teamID, target, id string) (bool, error) {
			return target == TargetWorkflow && id == "wf1", nil
		})
		plan := Filter{MatchAll, []Condition{Property("plan", OpEquals, "pro")}}

		g, err := svc.CreateSegment(ctx, "t1", "  Pro users ", "", plan)
		if err != nil {
			t.Fatal(err)
		}
		if g.Name != "Pro users" || g.Description != nil {
			t.Fatalf("segment %+v", g)
		}
		b, _ := json.Marshal(g.JSON())
		want := `{"createdAt":"2025-06-29T07:47:39.371Z","description":null,"filter":{"match":"all","conditions":[{"type":"property","key":"plan","operator":"equals","value":"pro"}]},"id":"` + g.ID + `","name":"Pro users","updatedAt":"2025-06-29T07:47:39.371Z"}`
		if string(b) != want {
			t.Fatalf("JSON\n got %s\nwant %s", b, want)
		}
		got, err := svc.GetSegment(ctx, "t1", g.ID)
		if err != nil {
			t.Fatal(err)
		}
		if b2, _ := json.Marshal(got.JSON()); string(b2) != want {
			t.Fatalf("get\n got %s\nwant %s", b2, want)
		}

		// Errors.
		check := func(err error, kind error, msg string) {
			t.Helper()
			if !errors.Is(err, kind) || !strings.Contains(err.Error(), msg) {
				t.Fatalf("got %v, want %v containing %q", err, kind, msg)
			}
		}
		_, err = svc.CreateSegment(ctx, "t1", "Pro users", "", plan)
		check(err, apperr.Invalid, `named "Pro users" already exists`)
		_, err = svc.CreateSegment(ctx, "t2", "Pro users", "", Filter{MatchAll, []Condition{OptIn(nil)}})
		if err != nil {
			t.Fatalf("same name in another team: %v", err)
		}
		_, err = svc.CreateSegment(ctx, "t1", " ", "", plan)
		check(err, apperr.Invalid, "name is required")
		_, err = svc.CreateSegment(ctx, "t1", strings.Repeat("é", 256), "", plan)
		check(err, apperr.Invalid, "at most 255")
		_, err = svc.CreateSegment(ctx, "t1", "x", strings.Repeat("d", 1001), plan)
		check(err, apperr.Invalid, "at most 1000")
		_, err = svc.CreateSegment(ctx, "t1", "x", "", Filter{Match: MatchAll})
		check(err, apperr.Invalid, "at least one condition")
		_, err = svc.CreateSegment(ctx, "t2", "x", "", plan) // t2 has no plan property
		check(err, apperr.Invalid, `"plan" is not a contact property`)
		_, err = svc.CreateSegment(ctx, "t1", "x", "", Filter{MatchAll, []Condition{Activity(ActionOpened, TargetCampaign, "camp2", false)}})
		check(err, apperr.NotFound, "Campaign not found.")
		_, err = svc.CreateSegment(ctx, "t1", "x", "", Filter{MatchAll, []Condition{Activity(ActionOpened, TargetWorkflowEmail, "em9", false)}})
		check(err, apperr.NotFound, "Workflow email not found.")
		_, err = svc.CreateSegment(ctx, "t2", "x", "", Filter{MatchAll, []Condition{Activity(ActionOpened, TargetCampaign, "camp1", false)}})
		check(err, apperr.NotFound, "Campaign not found.") // camp1's sends are t1's
		_, err = svc.GetSegment(ctx, "t1", "nope")
		check(err, apperr.Invalid, "Invalid audience segment id.")
		_, err = svc.GetSegment(ctx, "t2", g.ID)
		check(err, apperr.NotFound, "Audience segment not found.")

		// Known ids: from sends, and from IDExists.
		desc := "Clicked"
		a, err := svc.CreateSegment(ctx, "t1", "Activity", desc, Filter{MatchAny, []Condition{
			Activity(ActionClicked, TargetCampaign, "camp1", false), Activity(ActionSent, TargetWorkflow, "wf1", true)}})
		if err != nil {
			t.Fatal(err)
		}
		if a.Description == nil || *a.Description != desc {
			t.Fatalf("description %v", a.Description)
		}

		// List: newest first, keyset pages.
		var made []string
		for _, n := range []string{"s3", "s4", "s5"} {
			s, err := svc.CreateSegment(ctx, "t1", n, "", plan)
			if err != nil {
				t.Fatal(err)
			}
			made = append(made, s.ID)
		}
		order := []string{made[2], made[1], made[0], a.ID, g.ID}
		var seen []string
		cursor := ""
		for {
			page, err := svc.ListSegments(ctx, "t1", cursor, 2)
			if err != nil {
				t.Fatal(err)
			}
			if page.Total != 5 || page.PerPage != 2 {
				t.Fatalf("page %+v", page)
			}
			for _, s := range page.Items {
				seen = append(seen, s.ID)
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		if strings.Join(seen, ",") != strings.Join(order, ",") {
			t.Fatalf("order %v, want %v", seen, order)
		}
		_, err = svc.ListSegments(ctx, "t1", "cnotacursor0000000000000", 10)
		check(err, apperr.Invalid, "Invalid cursor.")
		empty, err := svc.ListSegments(ctx, "t1", "", 50)
		if err != nil || len(empty.Items) != 5 || empty.NextCursor != "" {
			t.Fatalf("one page: %+v %v", empty, err)
		}
		if f, err := svc.SegmentFilter(ctx, "t1", g.ID); err != nil || mustJSON(f) != mustJSON(plan) {
			t.Fatalf("SegmentFilter %v %v", f, err)
		}
	})
}
