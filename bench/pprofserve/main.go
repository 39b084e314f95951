// Command pprofserve runs the Lasso HTTP API exactly as `lasso serve` builds
// it (app.Open + App.Serve: same handler, database, queue and workers; no
// SMTP listener) with net/http/pprof on a second address, so CPU and
// contention can be profiled under load without changing the product.
//
//	go run ./bench/pprofserve -data-dir /tmp/d -http-addr 127.0.0.1:8080 -pprof-addr 127.0.0.1:6060
//	# prints an API key for team "Bench" on stdout, then serves
//	go tool pprof -top http://127.0.0.1:6060/debug/pprof/profile?seconds=10
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/lasso-mail/lasso/internal/app"
)

func main() {
	dataDir := flag.String("data-dir", "./lasso-data", "data directory (SQLite file lives here)")
	dbURL := flag.String("database-url", "", "postgres://… to use PostgreSQL")
	httpAddr := flag.String("http-addr", "127.0.0.1:8080", "API listen address")
	pprofAddr := flag.String("pprof-addr", "127.0.0.1:6060", "pprof listen address")
	rateLimit := flag.Int("rate-limit", -1, "API requests per second per team (negative: none)")
	relay := flag.String("smtp-relay", "", "smtp://host:port?tls=none to relay outbound mail to (default: the capture mailbox)")
	hostname := flag.String("hostname", "", "this server's host name (EHLO, Message-IDs)")
	logLevel := flag.String("log-level", "info", "server log level (info logs one line per request, like lasso serve)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(*logLevel))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))

	cfg := app.Config{DataDir: *dataDir, DatabaseURL: *dbURL, HTTPAddr: *httpAddr, RateLimit: *rateLimit, SMTPRelay: *relay, Hostname: *hostname}
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer a.Close()
	t, err := a.Accounts.EnsureTeam(ctx, "Bench")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	secret, _, err := a.Accounts.CreateKey(ctx, t.ID, "pprof")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(secret)

	runtime.SetMutexProfileFraction(5)
	runtime.SetBlockProfileRate(100_000) // one sample per 100µs blocked
	go func() {
		if err := http.ListenAndServe(*pprofAddr, nil); err != nil {
			fmt.Fprintln(os.Stderr, "pprof:", err)
		}
	}()
	if err := a.Serve(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
