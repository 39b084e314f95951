package audience

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
)

func TestParseFilterRoundTrip(t *testing.T) {
	in := `{"match":"any","conditions":[
		{"type":"property","key":"planName","operator":"equals","value":"pro"},
		{"type":"property","key":"signup","operator":"between","value":{"from":"2025-01-01T00:00:00.000Z","to":"2025-02-01"}},
		{"type":"property","key":"vip","operator":"isTrue"},
		{"type":"optIn","status":"accepted"},
		{"type":"optIn","status":null},
		{"type":"activity","action":"clicked","negate":false,"target":"workflowEmail","id":"cem52l54f20i1la0lfooe3z12"}]}`
	f, err := ParseFilter([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"match":"any","conditions":[{"type":"property","key":"planName","operator":"equals","value":"pro"},{"type":"property","key":"signup","operator":"between","value":{"from":"2025-01-01T00:00:00.000Z","to":"2025-02-01"}},{"type":"property","key":"vip","operator":"isTrue"},{"type":"optIn","status":"accepted"},{"type":"optIn","status":null},{"type":"activity","action":"clicked","negate":false,"target":"workflowEmail","id":"cem52l54f20i1la0lfooe3z12"}]}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	var g Filter
	if err := json.Unmarshal(out, &g); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{"planName": String, "signup": Date, "vip": Boolean}
	if err := Validate(g, props); err != nil {
		t.Fatal(err)
	}
	// From a decoded request body.
	var v any
	_ = json.Unmarshal([]byte(in), &v)
	if h, err := FilterFromValue(v); err != nil || len(h.Conditions) != 6 {
		t.Fatalf("FilterFromValue: %v %v", h, err)
	}
}

func TestParseFilterErrors(t *testing.T) {
	cases := []struct{ in, msg string }{
		{`[]`, "filter must be an object"},
		{`{"match":"all"}`, "filter.conditions is required"},
		{`{"conditions":[]}`, "filter.match is required"},
		{`{"match":"some","conditions":[]}`, `filter.match must be "all" or "any"`},
		{`{"match":"all","conditions":[],"extra":1}`, `unknown key "extra"`},
		{`{"match":"all","conditions":{}}`, "must be an array"},
		{`{"match":"all","conditions":[{"type":"segment"}]}`, `filter.conditions[0].type "segment" is not supported`},
		{`{"match":"all","conditions":[{"key":"a"}]}`, `filter.conditions[0].type is required`},
		{`{"match":"all","conditions":[{"type":"property","key":"a","operator":"startsWith","value":"x"}]}`, `operator "startsWith" is not supported`},
		{`{"match":"all","conditions":[{"type":"property","key":"a","operator":"equals","value":"x","negate":true}]}`, `unknown key "negate" for a property condition`},
		{`{"match":"all","conditions":[{"type":"property","operator":"equals"}]}`, `filter.conditions[0].key is required`},
		{`{"match":"all","conditions":[{"type":"optIn"}]}`, `status is required`},
		{`{"match":"all","conditions":[{"type":"optIn","status":"yes"}]}`, `status must be "accepted", "pending", "rejected" or null`},
		{`{"match":"all","conditions":[{"type":"activity","action":"bounced","negate":false,"target":"campaign","id":"x"}]}`, `action must be`},
		{`{"match":"all","conditions":[{"type":"activity","action":"sent","target":"campaign","id":"x"}]}`, `negate is required`},
		{`{"match":"all","conditions":[{"type":"activity","action":"sent","negate":false,"target":"list","id":"x"}]}`, `target must be`},
		{`{"match":"all","conditions":[{"type":"activity","action":"sent","negate":false,"target":"campaign"}]}`, `id is required`},
	}
	for _, c := range cases {
		_, err := ParseFilter([]byte(c.in))
		if err == nil || !errors.Is(err, apperr.Invalid) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want Invalid containing %q", c.in, err, c.msg)
		}
	}
}

