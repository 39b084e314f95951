package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/content"
)

// isoTime formats a resource timestamp as the contract does (§1.6).
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// pageOf reads perPage (10–50, default 20) and cursor (§3).
func pageOf(r *http.Request) (content.Page, error) {
	p := content.Page{PerPage: 20, Cursor: r.URL.Query().Get("cursor")}
	if v := r.URL.Query().Get("perPage"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 || n > 50 {
			return p, apperr.New(apperr.Invalid, "perPage must be between 10 and 50.")
		}
		p.PerPage = n
	}
	return p, nil
}

type pagination struct {
	TotalResults    int     `json:"totalResults"`
	ReturnedResults int     `json:"returnedResults"`
	PerPage         int     `json:"perPage"`
	TotalPages      int     `json:"totalPages"`
	NextCursor      *string `json:"nextCursor"`
	NextPage        *string `json:"nextPage"`
}

type paged struct {
	Pagination pagination `json:"pagination"`
	Data       []any      `json:"data"`
}

// writePage writes the pagination envelope of §3; nextPage is the absolute
// URL of the same endpoint (as requested) with cursor then perPage, then
// the filters given (name, value; empty values left out), so that
// following it lists the same items.
func writePage[T any](w http.ResponseWriter, r *http.Request, publicURL string, l content.List[T], conv func(T) any, filters ...[2]string) {
	out := paged{Data: make([]any, 0, len(l.Items))}
	for _, it := range l.Items {
		out.Data = append(out.Data, conv(it))
	}
	out.Pagination = pagination{TotalResults: l.Total, ReturnedResults: len(l.Items), PerPage: l.PerPage}
	if l.PerPage > 0 {
		out.Pagination.TotalPages = (l.Total + l.PerPage - 1) / l.PerPage
	}
	if l.NextCursor != "" {
		c := l.NextCursor
		next := fmt.Sprintf("%s%s?cursor=%s&perPage=%d", publicURL, r.URL.Path, url.QueryEscape(c), l.PerPage)
		for _, kv := range filters {
			if kv[1] != "" {
				next += "&" + kv[0] + "=" + url.QueryEscape(kv[1])
			}
		}
		out.Pagination.NextCursor, out.Pagination.NextPage = &c, &next
	}
	writeJSON(w, http.StatusOK, out)
}

// contentBody decodes a content-API body: an object with only the allowed
// keys (the schemas are additionalProperties:false).
func contentBody(r *http.Request, allowEmpty bool, allowed ...string) (map[string]any, error) {
	m, err := decodeObject(r, allowEmpty)
	if err != nil {
		return nil, err
	}
	for k := range m {
		ok := false
		for _, a := range allowed {
			if k == a {
				ok = true
				break
			}
		}
		if !ok {
			return nil, apperr.New(apperr.Invalid, "Unknown field %q.", k)
		}
	}
	return m, nil
}

// strPtr reads an optional string field: absent or null give nil.
func strPtr(m map[string]any, key string) (*string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, apperr.New(apperr.Invalid, "%s must be a string.", key)
	}
	return &s, nil
}

// reqString reads a required string field.
func reqString(m map[string]any, key string) (string, error) {
	s, err := strPtr(m, key)
	if err != nil {
		return "", err
	}
	if s == nil {
		return "", apperr.New(apperr.Invalid, "%s is required.", key)
	}
	return *s, nil
}

// scalarString converts a JSON scalar (string, number, boolean) to a
// string; arrays and objects become their JSON text.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	case []any, map[string]any:
		b, err := json.Marshal(x)
		return string(b), err == nil
	}
	return "", false
}

// fallbackMap reads a fallback map for a per-key merge: a string sets the
// key, null deletes it.
func fallbackMap(m map[string]any, key string) (map[string]*string, error) {
	o, err := optObject(m, key)
	if err != nil || o == nil {
		return nil, err
	}
	out := make(map[string]*string, len(o))
	for k, v := range o {
		if v == nil {
			out[k] = nil
			continue
		}
		switch v.(type) {
		case string, json.Number, bool:
		default:
			return nil, apperr.New(apperr.Invalid, "%s values must be strings or null.", key)
		}
		s, _ := scalarString(v)
		out[k] = &s
	}
	return out, nil
}

// valueMap reads a preview values map; nil when absent.
func valueMap(m map[string]any, key string) (map[string]string, error) {
	o, err := optObject(m, key)
	if err != nil || o == nil {
		return nil, err
	}
	out := make(map[string]string, len(o))
	for k, v := range o {
		if v == nil {
			continue
		}
		s, ok := scalarString(v)
		if !ok {
			return nil, apperr.New(apperr.Invalid, "%s values must be strings, numbers or arrays.", key)
		}
		out[k] = s
	}
	return out, nil
}

// resourceURL is the url field of a content resource.
func (a *API) resourceURL(kind, id string) string {
	return a.PublicURL + "/" + kind + "/" + id
}

// quotaHeaders sets the rate headers on a quota 429 (the JS SDK reads only
// them, §2).
func quotaHeaders(w http.ResponseWriter, limit int) {
	w.Header().Set("x-ratelimit-limit", strconv.Itoa(limit))
	w.Header().Set("x-ratelimit-remaining", "0")
}

// contentService lets Deps name the content service without api.go
// importing the package.
type contentService = content.Service
