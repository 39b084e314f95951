package tracking_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/gif"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/html"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/tracking"
)

// fakeRecorder records calls and keeps one recipient's state per send.
type fakeRecorder struct {
	mu    sync.Mutex
	calls []string
	prefs map[string]*tracking.Prefs
	fail  error
}

func newFakeRecorder() *fakeRecorder {
	return &fakeRecorder{prefs: map[string]*tracking.Prefs{
		sendID: {
			Email:      "j***@example.com",
			Subscribed: true,
			Lists: []tracking.PrefList{
				{ID: "list_news", Name: "Newsletter", Description: "Monthly <news> & updates", Member: true},
				{ID: "list_product", Name: "Product updates", Member: true},
				{ID: "list_events", Name: "Events", Description: "Meetups near you", Member: false},
			},
		},
	}}
}

func (f *fakeRecorder) record(format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
	return f.fail
}

func (f *fakeRecorder) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeRecorder) Opened(ctx context.Context, id string) error {
	return f.record("opened %s", id)
}

func (f *fakeRecorder) Clicked(ctx context.Context, id, u string) error {
	return f.record("clicked %s %s", id, u)
}

func (f *fakeRecorder) Unsubscribe(ctx context.Context, id, listID string) error {
	if err := f.record("unsubscribe %s %q", id, listID); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.prefs[id]
	if !ok {
		return apperr.NotFound
	}
	if listID == "" {
		p.Subscribed = false
	}
	for i := range p.Lists {
		if p.Lists[i].ID == listID {
			p.Lists[i].Member = false
		}
	}
	return nil
}

func (f *fakeRecorder) Resubscribe(ctx context.Context, id string) error {
	if err := f.record("resubscribe %s", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.prefs[id]
	if !ok {
		return apperr.NotFound
	}
	p.Subscribed = true
	return nil
}

func (f *fakeRecorder) Preferences(ctx context.Context, id string) (tracking.Prefs, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return tracking.Prefs{}, f.fail
	}
	p, ok := f.prefs[id]
	if !ok {
		return tracking.Prefs{}, fmt.Errorf("send %s: %w", id, apperr.NotFound)
	}
	c := *p
	c.Lists = slices.Clone(p.Lists)
	return c, nil
}

// subscribingRecorder also implements tracking.ListSubscriber.
type subscribingRecorder struct{ *fakeRecorder }

func (f subscribingRecorder) SubscribeList(ctx context.Context, id, listID string) error {
	if err := f.record("subscribe %s %q", id, listID); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, l := range f.prefs[id].Lists {
		if l.ID == listID {
			f.prefs[id].Lists[i].Member = true
		}
	}
	return nil
}

type testServer struct {
	*httptest.Server
	signer *tracking.Signer
	client *http.Client // does not follow redirects
}

func newServer(t *testing.T, rec tracking.Recorder) *testServer {
	t.Helper()
	s := testSigner(t)
	srv := httptest.NewServer(tracking.Handler(tracking.Deps{Signer: s, Recorder: rec}))
	t.Cleanup(srv.Close)
	c := *srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &testServer{Server: srv, signer: s, client: &c}
}

func (ts *testServer) do(t *testing.T, method, u, contentType string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func (ts *testServer) get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	return ts.do(t, http.MethodGet, u, "", nil)
}

func wantCalls(t *testing.T, rec *fakeRecorder, want ...string) {
	t.Helper()
	if got := rec.Calls(); !slices.Equal(got, want) {
		t.Errorf("recorder calls = %q, want %q", got, want)
	}
}

func TestOpenPixel(t *testing.T) {
	rec := newFakeRecorder()
	ts := newServer(t, rec)
	good := ts.signer.OpenURL(ts.URL, sendID)
	bad := strings.Replace(good, "/t/o/"+sendID, "/t/o/cm4t1sv84004yje79hawr1fi2", 1)
	for _, c := range []struct {
		name, url string
		calls     []string
	}{
		{"valid", good, []string{"opened " + sendID}},
		{"other send", bad, nil},
		{"bad signature", ts.URL + "/t/o/" + sendID + "/AAAAAAAAAAAAAAAAAAAAAA.gif", nil},
		{"no .gif", strings.TrimSuffix(good, ".gif"), nil},
		{"garbage", ts.URL + "/t/o/x", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec.calls = nil
			resp, body := ts.get(t, c.url)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/gif" ||
				resp.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
			}
			img, err := gif.Decode(strings.NewReader(body))
			if err != nil {
				t.Fatalf("not a GIF: %v", err)
			}
			if b := img.Bounds(); b.Dx() != 1 || b.Dy() != 1 {
				t.Errorf("pixel is %v", b)
			}
			if _, _, _, a := img.At(0, 0).RGBA(); a != 0 {
				t.Errorf("pixel is not transparent")
			}
			wantCalls(t, rec, c.calls...)
		})
	}
	t.Run("HEAD does not record", func(t *testing.T) {
		rec.calls = nil
		resp, _ := ts.do(t, http.MethodHead, good, "", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		wantCalls(t, rec)
	})
	t.Run("recorder error still serves the pixel", func(t *testing.T) {
		rec.calls, rec.fail = nil, errors.New("db down")
		defer func() { rec.fail = nil }()
		resp, body := ts.get(t, good)
		if resp.StatusCode != http.StatusOK || len(body) != 43 {
			t.Fatalf("status %d, %d bytes", resp.StatusCode, len(body))
		}
	})
}

