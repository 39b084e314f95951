// Command loadgen drives a Lasso (Loops-compatible) API with event sends or
// contact upserts and reports throughput, status codes and latency
// percentiles. Standard library only.
//
//	go run ./bench/loadgen -url http://127.0.0.1:8080 -key lso_… -endpoint events -c 32 -d 10s
//
// Every request uses a new contact email. With -rate 0 each of the -c workers
// sends its next request as soon as the previous one is answered (as fast as
// possible); with -rate R requests are scheduled at R per second in total and
// latency is measured from the scheduled time, so a stalled server is not
// hidden by the generator waiting for it (no coordinated omission).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type config struct {
	url      string
	key      string
	endpoint string
	c        int
	d        time.Duration
	n        int64
	rate     float64
	prefix   string
	timeout  time.Duration
	tsv      bool
	jsonOut  bool
}

type result struct {
	latencies []time.Duration
	statuses  map[int]int64
	errors    map[string]int64
}

func main() {
	var cfg config
	flag.StringVar(&cfg.url, "url", "http://127.0.0.1:8080", "server base URL (the /api/v1/... path is appended)")
	flag.StringVar(&cfg.key, "key", os.Getenv("LASSO_API_KEY"), "API key (default $LASSO_API_KEY)")
	flag.StringVar(&cfg.endpoint, "endpoint", "events", "events (POST /api/v1/events/send) or contacts (PUT /api/v1/contacts/update)")
	flag.IntVar(&cfg.c, "c", 8, "concurrency (workers and keep-alive connections)")
	flag.DurationVar(&cfg.d, "d", 0, "duration (default 10s unless -n is given)")
	flag.Int64Var(&cfg.n, "n", 0, "total requests (0 = until -d elapses)")
	flag.Float64Var(&cfg.rate, "rate", 0, "target requests/s in total (0 = open loop: as fast as the workers go)")
	flag.StringVar(&cfg.prefix, "prefix", "", "email local-part prefix (default lg-<unix-nanos>)")
	flag.DurationVar(&cfg.timeout, "timeout", 10*time.Second, "per-request timeout")
	flag.BoolVar(&cfg.tsv, "tsv", false, "print one tab-separated summary line instead of the report")
	flag.BoolVar(&cfg.jsonOut, "json", false, "print the summary as JSON instead of the report")
	flag.Parse()

	if cfg.key == "" {
		fatalf("-key is required")
	}
	if cfg.endpoint != "events" && cfg.endpoint != "contacts" {
		fatalf("-endpoint must be events or contacts")
	}
	if cfg.c < 1 {
		fatalf("-c must be >= 1")
	}
	if cfg.d == 0 && cfg.n == 0 {
		cfg.d = 10 * time.Second
	}
	if cfg.prefix == "" {
		cfg.prefix = fmt.Sprintf("lg-%d", time.Now().UnixNano())
	}
	cfg.url = strings.TrimRight(cfg.url, "/")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	res, elapsed := run(ctx, cfg)
	report(cfg, res, elapsed)
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "loadgen: "+format+"\n", args...)
	os.Exit(2)
}

func newClient(cfg config) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        cfg.c,
		MaxIdleConnsPerHost: cfg.c,
		MaxConnsPerHost:     cfg.c,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: cfg.timeout}
}

// body builds the request body for request number seq.
func body(cfg config, seq int64) []byte {
	email := fmt.Sprintf("%s-%d@bench.example", cfg.prefix, seq)
	var v any
	if cfg.endpoint == "events" {
		v = map[string]any{
			"email":     email,
			"eventName": "benchSignup",
			"eventProperties": map[string]any{
				"plan":   "pro",
				"amount": seq % 1000,
				"trial":  seq%2 == 0,
			},
		}
	} else {
		v = map[string]any{
			"email":     email,
			"firstName": "Load",
			"lastName":  fmt.Sprintf("Gen%d", seq),
			"userGroup": "bench",
		}
	}
	b, _ := json.Marshal(v)
	return b
}

func run(ctx context.Context, cfg config) (result, time.Duration) {
	client := newClient(cfg)
	method, path := "POST", "/api/v1/events/send"
	if cfg.endpoint == "contacts" {
		method, path = "PUT", "/api/v1/contacts/update"
	}
	target := cfg.url + path
	auth := "Bearer " + cfg.key

	if cfg.d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.d)
		defer cancel()
	}

	var seq atomic.Int64
	// next reserves the next request number; false when -n is exhausted.
	next := func() (int64, bool) {
		s := seq.Add(1)
		if cfg.n > 0 && s > cfg.n {
			return 0, false
		}
		return s, true
	}

	// With -rate, a scheduler hands out intended start times.
	var slots chan time.Time
	start := time.Now()
	if cfg.rate > 0 {
		slots = make(chan time.Time, cfg.c)
		go func() {
			defer close(slots)
			interval := time.Duration(float64(time.Second) / cfg.rate)
			for i := int64(0); ; i++ {
				at := start.Add(time.Duration(i) * interval)
				if d := time.Until(at); d > 0 {
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return
					}
				}
				select {
				case slots <- at:
				case <-ctx.Done():
					return
				}
			}
		}()
	}

	results := make([]result, cfg.c)
	var wg sync.WaitGroup
	for w := 0; w < cfg.c; w++ {
		wg.Add(1)
		go func(r *result) {
			defer wg.Done()
			r.statuses = map[int]int64{}
			r.errors = map[string]int64{}
			for {
				var began time.Time
				if slots != nil {
					at, ok := <-slots
					if !ok {
						return
					}
					began = at
				}
				if ctx.Err() != nil {
					return
				}
				s, ok := next()
				if !ok {
					return
				}
				b := body(cfg, s)
				if slots == nil {
					began = time.Now()
				}
				req, err := http.NewRequestWithContext(context.Background(), method, target, bytes.NewReader(b))
				if err != nil {
					fatalf("%v", err)
				}
				req.Header.Set("Authorization", auth)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					r.errors[errKind(err)]++
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				r.latencies = append(r.latencies, time.Since(began))
				r.statuses[resp.StatusCode]++
			}
		}(&results[w])
	}
	wg.Wait()
	elapsed := time.Since(start)

	var all result
	all.statuses = map[int]int64{}
	all.errors = map[string]int64{}
	for _, r := range results {
		all.latencies = append(all.latencies, r.latencies...)
		for k, v := range r.statuses {
			all.statuses[k] += v
		}
		for k, v := range r.errors {
			all.errors[k] += v
		}
	}
	sort.Slice(all.latencies, func(i, j int) bool { return all.latencies[i] < all.latencies[j] })
	return all, elapsed
}

