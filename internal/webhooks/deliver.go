package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"golang.org/x/time/rate"

	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/queue"
)

// retrySchedule is the delay before each retry (Standard Webhooks / Svix).
var retrySchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// PerTeamRate is the most deliveries per second per team (per node).
const PerTeamRate = 10

// Worker delivers webhook messages.
type Worker struct {
	queue.WorkerDefaults[DeliverArgs]
	DB db.DB
	// Client makes the deliveries; default NewClient(false): public
	// addresses only.
	Client *http.Client
	Now    func() time.Time
	// Schedule overrides retrySchedule (tests).
	Schedule []time.Duration

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

// NextRetry implements the retry schedule.
func (w *Worker) NextRetry(job *queue.Job[DeliverArgs]) time.Time {
	s := w.Schedule
	if s == nil {
		s = retrySchedule
	}
	i := job.Attempt - 1
	if i >= len(s) {
		i = len(s) - 1
	}
	if i < 0 {
		i = 0
	}
	return time.Now().Add(s[i])
}

// Timeout bounds one delivery.
func (w *Worker) Timeout(*queue.Job[DeliverArgs]) time.Duration { return 30 * time.Second }

func (w *Worker) limiter(team string) *rate.Limiter {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.limiters == nil {
		w.limiters = map[string]*rate.Limiter{}
	}
	l := w.limiters[team]
	if l == nil {
		l = rate.NewLimiter(PerTeamRate, 1) // evenly spaced: never more than 10 in any second
		w.limiters[team] = l
	}
	return l
}

// Work delivers one message once.
func (w *Worker) Work(ctx context.Context, job *queue.Job[DeliverArgs]) error {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	var event, payload, status string
	err := w.DB.QueryRow(ctx, `SELECT event_name, payload, status FROM webhook_messages WHERE id = $1`, job.Args.MessageID).Scan(&event, &payload, &status)
	if errors.Is(err, db.ErrNoRows) || status == "delivered" {
		return nil // pruned or already delivered: no rate token spent
	}
	if err != nil {
		return err
	}
	// Over the team's rate: wait for the next token (queued, not dropped).
	if r := w.limiter(job.Args.TeamID).Reserve(); r.Delay() > 0 {
		if r.Delay() > 2*time.Second {
			r.Cancel()
			return queue.JobSnooze(r.Delay())
		}
		select {
		case <-time.After(r.Delay()):
		case <-ctx.Done():
			r.Cancel()
			return ctx.Err()
		}
	}
	svc := Service{db: w.DB}
	ep, err := svc.Get(ctx, w.DB, job.Args.TeamID)
	if err != nil || !ep.Enabled {
		_, _ = w.DB.Exec(ctx, `UPDATE webhook_messages SET status = 'failed', last_error = 'endpoint removed or disabled', updated_at = $2 WHERE id = $1`, job.Args.MessageID, now().UnixMilli())
		return nil
	}
	code, respBody, dur, sendErr := w.post(ctx, ep, job.Args.MessageID, []byte(payload), now())
	final := job.Attempt >= job.MaxAttempts
	st := "delivered"
	var errText *string
	if sendErr != nil {
		s := sendErr.Error()
		errText = &s
		st = "pending"
		if final {
			st = "failed"
		}
	}
	var codePtr *int
	if code != 0 {
		codePtr = &code
	}
	_ = w.DB.InTx(ctx, func(tx db.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (id, message_id, url, status_code, response, error, duration_ms, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			ids.New(), job.Args.MessageID, ep.URL, codePtr, respBody, errText, dur.Milliseconds(), now().UnixMilli()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE webhook_messages SET status = $2, attempts = attempts + 1, last_status_code = $3, last_error = $4, updated_at = $5 WHERE id = $1`,
			job.Args.MessageID, st, codePtr, errText, now().UnixMilli())
		return err
	})
	return sendErr
}

func (w *Worker) post(ctx context.Context, ep Endpoint, msgID string, payload []byte, ts time.Time) (int, string, time.Duration, error) {
	wh, err := standardwebhooks.NewWebhook(ep.Secret)
	if err != nil {
		return 0, "", 0, fmt.Errorf("bad secret: %w", err)
	}
	sig, err := wh.Sign(msgID, ts, payload)
	if err != nil {
		return 0, "", 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(payload))
	if err != nil {
		return 0, "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Lasso-Webhooks/1")
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", fmt.Sprint(ts.Unix()))
	req.Header.Set("webhook-signature", sig)
	w.mu.Lock()
	if w.Client == nil {
		w.Client = NewClient(false)
	}
	client := w.Client
	w.mu.Unlock()
	start := time.Now()
	res, err := client.Do(req)
	dur := time.Since(start)
	if err != nil {
		return 0, "", dur, fmt.Errorf("post: %w", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.StatusCode, string(b), dur, fmt.Errorf("endpoint answered %d", res.StatusCode)
	}
	return res.StatusCode, string(b), dur, nil
}
