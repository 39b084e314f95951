package bounce

import (
	"encoding/json"
	"io"
)

// JSONLine is the shape written by WriteJSONLine, one object per message.
type JSONLine struct {
	File       string   `json:"file"`
	Kind       Kind     `json:"kind"`
	Recipients []string `json:"recipients"`
	Status     string   `json:"status"`
	Diagnostic string   `json:"diagnostic"`
}

// NewJSONLine converts a report to its JSON line form.
func NewJSONLine(file string, r *Report) JSONLine {
	l := JSONLine{File: file, Kind: KindNotBounce, Recipients: []string{}}
	if r == nil {
		return l
	}
	if r.Kind != "" {
		l.Kind = r.Kind
	}
	for _, rc := range r.Recipients {
		l.Recipients = append(l.Recipients, rc.Address)
	}
	l.Status = r.Status
	l.Diagnostic = r.Diagnostic
	return l
}

// WriteJSONLine writes one line of JSON describing r:
//
//	{"file": "x.eml", "kind": "hard", "recipients": ["a@b"], "status": "5.1.1", "diagnostic": "…"}
//
// recipients is always an array (never null). It is what
// `lasso bounce parse FILE…` prints.
func WriteJSONLine(w io.Writer, file string, r *Report) error {
	l := NewJSONLine(file, r)
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}
