package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/testdb"
)

var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/api/v1/contacts/create"},
	{"PUT", "/api/v1/contacts/update"},
	{"POST", "/api/v1/contacts/delete"},
	{"POST", "/api/v1/events/send"},
	{"POST", "/api/v1/contacts/properties"},
	{"GET", "/api/v1/contacts/find"},
	{"DELETE", "/api/v1/contacts/suppression"},
}

// FuzzAPIRequest sends arbitrary bodies and queries to every endpoint that
// decodes input: the answer is always JSON in the contract's shape and never
// a 5xx (client mistakes are 4xx).
func FuzzAPIRequest(f *testing.F) {
	seeds := []string{
		`{"email":"a@example.com","firstName":"A","mailingLists":{"x":true}}`,
		`{"email":"a@example.com","userId":"1","score":"12","subscribed":"true"}`,
		`{"eventName":"e","email":"a@example.com","eventProperties":{"a":1,"b":"2024-01-01"},"contactProperties":{"firstName":null}}`,
		`{"name":"planName","type":"string"}`,
		`{"email":null,"userId":null}`, `[]`, `null`, `{"email":1}`, `{"mailingLists":[]}`, `{"eventName":{}}`,
		`{"email":"a@example.com","` + strings.Repeat("k", 600) + `":1}`, "\x00\xff", `{"a":1e999}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), s, "email=a%40example.com")
	}
	url := testdb.URL(f, "sqlite")
	a, err := app.Open(context.Background(), app.Config{DatabaseURL: url, DataDir: f.TempDir(), RateLimit: -1}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { a.Close() })
	tm, _ := a.Accounts.EnsureTeam(context.Background(), "Fuzz")
	key, _, _ := a.Accounts.CreateKey(context.Background(), tm.ID, "")
	_ = a.Contacts.CreateProperty(context.Background(), tm.ID, "score", "number")
	_ = a.Contacts.CreateProperty(context.Background(), tm.ID, "when", "date")
	h := a.Handler()

	f.Fuzz(func(t *testing.T, route uint8, body, query string) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		req := httptest.NewRequest(rt.method, rt.path, strings.NewReader(body))
		req.URL.RawQuery = query
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q → %d %s", rt.method, rt.path, body, rec.Code, rec.Body)
		}
		var v any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("non-JSON answer %d: %q", rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			m, ok := v.(map[string]any)
			if !ok || m["success"] != false {
				t.Fatalf("error body not in contract shape: %s", rec.Body)
			}
		}
		_ = http.StatusOK
	})
}
