package audience

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lasso-mail/lasso/internal/db"
)

// FuzzParseFilter feeds arbitrary JSON to the filter parser: no panic; a
// filter that parses survives a JSON round trip unchanged; one that
// validates compiles on both dialects to SQL whose every placeholder has an
// argument and which never carries a value's text (values travel as
// arguments only); and the in-memory matcher does not panic on it.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		`{"match":"all","conditions":[{"type":"property","key":"plan","operator":"equals","value":"pro"}]}`,
		`{"match":"any","conditions":[{"type":"property","key":"score","operator":"greaterThan","value":3},{"type":"optIn","status":null}]}`,
		`{"match":"all","conditions":[{"type":"property","key":"signedUpAt","operator":"after","value":"2025-01-01"}]}`,
		`{"match":"any","conditions":[{"type":"property","key":"signedUpAt","operator":"between","value":{"from":"2025-01-01T00:00:00.000Z","to":"2025-02-01"}}]}`,
		`{"match":"all","conditions":[{"type":"optIn","status":"accepted"},{"type":"property","key":"plan","operator":"notEmpty"}]}`,
		`{"match":"all","conditions":[{"type":"property","key":"vip","operator":"isTrue"}]}`,
		`{"match":"all","conditions":[{"type":"property","key":"plan","operator":"contains","value":"x'; DROP TABLE contacts; --"}]}`,
		`{"match":"all","conditions":[{"type":"activity","action":"opened","target":"campaign","id":"cll42l54f20i1la0lfooe3z12","negate":true}]}`,
		`{"match":"all","conditions":[]}`,
		`{"match":"none","conditions":[]}`,
		`{"match":"all"}`,
		`[]`, `null`, `{`, `{"match":"all","conditions":[{"type":"property"}]}`,
	} {
		f.Add([]byte(s))
	}
	props := map[string]string{"plan": String, "score": Number, "signedUpAt": Date, "vip": Boolean}
	placeholder := regexp.MustCompile(`\$(\d+)`)
	f.Fuzz(func(t *testing.T, data []byte) {
		flt, err := ParseFilter(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(flt)
		if err != nil {
			t.Fatalf("marshal %s: %v", data, err)
		}
		again, err := ParseFilter(out)
		if err != nil {
			t.Fatalf("round trip of %s: %s does not parse: %v", data, out, err)
		}
		if out2, _ := json.Marshal(again); string(out2) != string(out) {
			t.Fatalf("round trip changed %s into %s", out, out2)
		}
		_ = Match(flt, ContactFacts{})
		if Validate(flt, props) != nil {
			return
		}
		for _, d := range []db.Dialect{db.SQLite, db.Postgres} {
			where, args, err := Compile(flt, d, props, 1)
			if err != nil {
				t.Fatalf("%s: validated filter %s does not compile: %v", d, out, err)
			}
			max := 0
			for _, m := range placeholder.FindAllStringSubmatch(where, -1) {
				n, _ := strconv.Atoi(m[1])
				if n > max {
					max = n
				}
			}
			if max > len(args)+1 {
				t.Fatalf("%s: $%d used with %d args: %s", d, max, len(args), where)
			}
			for _, c := range flt.Conditions {
				var s string
				if json.Unmarshal(c.Value, &s) == nil && len(s) >= 4 && strings.ContainsAny(s, `'";\`) && strings.Contains(where, s) {
					t.Fatalf("%s: value %q inlined into SQL: %s", d, s, where)
				}
			}
		}
	})
}
