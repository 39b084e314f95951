package workflows

import (
	"encoding/json"
	"fmt"
	"testing"
)

func experiment(rate int) *Workflow {
	w := &Workflow{Nodes: map[string]*Node{}}
	w.Nodes["x"] = &Node{ID: "x", Type: TypeExperiment, Next: []string{"a", "b", "c"}, Payload: Payload{SamplingRate: rate}}
	w.Nodes["a"] = &Node{ID: "a", Type: TypeVariant}
	w.Nodes["b"] = &Node{ID: "b", Type: TypeVariant}
	w.Nodes["c"] = &Node{ID: "c", Type: TypeVariant, Payload: Payload{IsControl: true}}
	return w
}

func TestExperimentPick(t *testing.T) {
	for _, rate := range []int{0, 30, 100} {
		w := experiment(rate)
		counts := map[string]int{}
		for i := range 2000 {
			k := &walk{w: w, r: &Run{ContactID: fmt.Sprintf("contact-%d", i)}}
			got := k.pick(w.Nodes["x"])
			if again := k.pick(w.Nodes["x"]); again != got {
				t.Fatalf("not deterministic: %s then %s", got, again)
			}
			counts[got]++
		}
		control := counts["c"] * 100 / 2000
		if d := control - (100 - rate); d < -5 || d > 5 {
			t.Fatalf("rate %d: %d%% to control (%v)", rate, control, counts)
		}
		if rate > 0 && (counts["a"] == 0 || counts["b"] == 0) {
			t.Fatalf("rate %d: variants not both used: %v", rate, counts)
		}
	}
	// No control: everyone gets a variant.
	w := experiment(0)
	w.Nodes["c"].IsControl = false
	if got := (&walk{w: w, r: &Run{ContactID: "c1"}}).pick(w.Nodes["x"]); got == "" {
		t.Fatal("no pick without a control")
	}
}

func TestStringValue(t *testing.T) {
	s := "x"
	for _, c := range []struct {
		in   any
		want string
		ok   bool
	}{{nil, "", false}, {"a", "a", true}, {&s, "x", true}, {(*string)(nil), "", false}, {json.Number("12.5"), "12.5", true},
		{3.0, "3", true}, {true, "true", true}, {map[string]bool{}, "", false}} {
		if got, ok := stringValue(c.in); got != c.want || ok != c.ok {
			t.Fatalf("%v: %q %v", c.in, got, ok)
		}
	}
}
