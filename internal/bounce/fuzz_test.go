package bounce

import (
	"bytes"
	"testing"
)

// FuzzParse checks that no input makes the parser panic or misbehave.
// Seeds live in testdata/fuzz/FuzzParse (a few corpus messages of each
// shape) plus the hand-written samples below.
func FuzzParse(f *testing.F) {
	f.Add(crlf(sampleDSN))
	f.Add(crlf(sampleARF))
	f.Add([]byte("From: a@b.example\nAuto-Submitted: auto-replied\nSubject: Out of office\n\nAway."))
	f.Add([]byte("Content-Type: multipart/report; boundary=x\n\n--x\nContent-Type: message/delivery-status\n\nFinal-Recipient: rfc822; a@b.c\nStatus: 5.1.1\n--x--"))
	f.Add([]byte("Content-Type: message/rfc822\nContent-Transfer-Encoding: base64\n\nRnJvbTogYUBiLmMKCmhp"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		// The internal parser must not panic on its own (Parse recovers,
		// which would hide bugs).
		rep := parse(raw, ParseOptions{})
		if rep == nil {
			t.Fatal("nil report")
		}
		switch rep.Kind {
		case KindHard, KindSoft, KindComplaint, KindAutoReply, KindNotBounce:
		default:
			t.Fatalf("invalid kind %q", rep.Kind)
		}
		for _, r := range rep.Recipients {
			if r.Address == "" {
				t.Fatal("empty recipient address")
			}
		}
		var buf bytes.Buffer
		if err := WriteJSONLine(&buf, "f", rep); err != nil {
			t.Fatal(err)
		}
	})
}
