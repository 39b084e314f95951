// Package httpapi is the Loops-compatible JSON API. Every route is listed in
// routes(); each is served under /api/v1/…, /api/… and /v1/…. Handlers decode,
// call one service method and encode; errors are mapped to statuses once, in
// errors.go. It must not import the store or other edges.
package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/audience"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/events"
	"github.com/lasso-mail/lasso/internal/ratelimit"
	"github.com/lasso-mail/lasso/internal/transactional"
)

// Deps are the services the API calls.
type Deps struct {
	Accounts *accounts.Service
	Contacts *contacts.Service
	Events   *events.Service
	// Transactional sends transactional email (POST /transactional).
	Transactional *transactional.Service
	Limiter       ratelimit.Limiter
	Logger        *slog.Logger
	// Registerer receives HTTP metrics (optional).
	Registerer prometheus.Registerer
	// DedicatedIPs is returned by GET /dedicated-sending-ips.
	DedicatedIPs []string
	// MaxBodyBytes limits request bodies (default 4 MiB).
	MaxBodyBytes int64
	// PublicURL is the base for links in responses.
	PublicURL string
	// Content serves the content API (issue 3).
	Content *contentService
	// Audience serves audience segments (§5.13).
	Audience *audience.Service
	// Workflows serves the workflow API (§5.15, §5.16).
	Workflows *workflowsService
	// SendMetrics counts sends per transactional email (emails.Service;
	// required).
	SendMetrics sendMetrics
}

// API serves the Loops-compatible API.
type API struct {
	Deps
	log      *slog.Logger
	mux      *http.ServeMux
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// prefixes under which every route is served.
var prefixes = []string{"/api/v1", "/api", "/v1"}

// New builds the API handler.
func New(d Deps) *API {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.MaxBodyBytes == 0 {
		// Transactional sends carry attachments: the whole payload may be 4 MB.
		d.MaxBodyBytes = 4 << 20
	}
	if d.DedicatedIPs == nil {
		d.DedicatedIPs = []string{}
	}
	a := &API{Deps: d, log: d.Logger, mux: http.NewServeMux()}
	a.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lasso_http_requests_total", Help: "API requests by route and status.",
	}, []string{"route", "status"})
	a.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "lasso_http_request_duration_seconds", Help: "API request latency by route.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"route"})
	if d.Registerer != nil {
		d.Registerer.MustRegister(a.requests, a.latency)
	}
	a.routes()
	return a
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, team accounts.Team) error

type route struct {
	method, path string
	h            handlerFunc
}

// handle registers one route under every prefix, plus a catch-all for the
// path that answers 405 with the contract's body.
func (a *API) handle(rs []route) {
	methods := map[string][]string{}
	for _, rt := range rs {
		methods[rt.path] = append(methods[rt.path], rt.method)
		h := a.authed(rt.h)
		for _, p := range prefixes {
			a.mux.Handle(rt.method+" "+p+rt.path, h)
		}
	}
	for path, ms := range methods {
		sort.Strings(ms)
		allow := strings.Join(ms, ", ")
		for _, p := range prefixes {
			a.mux.HandleFunc(p+path, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Allow", allow)
				writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"success": false, "message": "Method not allowed."})
			})
		}
	}
	for _, p := range prefixes {
		a.mux.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
			a.writeError(w, r, apperr.New(apperr.NotFound, "Route not found."))
		})
	}
}

// ServeHTTP implements http.Handler with panic recovery, a request log line
// and metrics around the mux.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: 200}
	info := &reqInfo{}
	r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
	defer func() {
		if p := recover(); p != nil {
			a.log.ErrorContext(r.Context(), "panic in handler", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			if !rec.wrote {
				a.writeError(rec, r, fmt.Errorf("panic: %v", p))
			}
		}
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		d := time.Since(start)
		a.requests.WithLabelValues(route, strconv.Itoa(rec.status)).Inc()
		a.latency.WithLabelValues(route).Observe(d.Seconds())
		a.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method), slog.String("route", route), slog.Int("status", rec.status),
			slog.String("team", info.team), slog.Duration("duration", d))
	}()
	r.Body = http.MaxBytesReader(rec, r.Body, a.MaxBodyBytes)
	// Every response carries the rate-limit headers; before the key is
	// known (401, 404, 405) they show the full allowance.
	if lim := a.Limiter.Limit(); lim > 0 {
		v := strconv.Itoa(lim)
		w.Header().Set("x-ratelimit-limit", v)
		w.Header().Set("x-ratelimit-remaining", v)
	}
	a.mux.ServeHTTP(rec, r)
}

type infoKey struct{}

type reqInfo struct{ team string }

type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if r.wrote {
		return
	}
	r.status, r.wrote = code, true
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

// authed authenticates the bearer key, applies the team's rate limit and
// sets the rate-limit headers, then calls h.
func (a *API) authed(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimSpace(r.Header.Get("Authorization"))
		if len(key) > 7 && strings.EqualFold(key[:7], "bearer ") {
			key = strings.TrimSpace(key[7:])
		} else {
			key = ""
		}
		team, err := a.Accounts.Authenticate(r.Context(), key)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		if info, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
			info.team = team.ID
		}
		dec, err := a.Limiter.Allow(r.Context(), team.ID)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		if dec.Limit > 0 {
			w.Header().Set("x-ratelimit-limit", strconv.Itoa(dec.Limit))
			w.Header().Set("x-ratelimit-remaining", strconv.Itoa(dec.Remaining))
		}
		if !dec.Allowed {
			a.writeError(w, r, apperr.New(apperr.RateLimited, "Rate limit of %d requests per second exceeded.", dec.Limit))
			return
		}
		if err := h(w, r, team); err != nil {
			a.writeError(w, r, err)
		}
	})
}
