package dashboard

import "net/http"

// routes lists every dashboard route.
func (d *Dashboard) routes() http.Handler {
	mux := http.NewServeMux()
	u := d.requireUser

	mux.Handle("GET /static/", http.StripPrefix("/static/", staticHandler()))

	mux.HandleFunc("GET /login", d.handleLogin)
	mux.HandleFunc("POST /login", d.handleLoginPost)
	mux.HandleFunc("POST /logout", d.handleLogout)
	mux.HandleFunc("GET /setup", d.handleSetup)
	mux.HandleFunc("POST /setup", d.handleSetupPost)
	mux.HandleFunc("GET /invite/{token}", d.handleInvite)
	mux.HandleFunc("POST /invite/{token}", d.handleInvitePost)

	mux.HandleFunc("GET /{$}", u(d.handleHome))
	mux.HandleFunc("GET /team", u(d.handleTeam))
	mux.HandleFunc("POST /team/invites", u(d.handleInviteCreate))

	mux.HandleFunc("GET /keys", u(d.handleKeys))
	mux.HandleFunc("POST /keys", u(d.handleKeyCreate))
	mux.HandleFunc("POST /keys/{id}/revoke", u(d.handleKeyRevoke))

	mux.HandleFunc("GET /domains", u(d.handleDomains))
	mux.HandleFunc("POST /domains", u(d.handleDomainAdd))
	mux.HandleFunc("GET /domains/{id}", u(d.handleDomain))
	mux.HandleFunc("POST /domains/{id}/verify", u(d.handleDomainVerify))

	mux.HandleFunc("GET /lists", u(d.handleLists))
	mux.HandleFunc("POST /lists", u(d.handleListCreate))
	mux.HandleFunc("GET /lists/{id}/edit", u(d.handleListEdit))
	mux.HandleFunc("GET /lists/{id}/row", u(d.handleListRow))
	mux.HandleFunc("POST /lists/{id}", u(d.handleListUpdate))
	mux.HandleFunc("POST /lists/{id}/delete", u(d.handleListDelete))

	mux.HandleFunc("GET /properties", u(d.handleProperties))
	mux.HandleFunc("POST /properties", u(d.handlePropertyCreate))

	mux.HandleFunc("GET /contacts", u(d.handleContacts))
	mux.HandleFunc("GET /contacts/{id}", u(d.handleContact))
	mux.HandleFunc("POST /contacts/{id}/unsuppress", u(d.handleContactUnsuppress))

	mux.HandleFunc("GET /webhooks", u(d.handleWebhooks))
	mux.HandleFunc("POST /webhooks", u(d.handleWebhookSave))
	mux.HandleFunc("POST /webhooks/enabled", u(d.handleWebhookEnabled))
	mux.HandleFunc("POST /webhooks/secret", u(d.handleWebhookSecret))
	mux.HandleFunc("POST /webhooks/rotate", u(d.handleWebhookRotate))
	mux.HandleFunc("POST /webhooks/test", u(d.handleWebhookTest))
	mux.HandleFunc("GET /webhooks/log", u(d.handleWebhookLog))
	mux.HandleFunc("POST /webhooks/retry/{id}", u(d.handleWebhookRetry))

	mux.HandleFunc("GET /outbox", u(d.handleOutbox))
	mux.HandleFunc("GET /outbox/{id}", u(d.handleSend))
	mux.HandleFunc("GET /mailbox/{id}", u(d.handleCaptured))
	mux.HandleFunc("GET /mailbox/{id}/html", u(d.handleCapturedHTML))

	mux.HandleFunc("GET /imports", u(d.handleImports))
	mux.HandleFunc("POST /imports", u(d.handleImportUpload))
	mux.HandleFunc("GET /imports/{id}", u(d.handleImport))
	mux.HandleFunc("POST /imports/{id}/start", u(d.handleImportStart))
	mux.HandleFunc("GET /imports/{id}/progress", u(d.handleImportProgress))
	mux.HandleFunc("GET /imports/{id}/errors.csv", u(d.handleImportErrors))

	if d.deps.Content != nil {
		mux.HandleFunc("GET /transactional", u(d.handleTransactionals))
		mux.HandleFunc("GET /transactional/{id}", u(d.handleTransactional))
		mux.HandleFunc("GET /transactional/{id}/html", u(d.handleTransactionalHTML))
	}
	if d.deps.Workflows != nil {
		mux.HandleFunc("GET /workflows", u(d.handleWorkflows))
		mux.HandleFunc("GET /workflows/{id}", u(d.handleWorkflow))
	}

	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		d.notFound(w, r)
	})

	var h http.Handler = mux
	h = d.authenticate(h)
	h = http.NewCrossOriginProtection().Handler(h)
	return securityHeaders(h)
}

// securityHeaders sets a strict CSP (no inline script or style; htmx is
// configured to inject none) and the usual hardening headers.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; frame-ancestors 'self'; form-action 'self'; base-uri 'none'; object-src 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "SAMEORIGIN")
		if h.Get("Cache-Control") == "" {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}
