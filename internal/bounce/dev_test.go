package bounce

// Developer tools, skipped unless their environment variable is set:
//
//	BOUNCE_DEBUG=lhost-exim-01.eml go test -run DebugFile -v ./internal/bounce
//	BOUNCE_DUMP=1 go test -run DumpUnlabelled -v ./internal/bounce   (BOUNCE_DUMP=all: every file)
//	BOUNCE_BENCH=lhost-sendmail-16.eml go test -run '^$' -bench ParseCorpus ./internal/bounce

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDebugFile prints what the parser sees for BOUNCE_DEBUG=file.eml.
func TestDebugFile(t *testing.T) {
	name := os.Getenv("BOUNCE_DEBUG")
	if name == "" {
		t.Skip("set BOUNCE_DEBUG")
	}
	raw, err := os.ReadFile(filepath.Join(corpusDir, "mail", name))
	if err != nil {
		t.Fatal(err)
	}
	m := &message{root: parseMessage(raw), exclude: map[string]bool{}, excludeOrig: map[string]bool{}}
	m.subject = decodeHeader(m.root.header.get("Subject"))
	m.from = decodeHeader(m.root.header.get("From"))
	m.collect()
	var dump func(p *part, ind string)
	dump = func(p *part, ind string) {
		fmt.Printf("%s%s (%d bytes, %d hdr)\n", ind, p.mediaType, len(p.body), len(p.header))
		for _, c := range p.children {
			dump(c, ind+"  ")
		}
	}
	dump(m.root, "")
	fmt.Println("---- cut text:")
	fmt.Println(cutOriginal(strings.Join(m.texts, "\n")))
	rep, _ := Parse(raw)
	fmt.Printf("---- report: %+v\n", *rep)
}

// TestDumpUnlabelled prints one line per message that has no label
// (BOUNCE_DUMP=1).
func TestDumpUnlabelled(t *testing.T) {
	if os.Getenv("BOUNCE_DUMP") == "" {
		t.Skip("set BOUNCE_DUMP")
	}
	labelled := map[string]bool{}
	for _, l := range loadLabels(t) {
		labelled[l.File] = true
	}
	ents, _ := os.ReadDir(filepath.Join(corpusDir, "mail"))
	for _, e := range ents {
		if labelled[e.Name()] && os.Getenv("BOUNCE_DUMP") != "all" {
			continue
		}
		raw, _ := os.ReadFile(filepath.Join(corpusDir, "mail", e.Name()))
		rep, _ := Parse(raw)
		var rs []string
		for _, r := range rep.Recipients {
			rs = append(rs, r.Address+"/"+string(r.Kind)[:1])
		}
		fmt.Printf("%-28s %-10s %-14s %-7s %-5s %s | %.110s\n", e.Name(), rep.Kind, rep.Reason, rep.Status, rep.Format, strings.Join(rs, ","), rep.Diagnostic)
	}
}

func BenchmarkParseCorpus(b *testing.B) {
	name := os.Getenv("BOUNCE_BENCH")
	if name == "" {
		name = "lhost-sendmail-16.eml"
	}
	raw, err := os.ReadFile(filepath.Join(corpusDir, "mail", name))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		parse(raw, ParseOptions{})
	}
}
