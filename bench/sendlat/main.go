// Command sendlat measures transactional send latency end to end: from the
// 200 response of POST /api/v1/transactional (the API accepted the email) to
// the moment the message has been fully received by an SMTP sink that the
// lasso server relays to. It then steps the send rate up to find the maximum
// sustained rate.
//
// sendlat runs the sink itself (-sink-addr); start lasso with
// --smtp-relay smtp://SINK?tls=none so that its outbound mail lands there.
// bench/sendlat/run.sh does all of this (build, server, key, domain).
//
//	sendlat -url http://127.0.0.1:8080 -key KEY -sink-addr 127.0.0.1:2599 -setup -rate 200 -d 30s
//	sendlat ... -rates 200,400,600,800 -d 15s    # step up until the sink falls behind
//
// With -mode workflow the load is POST /api/v1/events/send instead: -setup
// creates and starts a workflow EventTrigger (an event name of its own) → SendEmailAction →
// Exit, so every event starts a run that queues one email; with
// -database-url (the server's database) sendlat also reads, for every
// event, the delay from the event being stored to its email being queued
// (sends.created_at − events.created_at, both stamped by the server).
//
//	sendlat ... -mode workflow -setup -database-url ./data/lasso.db -rate 1000 -d 20s
//
// Sends are paced open-loop (one goroutine per scheduled send, at most -c in
// flight), so a slow API shows up as a lower achieved send rate rather than
// being hidden by coordinated omission.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/lasso-mail/lasso/internal/db"
)

// sink is an SMTP server that records when each recipient's message arrived.
type sink struct {
	mu   sync.Mutex
	recv map[string]time.Time
	n    atomic.Int64
}

func (k *sink) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{k: k}, nil }

type session struct {
	k    *sink
	rcpt []string
}

func (s *session) Reset()        { s.rcpt = s.rcpt[:0] }
func (s *session) Logout() error { return nil }
func (s *session) Mail(string, *smtp.MailOptions) error {
	return nil
}
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.rcpt = append(s.rcpt, strings.ToLower(to))
	return nil
}
func (s *session) Data(r io.Reader) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	now := time.Now()
	s.k.mu.Lock()
	for _, to := range s.rcpt {
		if _, dup := s.k.recv[to]; !dup {
			s.k.recv[to] = now
		}
	}
	s.k.mu.Unlock()
	s.k.n.Add(int64(len(s.rcpt)))
	return nil
}

func (k *sink) get(to string) (time.Time, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t, ok := k.recv[to]
	return t, ok
}

type client struct {
	base, key string
	hc        *http.Client
}

func (c *client) do(ctx context.Context, method, path string, body any, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode, nil
}

// setup creates and publishes a transactional email and returns its id.
func setup(ctx context.Context, c *client, fromDomainUser string) (string, error) {
	var te struct {
		ID                                 string `json:"id"`
		DraftEmailMessageID                string `json:"draftEmailMessageId"`
		DraftEmailMessageContentRevisionID string `json:"draftEmailMessageContentRevisionId"`
	}
	if _, err := c.do(ctx, "POST", "/api/v1/transactional-emails", map[string]any{"name": "sendlat " + time.Now().Format(time.RFC3339Nano)}, &te); err != nil {
		return "", err
	}
	if te.ID == "" || te.DraftEmailMessageID == "" {
		return "", fmt.Errorf("create transactional: unexpected response %+v", te)
	}
	if _, err := c.do(ctx, "POST", "/api/v1/email-messages/"+te.DraftEmailMessageID, map[string]any{
		"expectedRevisionId": te.DraftEmailMessageContentRevisionID,
		"subject":            "Hello {data.name}",
		"fromName":           "Bench",
		"fromEmail":          fromDomainUser,
		"lmx":                "<Paragraph>Hi {data.name}</Paragraph>",
	}, nil); err != nil {
		return "", err
	}
	if _, err := c.do(ctx, "POST", "/api/v1/transactional-emails/"+te.ID+"/publish", map[string]any{}, nil); err != nil {
		return "", err
	}
	return te.ID, nil
}

