package content

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/ids"
)

const (
	exampleAccess = "AKIAIOSFODNN7EXAMPLE"
	exampleSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

// TestS3SignatureVector checks the signer against the "GET Object" example
// of AWS's "Signature Calculations for the Authorization Header:
// Transferring Payload in a Single Chunk" (Amazon S3 API reference).
func TestS3SignatureVector(t *testing.T) {
	s := &S3Blobs{Region: "us-east-1", Bucket: "examplebucket", AccessKey: exampleAccess, SecretKey: exampleSecret}
	req, err := http.NewRequest(http.MethodGet, "https://examplebucket.s3.amazonaws.com/test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Range", "bytes=0-9")
	s.sign(req, emptySHA256, time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC))

	names := []string{"host", "range", "x-amz-content-sha256", "x-amz-date"}
	values := map[string]string{"host": "examplebucket.s3.amazonaws.com", "range": "bytes=0-9",
		"x-amz-content-sha256": emptySHA256, "x-amz-date": "20130524T000000Z"}
	canon := canonicalRequest("GET", "/test.txt", nil, names, values, emptySHA256)
	wantCanon := "GET\n/test.txt\n\n" +
		"host:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n" +
		"x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n" +
		"x-amz-date:20130524T000000Z\n\n" +
		"host;range;x-amz-content-sha256;x-amz-date\n" +
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if canon != wantCanon {
		t.Errorf("canonical request:\n%s\nwant:\n%s", canon, wantCanon)
	}
	sts := stringToSign("20130524T000000Z", "20130524/us-east-1/s3/aws4_request", canon)
	wantSTS := "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n" +
		"7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"
	if sts != wantSTS {
		t.Errorf("string to sign:\n%s\nwant:\n%s", sts, wantSTS)
	}
	want := "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request," +
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date," +
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
	if got := req.Header.Get("Authorization"); got != want {
		t.Errorf("Authorization:\n%s\nwant:\n%s", got, want)
	}
	if got := req.Header.Get("X-Amz-Date"); got != "20130524T000000Z" {
		t.Errorf("x-amz-date %q", got)
	}
}