func TestClick(t *testing.T) {
	rec := newFakeRecorder()
	ts := newServer(t, rec)
	const target = "https://example.com/path?a=1&b=%C3%A9#frag"
	good := ts.signer.ClickURL(ts.URL, sendID, target)

	t.Run("valid", func(t *testing.T) {
		rec.calls = nil
		resp, _ := ts.get(t, good)
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != target {
			t.Fatalf("status %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		wantCalls(t, rec, "clicked "+sendID+" "+target)
	})
	t.Run("followed", func(t *testing.T) {
		dest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "landed %s", r.URL.RequestURI())
		}))
		defer dest.Close()
		resp, err := http.Get(ts.signer.ClickURL(ts.URL, sendID, dest.URL+"/x?y=1"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "landed /x?y=1" {
			t.Errorf("landed on %q", b)
		}
	})

	u, _ := url.Parse(good)
	bad := func(f func(q url.Values)) string {
		v := *u
		q := v.Query()
		f(q)
		v.RawQuery = q.Encode()
		return v.String()
	}
	for _, c := range []struct{ name, url string }{
		{"changed u", bad(func(q url.Values) { q.Set("u", "https://evil.example/") })},
		{"changed u slightly", bad(func(q url.Values) { q.Set("u", target+"x") })},
		{"second u", bad(func(q url.Values) { q.Add("u", "https://evil.example/") })},
		{"no u", bad(func(q url.Values) { q.Del("u") })},
		{"other send", strings.Replace(good, "/t/c/"+sendID, "/t/c/cm4t1sv84004yje79hawr1fi2", 1)},
		{"bad signature", strings.Replace(good, "/t/c/"+sendID+"/", "/t/c/"+sendID+"/A", 1)},
		{"signed non-http target", ts.URL + "/t/c/" + sendID + "/" + sigOf(t, ts.signer.UnsubscribeURL(ts.URL, sendID)) + "?u=javascript:alert(1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec.calls = nil
			resp, body := ts.get(t, c.url)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
			if loc := resp.Header.Get("Location"); loc != "" {
				t.Errorf("redirects to %q", loc)
			}
			if !strings.Contains(body, "This link is broken") || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Errorf("error page: %s", body)
			}
			wantCalls(t, rec)
		})
	}
	t.Run("HEAD redirects without recording", func(t *testing.T) {
		rec.calls = nil
		resp, _ := ts.do(t, http.MethodHead, good, "", nil)
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("status %d", resp.StatusCode)
		}
		wantCalls(t, rec)
	})
	t.Run("recorder error still redirects", func(t *testing.T) {
		rec.fail = errors.New("db down")
		defer func() { rec.fail = nil }()
		resp, _ := ts.get(t, good)
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

// sigOf returns the last path segment of a signed URL.
func sigOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path[strings.LastIndexByte(u.Path, '/')+1:]
}

func TestOneClickUnsubscribe(t *testing.T) {
	multipartBody := func() (string, io.Reader) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		w.WriteField("List-Unsubscribe", "One-Click")
		w.Close()
		return w.FormDataContentType(), &b
	}
	for _, c := range []struct {
		name string
		ct   string
		body func() (string, io.Reader)
	}{
		{"urlencoded", "application/x-www-form-urlencoded", nil},
		{"no content type", "", nil},
		{"multipart", "", multipartBody},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := newFakeRecorder()
			ts := newServer(t, rec)
			ct, body := c.ct, io.Reader(strings.NewReader("List-Unsubscribe=One-Click"))
			if c.body != nil {
				ct, body = c.body()
			}
			// Like a mailbox provider: no cookies, no redirects followed.
			resp, text := ts.do(t, http.MethodPost, ts.signer.UnsubscribeURL(ts.URL, sendID), ct, body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, text)
			}
			wantCalls(t, rec, fmt.Sprintf("unsubscribe %s %q", sendID, ""))
		})
	}
	t.Run("bad signature", func(t *testing.T) {
		rec := newFakeRecorder()
		ts := newServer(t, rec)
		u := ts.signer.UnsubscribeURL(ts.URL, "cm4t1sv84004yje79hawr1fi2")
		u = strings.Replace(u, "cm4t1sv84004yje79hawr1fi2", sendID, 1)
		resp, _ := ts.do(t, http.MethodPost, u, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d", resp.StatusCode)
		}
		wantCalls(t, rec)
	})
	t.Run("unknown send", func(t *testing.T) {
		rec := newFakeRecorder()
		ts := newServer(t, rec)
		resp, _ := ts.do(t, http.MethodPost, ts.signer.UnsubscribeURL(ts.URL, "gone"), "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("too large", func(t *testing.T) {
		rec := newFakeRecorder()
		ts := newServer(t, rec)
		body := "List-Unsubscribe=One-Click&pad=" + strings.Repeat("x", 100<<10)
		resp, _ := ts.do(t, http.MethodPost, ts.signer.UnsubscribeURL(ts.URL, sendID), "application/x-www-form-urlencoded", strings.NewReader(body))
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d", resp.StatusCode)
		}
		wantCalls(t, rec)
	})
}

