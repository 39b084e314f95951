// Command lasso is the Lasso email platform: the HTTP API, SMTP listener and
// background workers (serve), and the admin commands that work on the same
// database while a server runs.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lasso:", err)
		os.Exit(1)
	}
}

// run parses args and runs one command. It is main without the process;
// flags fall back to LASSO_* variables of the process environment.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runCLI(ctx, args, stdout, stderr)
}