func errKind(err error) string {
	var ne net.Error
	if ok := asNetErr(err, &ne); ok && ne.Timeout() {
		return "timeout"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

func asNetErr(err error, target *net.Error) bool {
	for err != nil {
		if ne, ok := err.(net.Error); ok {
			*target = ne
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

func pct(l []time.Duration, p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	i := int(float64(len(l))*p+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(l) {
		i = len(l) - 1
	}
	return l[i]
}

// selfCPU is the CPU time (user+system) this process has used, in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type summary struct {
	Endpoint string           `json:"endpoint"`
	C        int              `json:"concurrency"`
	Rate     float64          `json:"targetRate"`
	Seconds  float64          `json:"seconds"`
	Requests int64            `json:"requests"`
	RPS      float64          `json:"rps"`
	OK2xx    int64            `json:"ok2xx"`
	Statuses map[string]int64 `json:"statuses"`
	Errors   map[string]int64 `json:"errors"`
	P50, P90 float64
	P99, Max float64
}

func report(cfg config, r result, elapsed time.Duration) {
	s := summary{Endpoint: cfg.endpoint, C: cfg.c, Rate: cfg.rate, Seconds: elapsed.Seconds(), Statuses: map[string]int64{}, Errors: r.errors}
	for code, n := range r.statuses {
		s.Statuses[fmt.Sprint(code)] = n
		s.Requests += n
		if code >= 200 && code < 300 {
			s.OK2xx += n
		}
	}
	for _, n := range r.errors {
		s.Requests += n
	}
	s.RPS = float64(s.OK2xx) / elapsed.Seconds()
	l := r.latencies
	s.P50, s.P90, s.P99 = ms(pct(l, .50)), ms(pct(l, .90)), ms(pct(l, .99))
	if len(l) > 0 {
		s.Max = ms(l[len(l)-1])
	}

	switch {
	case cfg.jsonOut:
		out, _ := json.Marshal(map[string]any{
			"endpoint": s.Endpoint, "concurrency": s.C, "targetRate": s.Rate, "seconds": s.Seconds,
			"requests": s.Requests, "rps": s.RPS, "ok2xx": s.OK2xx, "statuses": s.Statuses, "errors": s.Errors,
			"p50Ms": s.P50, "p90Ms": s.P90, "p99Ms": s.P99, "maxMs": s.Max,
		})
		fmt.Println(string(out))
	case cfg.tsv:
		// endpoint c rps p50 p90 p99 max requests ok2xx non2xx errors loadgen-cores
		var errs int64
		for _, n := range r.errors {
			errs += n
		}
		fmt.Printf("%s\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%.2f\n",
			s.Endpoint, s.C, s.RPS, s.P50, s.P90, s.P99, s.Max, s.Requests, s.OK2xx, s.Requests-s.OK2xx-errs, errs, selfCPU()/elapsed.Seconds())
	default:
		fmt.Printf("endpoint     %s (%s)\n", s.Endpoint, map[string]string{"events": "POST /api/v1/events/send", "contacts": "PUT /api/v1/contacts/update"}[s.Endpoint])
		fmt.Printf("concurrency  %d", s.C)
		if s.Rate > 0 {
			fmt.Printf(", target %.0f req/s", s.Rate)
		}
		fmt.Printf("\nduration     %.2fs\n", s.Seconds)
		fmt.Printf("requests     %d (%.0f successful req/s)\n", s.Requests, s.RPS)
		codes := make([]string, 0, len(s.Statuses))
		for k := range s.Statuses {
			codes = append(codes, k)
		}
		sort.Strings(codes)
		for _, k := range codes {
			fmt.Printf("  status %s  %d\n", k, s.Statuses[k])
		}
		for k, n := range s.Errors {
			fmt.Printf("  error %q  %d\n", k, n)
		}
		fmt.Printf("latency      p50 %.2fms  p90 %.2fms  p99 %.2fms  max %.2fms\n", s.P50, s.P90, s.P99, s.Max)
		fmt.Printf("loadgen cpu  %.2f cores\n", selfCPU()/elapsed.Seconds())
	}
}