// page is the parsed preferences page.
type page struct {
	status   int
	title    string
	text     string            // all text
	checked  map[string]bool   // list ID → checked
	labels   map[string]string // list ID → label text
	actions  []string          // form actions, in order
	unlabled []string          // input ids without a <label for>
}

func getPage(t *testing.T, ts *testServer, u string) page {
	t.Helper()
	resp, body := ts.get(t, u)
	for k, v := range map[string]string{
		"Content-Type":    "text/html; charset=utf-8",
		"Cache-Control":   "no-store",
		"X-Frame-Options": "DENY",
	} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("CSP = %q", resp.Header.Get("Content-Security-Policy"))
	}
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	p := page{status: resp.StatusCode, checked: map[string]bool{}, labels: map[string]string{}}
	ids := map[string]string{} // input id → list ID
	labelFor := map[string]string{}
	var text strings.Builder
	for n := range doc.Descendants() {
		if n.Type == html.TextNode {
			text.WriteString(n.Data)
			text.WriteByte(' ')
			continue
		}
		if n.Type != html.ElementNode {
			continue
		}
		attr := func(k string) (string, bool) {
			for _, a := range n.Attr {
				if a.Key == k {
					return a.Val, true
				}
			}
			return "", false
		}
		switch n.Data {
		case "title":
			p.title = n.FirstChild.Data
		case "link", "script", "iframe":
			t.Errorf("page has a <%s>", n.Data)
		case "img":
			if src, _ := attr("src"); !strings.HasPrefix(src, "data:") {
				t.Errorf("page loads an image: %s", src)
			}
		case "label":
			f, _ := attr("for")
			labelFor[f] = strings.TrimSpace(n.FirstChild.Data)
		case "input":
			typ, _ := attr("type")
			name, _ := attr("name")
			val, _ := attr("value")
			switch {
			case typ == "hidden" && name == "action":
				p.actions = append(p.actions, val)
			case typ == "checkbox":
				id, _ := attr("id")
				ids[id] = val
				_, p.checked[val] = attr("checked")
			}
		case "meta":
			if name, _ := attr("name"); name == "viewport" {
				p.text += "[viewport] "
			}
		}
	}
	for id, listID := range ids {
		l, ok := labelFor[id]
		if !ok {
			p.unlabled = append(p.unlabled, id)
		}
		p.labels[listID] = l
	}
	p.text += strings.Join(strings.Fields(text.String()), " ")
	return p
}

