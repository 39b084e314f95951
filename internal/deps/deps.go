package deps

import (
	_ "blitiri.com.ar/go/spf"
	_ "github.com/alecthomas/kong"
	_ "github.com/emersion/go-message"
	_ "github.com/emersion/go-msgauth/dkim"
	_ "github.com/emersion/go-sasl"
	_ "github.com/emersion/go-smtp"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/miekg/dns"
	_ "github.com/pressly/goose/v3"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/riverqueue/river"
	_ "github.com/riverqueue/river/riverdriver/riverpgxv5"
	_ "github.com/riverqueue/river/riverdriver/riversqlite"
	_ "github.com/riverqueue/river/rivermigrate"
	_ "github.com/standard-webhooks/standard-webhooks/libraries/go"
	_ "github.com/wneessen/go-mail/smtp"
	_ "golang.org/x/time/rate"
	_ "modernc.org/sqlite"
)
