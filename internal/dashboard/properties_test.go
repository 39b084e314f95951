package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lasso-mail/lasso/internal/testdb"
)

func TestContactProperties(t *testing.T) {
	e := start(t, testdb.URL(t, "sqlite"), nil)
	b := e.setup(t, "Acme", "owner@example.com")
	ctx := context.Background()

	p := b.get("/properties")
	want(t, p, 200, `href="/properties" aria-current="page"`, "<code>firstName</code>", "<code>subscribed</code>", "built-in", `<label for="prop-name">`)
	if strings.Contains(p.body, ">custom<") {
		t.Fatal("a new team has no custom property")
	}

	p = b.post("/properties", url.Values{"name": {"planName"}, "type": {"string"}})
	want(t, p, http.StatusSeeOther)
	p = b.get(p.location)
	want(t, p, 200, "The property planName was created.", "<code>planName</code>", "Plan Name", ">custom<")
	want(t, b.post("/properties", url.Values{"name": {"renewalDate"}, "type": {"date"}}), http.StatusSeeOther)

	for _, c := range []struct{ name, typ, msg string }{
		{"", "string", "A property name is required."},
		{"plan name", "string", "camelCase"},
		{"seats", "integer", "Invalid property type"},
		{"planName", "number", "Property already exists."},
		{"firstName", "string", "Property already exists."},
		{"createdAt", "date", "reserved name"},
	} {
		p := b.post("/properties", url.Values{"name": {c.name}, "type": {c.typ}})
		// The form keeps what was typed next to the message.
		want(t, p, http.StatusUnprocessableEntity, c.msg, `role="alert"`)
		if c.name != "" && !strings.Contains(p.body, `value="`+strings.ReplaceAll(c.name, " ", " ")+`"`) {
			t.Fatalf("%q: form lost the name: %s", c.name, p.body)
		}
	}
	want(t, b.post("/properties", url.Values{"name": {"x"}, "type": {"string"}}, "X-CSRF-Token", "bad"), http.StatusForbidden)

	tm, _ := e.app.Accounts.TeamByName(ctx, "Acme")
	props, err := e.app.Contacts.ListProperties(ctx, tm.ID, true)
	if err != nil || len(props) != 2 || props[0].Key != "planName" || props[1].Type != "date" {
		t.Fatalf("custom properties: %+v %v", props, err)
	}

	// Another team does not see them.
	other, _ := e.userIn(t, "Other", "other@example.com")
	if p := other.get("/properties"); strings.Contains(p.body, "<code>planName</code>") || p.status != 200 {
		t.Fatal("another team sees the property")
	}
}
