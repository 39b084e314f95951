package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/testclock"
	"github.com/lasso-mail/lasso/internal/testdb"
)

// TestHousekeeping runs the hourly clean-up job through the queue: expired
// idempotency keys and uploads never completed go, with the uploads'
// stored bytes; live keys, completed uploads and their files stay.
func TestHousekeeping(t *testing.T) {
	testdb.Each(t, func(t *testing.T, url string) {
		clock := testclock.New(time.Now())
		s := start(t, url, func(c *app.Config) { c.Now = clock.Now })
		ctx := context.Background()
		if _, err := s.app.Senders.Add(ctx, s.team, "example.com", true); err != nil {
			t.Fatal(err)
		}
		count := func(q string, args ...any) int {
			t.Helper()
			var n int
			if err := s.app.DB.QueryRow(ctx, q, args...).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		blob := func(id string) string {
			return filepath.Join(s.app.Cfg.DataDir, "uploads", id[len(id)-2:], id)
		}
		exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

		// A webhook message to keep for 30 days (no endpoint listens).
		if _, err := s.app.Webhooks.Set(ctx, s.team, "http://127.0.0.1:9/hook", []string{"testing.testEvent"}); err != nil {
			t.Fatal(err)
		}
		if err := s.app.Webhooks.SendTest(ctx, s.team); err != nil {
			t.Fatal(err)
		}

		// Old: two keyed events, an upload never PUT, one PUT but never
		// completed, and a completed one.
		for _, k := range []string{"old-1", "old-2"} {
			expect(t, s.do(t, "POST", "/api/v1/events/send", `{"email":"a@example.com","eventName":"signup"}`, "Idempotency-Key", k), 200)
		}
		r := s.do(t, "POST", "/api/v1/uploads", fmt.Sprintf(`{"contentType":"image/png","contentLength":%d}`, len(pngBytes)))
		expect(t, r, 200)
		neverPut := str(t, r, "emailAssetId")
		r = s.do(t, "POST", "/api/v1/uploads", fmt.Sprintf(`{"contentType":"image/png","contentLength":%d}`, len(pngBytes)))
		expect(t, r, 200)
		putOnly := str(t, r, "emailAssetId")
		if res := s.put(t, strings.Replace(str(t, r, "presignedUrl"), s.app.PublicURL(), s.url, 1), "image/png", pngBytes); res.StatusCode != 200 {
			t.Fatalf("PUT: %d", res.StatusCode)
		}
		done := s.upload(t, "image/png", pngBytes)
		expect(t, done, 200)
		completed := str(t, done, "emailAssetId")
		if !exists(blob(putOnly)) || !exists(blob(completed)) {
			t.Fatal("stored bytes not where the test looks")
		}

		// 25 hours later: a new key and a fresh upload.
		clock.Advance(25 * time.Hour)
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"email":"a@example.com","eventName":"signup"}`, "Idempotency-Key", "new-1"), 200)
		expect(t, s.do(t, "POST", "/api/v1/uploads", fmt.Sprintf(`{"contentType":"image/png","contentLength":%d}`, len(pngBytes))), 200)
		if n := count(`SELECT count(*) FROM idempotency_keys`); n != 3 {
			t.Fatalf("%d keys before housekeeping", n)
		}

		// The job, as the periodic schedule inserts it.
		housekeep := func() {
			t.Helper()
			if err := s.app.DB.InTx(ctx, func(tx db.Tx) error { return s.app.Queue.InsertTx(ctx, tx, app.HousekeepingArgs{}, nil) }); err != nil {
				t.Fatal(err)
			}
		}
		housekeep()
		deadline := time.Now().Add(15 * time.Second)
		for count(`SELECT count(*) FROM idempotency_keys`) != 1 || count(`SELECT count(*) FROM uploads`) != 2 {
			if time.Now().After(deadline) {
				t.Fatalf("after housekeeping: %d keys, %d uploads", count(`SELECT count(*) FROM idempotency_keys`), count(`SELECT count(*) FROM uploads`))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if count(`SELECT count(*) FROM idempotency_keys WHERE key = 'new-1'`) != 1 {
			t.Fatal("the live key was deleted")
		}
		if count(`SELECT count(*) FROM uploads WHERE id IN ($1, $2)`, neverPut, putOnly) != 0 || count(`SELECT count(*) FROM uploads WHERE id = $1`, completed) != 1 {
			t.Fatal("wrong uploads deleted")
		}
		if exists(blob(putOnly)) || !exists(blob(completed)) {
			t.Fatal("stored bytes: the abandoned file stayed or the completed one went")
		}
		// The live key still refuses a duplicate; the expired one no longer does.
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"email":"a@example.com","eventName":"signup"}`, "Idempotency-Key", "new-1"), 409)
		expect(t, s.do(t, "POST", "/api/v1/events/send", `{"email":"a@example.com","eventName":"signup"}`, "Idempotency-Key", "old-1"), 200)
		if n := count(`SELECT count(*) FROM webhook_messages`); n != 1 {
			t.Fatalf("%d webhook messages after 25 h, want the 1 kept for 30 days", n)
		}

		// 31 days on, the webhook message goes too.
		clock.Advance(30 * 24 * time.Hour)
		housekeep()
		deadline = time.Now().Add(15 * time.Second)
		for count(`SELECT count(*) FROM webhook_messages`) != 0 {
			if time.Now().After(deadline) {
				t.Fatal("webhook history older than 30 days was kept")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
