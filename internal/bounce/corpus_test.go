package bounce

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

type label struct {
	File         string   `json:"file"`
	Kind         Kind     `json:"kind"`
	Recipients   []string `json:"recipients"`
	Status       string   `json:"status"`
	Reason       string   `json:"reason"`
	PerRecipient []struct {
		Recipient string `json:"recipient"`
		Kind      Kind   `json:"kind"`
		Status    string `json:"status"`
		Reason    string `json:"reason"`
	} `json:"per_recipient"`
}

const corpusDir = "testdata/corpus"

func loadLabels(t *testing.T) []label {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ls []label
	if err := json.Unmarshal(b, &ls); err != nil {
		t.Fatal(err)
	}
	return ls
}

func normAddrs(as []string) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, strings.ToLower(a))
	}
	sort.Strings(out)
	return out
}

func TestCorpusLabelled(t *testing.T) {
	ls := loadLabels(t)
	var ok, statusOK, statusN, reasonOK, perOK, perN int
	var failures []string
	for _, l := range ls {
		raw, err := os.ReadFile(filepath.Join(corpusDir, "mail", l.File))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Parse(raw)
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: error %v", l.File, err))
			continue
		}
		var got []string
		for _, r := range rep.Recipients {
			got = append(got, r.Address)
		}
		want, have := normAddrs(l.Recipients), normAddrs(got)
		kindOK := rep.Kind == l.Kind
		rcptOK := strings.Join(want, ",") == strings.Join(have, ",")
		if kindOK && rcptOK {
			ok++
		} else {
			failures = append(failures, fmt.Sprintf("%-32s want %-10s %-6s %-16s %v\n%34s got  %-10s %-6s %-16s %v  [%s] %.160q",
				l.File, l.Kind, l.Status, l.Reason, want, "", rep.Kind, rep.Status, rep.Reason, have, rep.Format, rep.Diagnostic))
		}
		if l.Status != "" {
			statusN++
			if rep.Status == l.Status {
				statusOK++
			}
		}
		if rep.Reason == l.Reason || (l.Reason == "" && rep.Kind == KindNotBounce) {
			reasonOK++
		}
		for _, pr := range l.PerRecipient {
			perN++
			for _, r := range rep.Recipients {
				if strings.EqualFold(r.Address, pr.Recipient) && r.Kind == pr.Kind {
					perOK++
				}
			}
		}
	}
	pct := 100 * float64(ok) / float64(len(ls))
	for _, f := range failures {
		t.Log(f)
	}
	t.Logf("accuracy: %d/%d (%.1f%%) kind+recipients", ok, len(ls), pct)
	t.Logf("status agreement (info): %d/%d (%.1f%%) of labels with a status", statusOK, statusN, 100*float64(statusOK)/float64(max(statusN, 1)))
	t.Logf("reason agreement (info): %d/%d (%.1f%%)", reasonOK, len(ls), 100*float64(reasonOK)/float64(len(ls)))
	t.Logf("per-recipient kind agreement (info): %d/%d", perOK, perN)
	fmt.Printf("accuracy: %d/%d (%.1f%%)\n", ok, len(ls), pct)
	if pct < 95 {
		t.Errorf("accuracy %.1f%% is below 95%%", pct)
	}
}

func TestCorpusNeverFails(t *testing.T) {
	ents, err := os.ReadDir(filepath.Join(corpusDir, "mail"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) < 600 {
		t.Fatalf("corpus has %d files, want 632", len(ents))
	}
	kinds := map[Kind]int{}
	for _, e := range ents {
		raw, err := os.ReadFile(filepath.Join(corpusDir, "mail", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Parse(raw)
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		if rep == nil {
			t.Errorf("%s: nil report", e.Name())
			continue
		}
		kinds[rep.Kind]++
		// The internal parser must not panic either (Parse recovers).
		_ = parse(raw, ParseOptions{})
	}
	t.Logf("kinds over the whole corpus: %v", kinds)
}