func postForm(t *testing.T, ts *testServer, u string, form url.Values) *http.Response {
	t.Helper()
	resp, _ := ts.do(t, http.MethodPost, u, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	return resp
}

func TestPreferencesPage(t *testing.T) {
	rec := newFakeRecorder()
	ts := newServer(t, rec)
	u := ts.signer.UnsubscribeURL(ts.URL, sendID)

	// Prefetchers GET the URL: nothing may change.
	for range 3 {
		p := getPage(t, ts, u)
		if p.status != http.StatusOK {
			t.Fatalf("status %d", p.status)
		}
	}
	wantCalls(t, rec)

	p := getPage(t, ts, u)
	if !strings.Contains(p.text, "j***@example.com") || !strings.Contains(p.text, "[viewport]") {
		t.Errorf("page text: %s", p.text)
	}
	if !strings.Contains(p.text, "Unsubscribe from all emails") || !strings.Contains(p.text, "Monthly <news> & updates") {
		t.Errorf("page text: %s", p.text)
	}
	if len(p.unlabled) > 0 {
		t.Errorf("inputs without labels: %v", p.unlabled)
	}
	// Without a ListSubscriber, only the lists the contact is on are offered.
	if want := map[string]bool{"list_news": true, "list_product": true}; fmt.Sprint(p.checked) != fmt.Sprint(want) {
		t.Errorf("checkboxes = %v, want %v", p.checked, want)
	}
	if p.labels["list_news"] != "Newsletter" {
		t.Errorf("labels = %v", p.labels)
	}
	if !slices.Equal(p.actions, []string{"update", "unsubscribe"}) {
		t.Errorf("forms = %v", p.actions)
	}

	// Leave the newsletter, keep product updates; a forged ID is ignored.
	resp := postForm(t, ts, u, url.Values{"action": {"update"}, "list": {"list_product", "list_forged"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "?done=saved" {
		t.Fatalf("status %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	wantCalls(t, rec, fmt.Sprintf("unsubscribe %s %q", sendID, "list_news"))
	p = getPage(t, ts, u+"?done=saved")
	if !strings.Contains(p.text, "Your preferences have been saved.") {
		t.Errorf("no confirmation: %s", p.text)
	}
	if want := map[string]bool{"list_product": true}; fmt.Sprint(p.checked) != fmt.Sprint(want) {
		t.Errorf("checkboxes = %v, want %v", p.checked, want)
	}

	// Unsubscribe from everything, then resubscribe.
	rec.calls = nil
	resp = postForm(t, ts, u, url.Values{"action": {"unsubscribe"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d", resp.StatusCode)
	}
	wantCalls(t, rec, fmt.Sprintf("unsubscribe %s %q", sendID, ""))
	p = getPage(t, ts, u+"?done=unsubscribed")
	if !slices.Equal(p.actions, []string{"resubscribe"}) || !strings.Contains(p.text, "unsubscribed from all emails") {
		t.Errorf("unsubscribed page: forms %v, text %s", p.actions, p.text)
	}
	rec.calls = nil
	resp = postForm(t, ts, u, url.Values{"action": {"resubscribe"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d", resp.StatusCode)
	}
	wantCalls(t, rec, "resubscribe "+sendID)
	if p = getPage(t, ts, u); !slices.Contains(p.actions, "unsubscribe") {
		t.Errorf("resubscribed page: forms %v", p.actions)
	}

	// The redirect target resolves to the page itself.
	c := ts.Client() // follows redirects
	r2, err := c.PostForm(u, url.Values{"action": {"update"}, "list": {"list_product"}})
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusOK || r2.Request.URL.String() != u+"?done=saved" {
		t.Errorf("after redirect: %d at %s", r2.StatusCode, r2.Request.URL)
	}

	t.Run("unknown action", func(t *testing.T) {
		if resp := postForm(t, ts, u, url.Values{"action": {"delete"}}); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
}

func TestPreferencesPageJoinLists(t *testing.T) {
	rec := newFakeRecorder()
	ts := newServer(t, subscribingRecorder{rec})
	u := ts.signer.UnsubscribeURL(ts.URL, sendID)
	p := getPage(t, ts, u)
	if want := map[string]bool{"list_news": true, "list_product": true, "list_events": false}; fmt.Sprint(p.checked) != fmt.Sprint(want) {
		t.Errorf("checkboxes = %v, want %v", p.checked, want)
	}
	postForm(t, ts, u, url.Values{"action": {"update"}, "list": {"list_news", "list_product", "list_events"}})
	wantCalls(t, rec, fmt.Sprintf("subscribe %s %q", sendID, "list_events"))
}

func TestPreferencesPageErrors(t *testing.T) {
	rec := newFakeRecorder()
	ts := newServer(t, rec)
	good := ts.signer.UnsubscribeURL(ts.URL, sendID)

	if p := getPage(t, ts, strings.Replace(good, sendID, "cm4t1sv84004yje79hawr1fi2", 1)); p.status != http.StatusBadRequest {
		t.Errorf("tampered: status %d", p.status)
	}
	if p := getPage(t, ts, good+"x"); p.status != http.StatusBadRequest {
		t.Errorf("long signature: status %d", p.status)
	}
	if p := getPage(t, ts, ts.signer.UnsubscribeURL(ts.URL, "gone")); p.status != http.StatusNotFound {
		t.Errorf("unknown send: status %d", p.status)
	}
	rec.fail = errors.New("secret database detail")
	p := getPage(t, ts, good)
	if p.status != http.StatusInternalServerError || strings.Contains(p.text, "secret") {
		t.Errorf("failure: status %d, text %s", p.status, p.text)
	}
	resp, _ := ts.do(t, http.MethodPut, good, "", nil)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT: status %d", resp.StatusCode)
	}
}
