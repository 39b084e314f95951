package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/lasso-mail/lasso/internal/apperr"
)

// maxValueLen is the contract's limit on classic endpoints: "a maximum of
// 500 characters for each value, including the opening and closing quotes".
const maxValueLen = 500

var errTooLong = apperr.New(apperr.Invalid, "Some body key or value is longer than allowable")

// readBody reads the whole body within the route's limit (413 beyond it).
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apperr.New(apperr.TooLarge, "Request body is too large (limit %d bytes).", mbe.Limit)
		}
		return nil, apperr.New(apperr.Invalid, "Could not read the request body.")
	}
	return b, nil
}

// decodeObject decodes a JSON object body with numbers kept exact
// (json.Number). An empty body is an error unless allowEmpty.
func decodeObject(r *http.Request, allowEmpty bool) (map[string]any, error) {
	b, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		if allowEmpty {
			return map[string]any{}, nil
		}
		return nil, apperr.New(apperr.Invalid, "A JSON request body is required.")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, apperr.New(apperr.Invalid, "Invalid JSON body.")
	}
	if dec.More() {
		return nil, apperr.New(apperr.Invalid, "Invalid JSON body.")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, apperr.New(apperr.Invalid, "The request body must be a JSON object.")
	}
	return m, nil
}

// checkLengths enforces maxValueLen on every key and string value.
func checkLengths(v any) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if len(k)+2 > maxValueLen {
				return errTooLong
			}
			if err := checkLengths(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := checkLengths(e); err != nil {
				return err
			}
		}
	case string:
		if len(x)+2 > maxValueLen {
			return errTooLong
		}
	case json.Number:
		if len(x) > maxValueLen {
			return errTooLong
		}
	}
	return nil
}

// optString reads an optional string field; null and absent give "".
func optString(m map[string]any, key string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", apperr.New(apperr.Invalid, "%s must be a string.", key)
	}
	return s, nil
}

// optObject reads an optional object field.
func optObject(m map[string]any, key string) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, apperr.New(apperr.Invalid, "%s must be an object.", key)
	}
	return o, nil
}

// mailingLists reads {listId: boolean}.
func mailingLists(m map[string]any) (map[string]bool, error) {
	o, err := optObject(m, "mailingLists")
	if err != nil || o == nil {
		return nil, err
	}
	out := make(map[string]bool, len(o))
	for k, v := range o {
		b, ok := v.(bool)
		if !ok {
			return nil, apperr.New(apperr.Invalid, "mailingLists values must be true or false.")
		}
		out[k] = b
	}
	return out, nil
}