func TestValidate(t *testing.T) {
	props := map[string]string{"plan": String, "score": Number, "vip": Boolean, "signup": Date}
	p := func(key, op string, v any) Filter { return Filter{MatchAll, []Condition{Property(key, op, v)}} }
	bad := []struct {
		f   Filter
		msg string
	}{
		{Filter{Match: MatchAll}, "at least one condition"},
		{p("nope", OpEquals, "x"), `"nope" is not a contact property`},
		{p("plan", OpGreaterThan, 3), `operator "greaterThan" does not apply to plan (a string property); use one of any, contains`},
		{p("score", OpContains, "3"), `does not apply to score`},
		{p("vip", OpEquals, true), `does not apply to vip`},
		{p("signup", OpEquals, "2025-01-01"), `does not apply to signup`},
		{p("subscribed", OpContains, "x"), `does not apply to subscribed (a boolean property)`},
		{p("plan", OpEquals, nil), `value is required`},
		{p("plan", OpEquals, []int{1}), `value must be a string`},
		{p("score", OpGreaterThan, "many"), `value must be a number`},
		{p("signup", OpAfter, "yesterday"), `value must be a date`},
		{p("signup", OpBetween, "2025-01-01"), `must be {"from": date, "to": date}`},
		{p("signup", OpBetween, map[string]any{"from": "2025-01-01"}), `both from and to`},
		{p("signup", OpBetween, map[string]any{"from": "2025-02-01", "to": "2025-01-01"}), `from must not be after to`},
		{p("createdAt", OpAfter, "soon"), `value must be a date`},
	}
	for _, c := range bad {
		err := Validate(c.f, props)
		if err == nil || !errors.Is(err, apperr.Invalid) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want Invalid containing %q", mustJSON(c.f), err, c.msg)
		}
	}
	many := Filter{Match: MatchAll}
	for range MaxConditions + 1 {
		many.Conditions = append(many.Conditions, Property("plan", OpNotEmpty, nil))
	}
	if err := Validate(many, props); err == nil || !strings.Contains(err.Error(), "too many conditions") {
		t.Errorf("too many: %v", err)
	}
	good := []Filter{
		p("plan", OpEquals, 42), // numbers are accepted for strings, as contacts do
		p("score", OpEquals, "42.5"),
		p("signup", OpAfter, 1751183259370),
		p("signup", OpBefore, "2025-06-29T07:47:39.370Z"),
		p("signup", OpBetween, map[string]any{"from": "2025-01-01", "to": 1751183259370}),
		p("createdAt", OpDateEmpty, nil),
		p("vip", OpIsFalse, "ignored"),
		p("email", OpContains, "@example.com"),
	}
	for _, f := range good {
		if err := Validate(f, props); err != nil {
			t.Errorf("%s: %v", mustJSON(f), err)
		}
	}
}

func TestSemantics(t *testing.T) {
	str := func(s string) *string { return &s }
	num := func(f float64) *float64 { return &f }
	c := ContactFacts{
		Email: "ada@example.com", FirstName: str("Ada"), Source: "API", CreatedAt: 1_700_000_000_000,
		Custom: map[string]Value{
			"plan":  {Type: String, Str: str("Pro Plan")},
			"city":  {Type: String},
			"empty": {Type: String, Str: str("")},
			"score": {Type: Number},
			"vip":   {Type: Boolean},
			"day":   {Type: Date, Num: num(1_700_000_000_000)},
		},
	}
	p := func(key, op string, v any) Filter { return Filter{MatchAll, []Condition{Property(key, op, v)}} }
	cases := []struct {
		f    Filter
		want bool
	}{
		{p("plan", OpEquals, "pro plan"), true},
		{p("plan", OpContains, "PRO"), true},
		{p("plan", OpContains, "%"), false},
		{p("city", OpEquals, ""), true}, // missing is ""
		{p("city", OpEmpty, nil), true},
		{p("empty", OpEmpty, nil), true},
		{p("city", OpNotEquals, "x"), true},
		{p("city", OpNotContains, "x"), true},
		{p("city", OpContains, ""), true},
		{p("lastName", OpEmpty, nil), true},
		{p("firstName", OpEquals, "ADA"), true},
		{p("score", OpNotEquals, 3), true}, // missing number: notEquals true
		{p("score", OpGreaterThan, -1), false},
		{p("score", OpEmpty, nil), true},
		{p("vip", OpIsFalse, nil), true}, // missing boolean is false
		{p("vip", OpIsTrue, nil), false},
		{p("day", OpBetween, map[string]any{"from": 1_700_000_000_000, "to": 1_700_000_000_000}), true}, // inclusive
		{p("day", OpAfter, 1_700_000_000_000), false},
		{p("createdAt", OpBefore, "2024-01-01"), true},
		{p("subscribed", OpIsFalse, nil), true},
		{p("plan", OpAny, nil), true},
		{Filter{MatchAny, nil}, true},
		{Filter{MatchAll, []Condition{OptIn(nil)}}, true},
		{Filter{MatchAll, []Condition{OptIn(str("accepted"))}}, false},
		{Filter{MatchAll, []Condition{Activity(ActionSent, TargetCampaign, "c1", true)}}, true},
		{p("unknown", OpEmpty, nil), false}, // invalid filters match no one
	}
	for _, tc := range cases {
		if got := Match(tc.f, c); got != tc.want {
			t.Errorf("%s: got %v, want %v", mustJSON(tc.f), got, tc.want)
		}
	}
}

func TestCompilePlaceholders(t *testing.T) {
	f := Filter{MatchAll, []Condition{Property("plan", OpEquals, "Pro"), Property("email", OpContains, "%_")}}
	where, args, err := Compile(f, db.Postgres, map[string]string{"plan": String}, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Team at $3, args from $4.
	for _, want := range []string{"v.team_id = $3", "$4", "$5", "$6", "strpos("} {
		if !strings.Contains(where, want) {
			t.Errorf("where %s lacks %s", where, want)
		}
	}
	if strings.Contains(where, "$7") || len(args) != 3 {
		t.Errorf("args %v for %s", args, where)
	}
}