// setupWorkflow creates and starts a workflow that sends one email per
// event and returns its id.
func setupWorkflow(ctx context.Context, c *client, fromDomainUser, event string) (string, error) {
	var wf struct {
		ID         string `json:"id"`
		RootNodeID string `json:"rootNodeId"`
		Revision   string `json:"workflowRevisionId"`
	}
	if _, err := c.do(ctx, "POST", "/api/v1/workflows", map[string]any{"name": "sendlat " + time.Now().Format(time.RFC3339Nano)}, &wf); err != nil {
		return "", err
	}
	var upd struct {
		Revision string `json:"workflowRevisionId"`
	}
	if _, err := c.do(ctx, "POST", "/api/v1/workflows/"+wf.ID+"/nodes/"+wf.RootNodeID, map[string]any{
		"expectedRevisionId": wf.Revision,
		"payload":            map[string]any{"typeName": "EventTrigger", "eventName": event, "reEligible": true},
	}, &upd); err != nil {
		return "", err
	}
	var ins struct {
		Node struct {
			EmailMessageID string `json:"emailMessageId"`
		} `json:"node"`
	}
	if _, err := c.do(ctx, "POST", "/api/v1/workflows/"+wf.ID+"/nodes", map[string]any{
		"expectedRevisionId": upd.Revision, "insertMode": "after", "nodeTypeName": "SendEmailAction", "fromNodeId": wf.RootNodeID,
	}, &ins); err != nil {
		return "", err
	}
	var msg struct {
		Revision string `json:"contentRevisionId"`
	}
	if _, err := c.do(ctx, "GET", "/api/v1/email-messages/"+ins.Node.EmailMessageID, nil, &msg); err != nil {
		return "", err
	}
	if _, err := c.do(ctx, "POST", "/api/v1/email-messages/"+ins.Node.EmailMessageID, map[string]any{
		"expectedRevisionId": msg.Revision,
		"subject":            "Hello {contact.firstName}",
		"fromName":           "Bench",
		"fromEmail":          fromDomainUser,
		"lmx":                "<Paragraph>Hi {contact.firstName}, plan {event.plan}</Paragraph>",
	}, nil); err != nil {
		return "", err
	}
	if _, err := c.do(ctx, "POST", "/api/lasso/workflows/"+wf.ID+"/start", nil, nil); err != nil {
		return "", err
	}
	return wf.ID, nil
}