// fakeS3 is an in-memory S3 that checks the SigV4 signature of every
// request, independently of what the client thinks it signed: it rebuilds
// the canonical request from what it received.
type fakeS3 struct {
	access, secret string
	bucket         string

	mu      sync.Mutex
	objects map[string][]byte // by path-style URL path, "/bucket/key"
	reqs    []string          // "METHOD /path"
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.reqs = append(f.reqs, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.fail(w, 400, "IncompleteBody", err.Error())
		return
	}
	if msg := f.verify(r, body); msg != "" {
		f.fail(w, 403, "SignatureDoesNotMatch", msg)
		return
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != f.bucket {
		f.fail(w, 404, "NoSuchBucket", "The specified bucket does not exist")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodHead && key == "":
		w.WriteHeader(200)
	case r.Method == http.MethodPut && key != "":
		if r.ContentLength != int64(len(body)) {
			f.fail(w, 411, "MissingContentLength", "You must provide the Content-Length HTTP header.")
			return
		}
		f.objects[r.URL.Path] = body
		w.Header().Set("ETag", `"x"`)
		w.WriteHeader(200)
	case r.Method == http.MethodGet && key != "":
		b, ok := f.objects[r.URL.Path]
		if !ok {
			f.fail(w, 404, "NoSuchKey", "The specified key does not exist.")
			return
		}
		w.Write(b)
	case r.Method == http.MethodDelete && key != "":
		delete(f.objects, r.URL.Path)
		w.WriteHeader(204)
	default:
		f.fail(w, 405, "MethodNotAllowed", "")
	}
}

func (f *fakeS3) fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("X-Amz-Request-Id", "REQ1")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>REQ1</RequestId></Error>`, code, msg)
}

// verify returns why r's signature is wrong, or "".
func (f *fakeS3) verify(r *http.Request, body []byte) string {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return "no SigV4 Authorization header"
	}
	fields := map[string]string{}
	for _, p := range strings.Split(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		fields[k] = v
	}
	cred := strings.Split(fields["Credential"], "/")
	if len(cred) != 5 || cred[0] != f.access || cred[2] != "us-east-1" || cred[3] != "s3" || cred[4] != "aws4_request" {
		return "bad credential " + fields["Credential"]
	}
	amzDate := r.Header.Get("X-Amz-Date")
	tm, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || tm.Format("20060102") != cred[1] || time.Since(tm).Abs() > 15*time.Minute {
		return "bad x-amz-date " + amzDate
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload != unsignedPayload {
		sum := sha256.Sum256(body)
		if payload != hex.EncodeToString(sum[:]) {
			return "x-amz-content-sha256 does not match the body"
		}
	}
	names := strings.Split(fields["SignedHeaders"], ";")
	values := map[string]string{}
	signed := map[string]bool{}
	for _, n := range names {
		signed[n] = true
		if n == "host" {
			values[n] = r.Host
		} else {
			values[n] = canonicalHeaderValue(r.Header.Values(n))
		}
	}
	for _, must := range []string{"host", "x-amz-date", "x-amz-content-sha256"} {
		if !signed[must] {
			return must + " is not signed"
		}
	}
	for k := range r.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amz-") && !signed[lk] {
			return lk + " is not signed"
		}
	}
	canon := canonicalRequest(r.Method, r.URL.Path, r.URL.Query(), names, values, payload)
	sig := hex.EncodeToString(hmacSHA256(signingKey(f.secret, cred[1], "us-east-1", "s3"),
		stringToSign(amzDate, strings.Join(cred[1:], "/"), canon)))
	if sig != fields["Signature"] {
		return "signature mismatch"
	}
	return ""
}

// object returns the stored body at a path-style path ("/bucket/key").
func (f *fakeS3) object(path string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objects[path]
}

func newFakeS3(t *testing.T) (*fakeS3, *httptest.Server) {
	f := &fakeS3{access: "lasso-access", secret: "s3cr/t+key", bucket: "lasso", objects: map[string][]byte{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

// s3URL is the blob store URL of srv with the given secret and prefix.
func s3URL(srv *httptest.Server, secret, prefix string) string {
	return "s3://lasso-access:" + strings.NewReplacer("/", "%2F", "+", "%2B").Replace(secret) + "@" +
		strings.TrimPrefix(srv.URL, "http://") + "/lasso/" + prefix + "?tls=false&region=us-east-1"
}

func TestS3Blobs(t *testing.T) {
	ctx := context.Background()
	f, srv := newFakeS3(t)
	s, err := NewS3Blobs(s3URL(srv, f.secret, "uploads/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal("check:", err)
	}
	var b BlobStore = s
	if _, err := b.Put(ctx, "../../etc/passwd", strings.NewReader("x")); err == nil {
		t.Fatal("invalid key accepted")
	}
	if _, err := b.Get(ctx, "../x"); !errors.Is(err, ErrBlobNotFound) {
		t.Fatalf("invalid key get: %v", err)
	}
	if err := b.Delete(ctx, "../x"); err != nil {
		t.Fatalf("invalid key delete: %v", err)
	}

	id := ids.New()
	if _, err := b.Get(ctx, id); !errors.Is(err, ErrBlobNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if n, err := b.Put(ctx, id, strings.NewReader("hello")); err != nil || n != 5 {
		t.Fatal(n, err)
	}
	if got := string(f.object("/lasso/uploads/" + id)); got != "hello" {
		t.Fatalf("stored %q", got)
	}
	if n, err := b.Put(ctx, id, strings.NewReader("hello, world")); err != nil || n != 12 {
		t.Fatal("replace:", n, err)
	}
	rc, err := b.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != "hello, world" {
		t.Fatalf("got %q, %v", got, err)
	}

	empty := ids.New()
	if n, err := b.Put(ctx, empty, strings.NewReader("")); err != nil || n != 0 {
		t.Fatal("empty:", n, err)
	}
	if rc, err := b.Get(ctx, empty); err != nil {
		t.Fatal("empty get:", err)
	} else if got, _ := io.ReadAll(rc); len(got) != 0 {
		t.Fatalf("empty got %q", got)
	} else {
		rc.Close()
	}

	if err := b.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, id); err != nil {
		t.Fatal("deleting twice:", err)
	}
	if _, err := b.Get(ctx, id); !errors.Is(err, ErrBlobNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestS3BlobsLargeBodySpills(t *testing.T) {
	ctx := context.Background()
	f, srv := newFakeS3(t)
	s, err := NewS3Blobs(s3URL(srv, f.secret, ""))
	if err != nil {
		t.Fatal(err)
	}
	s.memLimit = 1000
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	id := ids.New()
	if n, err := s.Put(ctx, id, bytes.NewReader(data)); err != nil || n != int64(len(data)) {
		t.Fatal(n, err)
	}
	if !bytes.Equal(f.object("/lasso/"+id), data) {
		t.Fatal("large body stored wrong")
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	// A reader failing part way fails the Put without a request.
	f.mu.Lock()
	f.reqs = nil
	f.mu.Unlock()
	if _, err := s.Put(ctx, ids.New(), io.MultiReader(bytes.NewReader(data), errReader{})); err == nil {
		t.Fatal("reader error ignored")
	}
	f.mu.Lock()
	n := len(f.reqs)
	f.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d requests after a read error", n)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestS3BlobsErrors(t *testing.T) {
	ctx := context.Background()
	f, srv := newFakeS3(t)

	wrong, err := NewS3Blobs(s3URL(srv, "not-the-secret", ""))
	if err != nil {
		t.Fatal(err)
	}
	var se *S3Error
	_, err = wrong.Put(ctx, ids.New(), strings.NewReader("x"))
	if !errors.As(err, &se) || se.StatusCode != 403 || se.Code != "SignatureDoesNotMatch" || se.RequestID != "REQ1" {
		t.Fatalf("wrong secret put: %v", err)
	}
	if _, err := wrong.Get(ctx, ids.New()); errors.Is(err, ErrBlobNotFound) || !errors.As(err, &se) {
		t.Fatalf("wrong secret get: %v", err)
	}
	if err := wrong.Delete(ctx, ids.New()); err == nil {
		t.Fatal("wrong secret delete succeeded")
	}
	if err := wrong.Check(ctx); err == nil {
		t.Fatal("wrong secret check succeeded")
	}

	// A missing bucket is a configuration error, not a missing blob.
	nob, err := NewS3Blobs(strings.Replace(s3URL(srv, f.secret, ""), "/lasso/", "/other/", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nob.Get(ctx, ids.New()); errors.Is(err, ErrBlobNotFound) || !errors.As(err, &se) || se.Code != "NoSuchBucket" {
		t.Fatalf("missing bucket get: %v", err)
	}
	if err := nob.Check(ctx); !errors.As(err, &se) || se.StatusCode != 404 {
		t.Fatalf("missing bucket check: %v", err)
	}
	if err := nob.Delete(ctx, ids.New()); err == nil {
		t.Fatal("missing bucket delete succeeded")
	}

	// Cancelled context.
	ok, _ := NewS3Blobs(s3URL(srv, f.secret, ""))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ok.Get(cctx, ids.New()); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestNewS3Blobs(t *testing.T) {
	s, err := NewS3Blobs("s3://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI%2FK7MDENG%2BbPxRfiCYEXAMPLEKEY@s3.eu-west-1.amazonaws.com/my-bucket/a/b/?region=eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	want := S3Blobs{Endpoint: "https://s3.eu-west-1.amazonaws.com", Region: "eu-west-1", Bucket: "my-bucket", Prefix: "a/b/",
		AccessKey: "AKIAIOSFODNN7EXAMPLE", SecretKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	if s.Endpoint != want.Endpoint || s.Region != want.Region || s.Bucket != want.Bucket || s.Prefix != want.Prefix ||
		s.AccessKey != want.AccessKey || s.SecretKey != want.SecretKey {
		t.Fatalf("got %+v (secret %q)", s, s.SecretKey)
	}
	for _, v := range []string{fmt.Sprint(s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s)} {
		if strings.Contains(v, "EXAMPLEKEY") {
			t.Fatalf("secret printed: %s", v)
		}
	}

	s, err = NewS3Blobs("s3://minio:minio123@localhost:9000/lasso?tls=false")
	if err != nil {
		t.Fatal(err)
	}
	if s.Endpoint != "http://localhost:9000" || s.Region != "us-east-1" || s.Bucket != "lasso" || s.Prefix != "" {
		t.Fatalf("got %v", s)
	}

	for _, bad := range []string{
		"",
		"http://a:b@host/bucket",
		"s3://a:b@host",
		"s3://a:b@host/",
		"s3://host/bucket",
		"s3://a@host/bucket",
		"s3://:b@host/bucket",
		"s3://a:b@/bucket",
		"s3://a:b@host/bucket?tls=maybe",
		"s3://a:b@host/bucket?region=",
		"s3://a:b@host/bucket?regoin=us-east-1",
		"s3://a:topsecret@host/bucket?x=%zz",
		"s3://a:topsecret@ho st/bucket",
	} {
		_, err := NewS3Blobs(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), "topsecret") {
			t.Errorf("%q: error shows the secret: %v", bad, err)
		}
	}
}

func TestS3Escape(t *testing.T) {
	if got := s3Escape("/a b/ü+~._-*", false); got != "/a%20b/%C3%BC%2B~._-%2A" {
		t.Fatal(got)
	}
	if got := s3Escape("a/b", true); got != "a%2Fb" {
		t.Fatal(got)
	}
}