// queued reads event → queued-email delays of the run's recipients from
// the server's database, waiting up to drain for all want of them.
func queued(ctx context.Context, d db.DB, tag string, want int, drain time.Duration) ([]time.Duration, error) {
	deadline := time.Now().Add(drain)
	for {
		rows, err := d.Query(ctx, `SELECT s.created_at - e.created_at FROM sends s JOIN events e ON e.contact_id = s.contact_id AND e.team_id = s.team_id
			WHERE s.source_type = 'loop' AND s.recipient LIKE $1`, "r"+tag+"-%")
		if err != nil {
			return nil, err
		}
		var out []time.Duration
		for rows.Next() {
			var v int64
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if len(out) >= want || time.Now().After(deadline) {
			sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
			return out, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type result struct {
	Rate        int     `json:"rate"`
	Duration    string  `json:"duration"`
	Scheduled   int     `json:"scheduled"`
	Accepted    int     `json:"accepted"`
	Errors      int     `json:"errors"`
	SendRate    float64 `json:"sendRate"`    // accepted / send window
	ReceiptRate float64 `json:"receiptRate"` // received / (last receipt − first accept)
	Received    int     `json:"received"`
	Lost        int     `json:"lost"`
	APIP50      float64 `json:"apiP50Ms"` // scheduled send → 200
	APIP99      float64 `json:"apiP99Ms"`
	P50         float64 `json:"p50Ms"` // 200 → received at sink
	P90         float64 `json:"p90Ms"`
	P99         float64 `json:"p99Ms"`
	Max         float64 `json:"maxMs"`
	FirstErr    string  `json:"firstError,omitempty"`
	// Workflow mode with -database-url: event stored → email queued.
	Queued   int     `json:"queued,omitempty"`
	QueueP50 float64 `json:"queueP50Ms,omitempty"`
	QueueP99 float64 `json:"queueP99Ms,omitempty"`
	QueueMax float64 `json:"queueMaxMs,omitempty"`
}

func pct(s []time.Duration, p float64) float64 {
	if len(s) == 0 {
		return 0
	}
	i := int(p*float64(len(s))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return float64(s[i].Microseconds()) / 1000
}

// load is what run sends: a transactional email (tid) or, in workflow
// mode, a new event; with d set it also measures event → queued.
type load struct {
	workflow bool
	event    string
	tid      string
	db       db.DB
}

func run(ctx context.Context, c *client, k *sink, ld load, rate int, dur, drain time.Duration, conc int, tag string) result {
	n := int(float64(rate) * dur.Seconds())
	type rec struct {
		to       string
		accepted time.Time
		api      time.Duration
	}
	recs := make([]rec, n)
	ok := make([]bool, n)
	var errs atomic.Int64
	var firstErr atomic.Value
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	start := time.Now().Add(50 * time.Millisecond)
	for i := 0; i < n; i++ {
		at := start.Add(time.Duration(float64(i) / float64(rate) * float64(time.Second)))
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(i int, at time.Time) {
			defer func() { <-sem; wg.Done() }()
			to := fmt.Sprintf("r%s-%d@bench.test", tag, i)
			var err error
			if ld.workflow {
				_, err = c.do(ctx, "POST", "/api/v1/events/send", map[string]any{
					"eventName":       ld.event,
					"email":           to,
					"firstName":       "User " + strconv.Itoa(i),
					"eventProperties": map[string]any{"plan": "pro"},
				}, nil)
			} else {
				_, err = c.do(ctx, "POST", "/api/v1/transactional", map[string]any{
					"transactionalId": ld.tid,
					"email":           to,
					"dataVariables":   map[string]any{"name": "User " + strconv.Itoa(i)},
				}, nil)
			}
			now := time.Now()
			if err != nil {
				errs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				return
			}
			recs[i] = rec{to: to, accepted: now, api: now.Sub(at)}
			ok[i] = true
		}(i, at)
	}
	wg.Wait()
	sendEnd := time.Now()

	// Wait for the sink to receive everything that was accepted (or drain expires).
	accepted := 0
	for i := range ok {
		if ok[i] {
			accepted++
		}
	}
	r := result{Rate: rate, Duration: dur.String(), Scheduled: n, Accepted: accepted, Errors: int(errs.Load())}
	if ld.db != nil {
		q, err := queued(ctx, ld.db, tag, accepted, drain)
		if err != nil {
			log.Fatalf("read queue delays: %v", err)
		}
		r.Queued = len(q)
		r.QueueP50, r.QueueP99 = pct(q, 0.50), pct(q, 0.99)
		if len(q) > 0 {
			r.QueueMax = float64(q[len(q)-1].Microseconds()) / 1000
		}
	}
	deadline := time.Now().Add(drain)
	for time.Now().Before(deadline) {
		got := 0
		for i := range recs {
			if ok[i] {
				if _, y := k.get(recs[i].to); y {
					got++
				}
			}
		}
		if got == accepted {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	if v := firstErr.Load(); v != nil {
		r.FirstErr = v.(string)
	}
	var lat, api []time.Duration
	var firstAcc, lastRecv time.Time
	for i := range recs {
		if !ok[i] {
			continue
		}
		api = append(api, recs[i].api)
		if firstAcc.IsZero() || recs[i].accepted.Before(firstAcc) {
			firstAcc = recs[i].accepted
		}
		t, y := k.get(recs[i].to)
		if !y {
			r.Lost++
			continue
		}
		r.Received++
		lat = append(lat, t.Sub(recs[i].accepted))
		if t.After(lastRecv) {
			lastRecv = t
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	sort.Slice(api, func(i, j int) bool { return api[i] < api[j] })
	r.SendRate = float64(accepted) / sendEnd.Sub(start).Seconds()
	if r.Received > 0 && lastRecv.After(firstAcc) {
		r.ReceiptRate = float64(r.Received) / lastRecv.Sub(firstAcc).Seconds()
	}
	r.APIP50, r.APIP99 = pct(api, 0.50), pct(api, 0.99)
	r.P50, r.P90, r.P99 = pct(lat, 0.50), pct(lat, 0.90), pct(lat, 0.99)
	if len(lat) > 0 {
		r.Max = float64(lat[len(lat)-1].Microseconds()) / 1000
	}
	return r
}

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "lasso server base URL")
	key := flag.String("key", os.Getenv("LASSO_API_KEY"), "API key (default $LASSO_API_KEY)")
	sinkAddr := flag.String("sink-addr", "127.0.0.1:0", "listen address of the SMTP sink (lasso's --smtp-relay must point here)")
	sinkOnly := flag.Bool("sink-only", false, "only run the sink (prints SINK_ADDR=…) until interrupted")
	tid := flag.String("transactional-id", "", "published transactional email id (or use -setup)")
	doSetup := flag.Bool("setup", false, "create and publish a transactional email through the API first")
	from := flag.String("from", "hello", "fromEmail of the created transactional email (local part on the team's verified domain, or a full address)")
	rate := flag.Int("rate", 200, "sends/s for the latency run")
	dur := flag.Duration("d", 30*time.Second, "duration of each run")
	drain := flag.Duration("drain", 30*time.Second, "how long to wait after the last send for outstanding messages")
	rates := flag.String("rates", "", "comma-separated rates for the max-sustained-rate search (e.g. 200,400,600); stops at the first failing step")
	maxP99 := flag.Duration("max-p99", 5*time.Second, "a step fails when p99 accept→receipt exceeds this")
	conc := flag.Int("c", 512, "max sends in flight")
	warm := flag.Int("warmup", 200, "warm-up sends (at 100/s) before measuring; 0 disables")
	jsonOut := flag.Bool("json", false, "print one JSON line per run as well")
	mode := flag.String("mode", "transactional", "what to send: transactional (POST /transactional) or workflow (events that each start a workflow run sending one email)")
	dbURL := flag.String("database-url", "", "workflow mode: the server's database (SQLite path or postgres://…) to read event → queued-email delays from")
	flag.Parse()

	k := &sink{recv: map[string]time.Time{}}
	ln, err := net.Listen("tcp", *sinkAddr)
	if err != nil {
		log.Fatalf("sink: %v", err)
	}
	srv := smtp.NewServer(k)
	srv.Domain = "sink.bench.test"
	srv.MaxRecipients = 1000
	srv.MaxMessageBytes = 32 << 20
	srv.ReadTimeout, srv.WriteTimeout = time.Minute, time.Minute
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, smtp.ErrServerClosed) {
			log.Printf("sink: %v", err)
		}
	}()
	fmt.Printf("SINK_ADDR=%s\n", ln.Addr())
	if *sinkOnly {
		select {}
	}
	defer srv.Close()

	if *key == "" {
		log.Fatal("-key is required")
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *conc, MaxConnsPerHost: 0, IdleConnTimeout: time.Minute}
	c := &client{base: strings.TrimRight(*base, "/"), key: *key, hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
	ctx := context.Background()
	ld := load{workflow: *mode == "workflow"}
	switch {
	case *mode != "transactional" && !ld.workflow:
		log.Fatalf("unknown -mode %q", *mode)
	case ld.workflow:
		if !*doSetup {
			log.Fatal("-mode workflow needs -setup")
		}
		ld.event = fmt.Sprintf("sendlat%d", time.Now().UnixNano())
		id, err := setupWorkflow(ctx, c, *from, ld.event)
		if err != nil {
			log.Fatalf("setup: %v", err)
		}
		fmt.Printf("workflow id %s\n", id)
		if *dbURL != "" {
			if ld.db, err = db.Open(ctx, *dbURL); err != nil {
				log.Fatalf("open -database-url: %v", err)
			}
			defer ld.db.Close()
		}
	default:
		if *doSetup {
			id, err := setup(ctx, c, *from)
			if err != nil {
				log.Fatalf("setup: %v", err)
			}
			*tid = id
			fmt.Printf("transactional id %s\n", id)
		}
		if *tid == "" {
			log.Fatal("-transactional-id or -setup is required")
		}
		ld.tid = *tid
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	print := func(label string, r result) {
		verdict := ""
		if label == "step" {
			verdict = " " + stepVerdict(r, *maxP99)
		}
		fmt.Fprintf(out, "%-7s rate=%4d/s sent=%d/%d err=%d send=%.0f/s recv=%.0f/s lost=%d  accept→sink p50=%.1fms p90=%.1fms p99=%.1fms max=%.1fms  api p50=%.1fms p99=%.1fms%s\n",
			label, r.Rate, r.Accepted, r.Scheduled, r.Errors, r.SendRate, r.ReceiptRate, r.Lost, r.P50, r.P90, r.P99, r.Max, r.APIP50, r.APIP99, verdict)
		if ld.db != nil {
			fmt.Fprintf(out, "        event→queued email: %d/%d p50=%.1fms p99=%.1fms max=%.1fms\n", r.Queued, r.Accepted, r.QueueP50, r.QueueP99, r.QueueMax)
		}
		if r.FirstErr != "" {
			fmt.Fprintf(out, "        first error: %s\n", r.FirstErr)
		}
		if *jsonOut {
			b, _ := json.Marshal(r)
			fmt.Fprintf(out, "JSON %s\n", b)
		}
		out.Flush()
	}
	if *warm > 0 {
		r := run(ctx, c, k, ld, 100, time.Duration(*warm)*10*time.Millisecond, *drain, *conc, "warm")
		print("warmup", r)
	}
	if *rate > 0 {
		print("latency", run(ctx, c, k, ld, *rate, *dur, *drain, *conc, "lat"))
	}
	if *rates != "" {
		best := 0
		for _, s := range strings.Split(*rates, ",") {
			rt, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || rt <= 0 {
				log.Fatalf("bad -rates entry %q", s)
			}
			r := run(ctx, c, k, ld, rt, *dur, *drain, *conc, "s"+strconv.Itoa(rt))
			print("step", r)
			if stepVerdict(r, *maxP99) != "ok" {
				break
			}
			best = rt
		}
		fmt.Fprintf(out, "max sustained rate: %d sends/s (steps of %s; fail = errors, loss, send or receipt rate < 95%% of target, or p99 > %s)\n", best, dur, maxP99)
	}
}

func stepVerdict(r result, maxP99 time.Duration) string {
	target := float64(r.Rate)
	switch {
	case r.Errors > 0:
		return "FAIL(errors)"
	case r.Lost > 0:
		return "FAIL(lost)"
	case r.SendRate < 0.95*target:
		return "FAIL(api behind)"
	case r.ReceiptRate < 0.95*target:
		return "FAIL(sink behind)"
	case r.P99 > float64(maxP99.Milliseconds()):
		return "FAIL(p99)"
	}
	return "ok"
}
