package content

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lasso-mail/lasso/internal/ids"
)

// S3Blobs is a BlobStore in an S3-compatible bucket (AWS S3, MinIO, Garage,
// Cloudflare R2, ...), for deployments whose nodes do not share a disk. It
// speaks the S3 REST API directly with path-style URLs
// ({Endpoint}/{Bucket}/{Prefix}{key}) and AWS Signature Version 4.
//
// Keys are checked like DirBlobs's (upload ids only), and errors match:
// Put rejects an invalid key, Get answers ErrBlobNotFound for a missing or
// invalid key, Delete ignores both. Other failures are *S3Error values (or
// transport errors).
//
// Printing an S3Blobs (%v, %+v, %#v) shows the configuration with the
// secret key redacted.
type S3Blobs struct {
	// Endpoint is the scheme and host of the S3 API, such as
	// "https://s3.us-east-1.amazonaws.com" or "http://minio:9000" (a path,
	// if any, is kept in front of the bucket).
	Endpoint string
	// Region is the SigV4 signing region ("us-east-1" when empty; "auto"
	// for R2, "garage" for a default Garage).
	Region string
	// Bucket holds the objects.
	Bucket string
	// Prefix is prepended to every key; NewS3Blobs gives it a trailing "/".
	Prefix string
	// AccessKey and SecretKey sign requests.
	AccessKey, SecretKey string
	// Client makes the requests (a client without an overall timeout, so
	// that large bodies can stream, when nil; contexts bound requests).
	Client *http.Client

	// now is the signing clock (time.Now when nil).
	now func() time.Time
	// memLimit is how much of a Put body is held in memory before it
	// spills to a temporary file (s3MemLimit when 0).
	memLimit int64
}

const (
	// s3MemLimit bounds the memory one Put uses to buffer its body (S3
	// needs the length, and the SHA-256, before the body is sent).
	s3MemLimit = 8 << 20
	// s3MaxPut is S3's limit for a single PUT.
	s3MaxPut = 5 << 30
	// emptySHA256 is the hex SHA-256 of an empty payload.
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	// unsignedPayload is the x-amz-content-sha256 of a body left out of the
	// signature.
	unsignedPayload = "UNSIGNED-PAYLOAD"
)

var s3DefaultClient = &http.Client{Transport: func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = time.Minute
	return t
}()}

// NewS3Blobs parses a blob store URL of the form
//
//	s3://ACCESS_KEY:SECRET_KEY@host[:port]/bucket[/prefix][?region=REGION&tls=BOOL]
//
// for example
//
//	s3://minioadmin:minioadmin@minio:9000/lasso/uploads?tls=false
//	s3://AKIA...:SECRET@s3.eu-west-1.amazonaws.com/my-bucket?region=eu-west-1
//	s3://KEY:SECRET@ACCOUNT.r2.cloudflarestorage.com/bucket?region=auto
//
// The access and secret keys are required and must be percent-encoded
// where they hold reserved characters (a "/" in an AWS secret is "%2F", "@"
// is "%40", ":" in the access key is "%3A"). The bucket is required; the
// optional prefix (any further path, "/" kept) is put in front of every
// key. Query parameters: region (default us-east-1) and tls (default true:
// https; false: plain http). Any other parameter is an error. Errors never
// include the secret.
func NewS3Blobs(rawURL string) (*S3Blobs, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error quotes the whole URL, secret included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("blob store URL: %v", err)
	}
	if u.Scheme != "s3" {
		return nil, fmt.Errorf("blob store URL %s: the scheme must be s3", u.Redacted())
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, fmt.Errorf("blob store URL %s: missing host (s3://ACCESS:SECRET@host/bucket)", u.Redacted())
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("blob store URL %s: unexpected fragment", u.Redacted())
	}
	s := &S3Blobs{Region: "us-east-1"}
	if u.User != nil {
		s.AccessKey = u.User.Username()
		s.SecretKey, _ = u.User.Password()
	}
	if s.AccessKey == "" || s.SecretKey == "" {
		return nil, fmt.Errorf("blob store URL %s: missing access key or secret key (s3://ACCESS:SECRET@host/bucket)", u.Redacted())
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if bucket == "" {
		return nil, fmt.Errorf("blob store URL %s: missing bucket (s3://ACCESS:SECRET@host/bucket)", u.Redacted())
	}
	if strings.ContainsAny(bucket, "?#") {
		return nil, fmt.Errorf("blob store URL %s: invalid bucket %q", u.Redacted(), bucket)
	}
	s.Bucket = bucket
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		s.Prefix = prefix + "/"
	}
	scheme := "https"
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("blob store URL %s: %v", u.Redacted(), err)
	}
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "region":
			if v == "" {
				return nil, fmt.Errorf("blob store URL %s: empty region", u.Redacted())
			}
			s.Region = v
		case "tls":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("blob store URL %s: tls must be true or false", u.Redacted())
			}
			if !b {
				scheme = "http"
			}
		default:
			return nil, fmt.Errorf("blob store URL %s: unknown parameter %q (want region, tls)", u.Redacted(), k)
		}
	}
	s.Endpoint = scheme + "://" + u.Host
	return s, nil
}

// String describes the store without its secret key.
func (s *S3Blobs) String() string {
	return fmt.Sprintf("S3Blobs{Endpoint:%s Region:%s Bucket:%s Prefix:%s AccessKey:%s SecretKey:REDACTED}",
		s.Endpoint, s.Region, s.Bucket, s.Prefix, s.AccessKey)
}

// GoString is String, so that %#v does not print the secret key either.
func (s *S3Blobs) GoString() string { return s.String() }

// S3Error is an error response from the S3 API.
type S3Error struct {
	Op         string // "PUT", "GET", "DELETE", "HEAD"
	Key        string // the object key (with the prefix), or "" for the bucket
	StatusCode int
	Code       string // such as "AccessDenied", "NoSuchBucket", "SignatureDoesNotMatch"
	Message    string
	RequestID  string
}

func (e *S3Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "s3 %s", e.Op)
	if e.Key != "" {
		fmt.Fprintf(&b, " %s", e.Key)
	}
	fmt.Fprintf(&b, ": %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s", e.Code)
		if e.Message != "" {
			fmt.Fprintf(&b, ": %s", e.Message)
		}
		b.WriteString(")")
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// Put implements BlobStore. The body is buffered (in memory up to 8 MiB,
// then in a temporary file) because S3 needs its length and SHA-256 up
// front; the SHA-256 is signed, so the server rejects a corrupted body.
func (s *S3Blobs) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	if !ids.Valid(key) {
		return 0, fmt.Errorf("invalid blob key %q", key)
	}
	body, n, sum, err := s.spool(r)
	if err != nil {
		return n, err
	}
	defer body.Close()
	resp, err := s.do(ctx, http.MethodPut, s.Prefix+key, body, n, sum)
	if err != nil {
		return n, err
	}
	defer drain(resp.Body)
	if resp.StatusCode/100 != 2 {
		return n, s3Error(resp, http.MethodPut, s.Prefix+key)
	}
	return n, nil
}

// Get implements BlobStore.
func (s *S3Blobs) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if !ids.Valid(key) {
		return nil, ErrBlobNotFound
	}
	resp, err := s.do(ctx, http.MethodGet, s.Prefix+key, nil, 0, emptySHA256)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	defer drain(resp.Body)
	e := s3Error(resp, http.MethodGet, s.Prefix+key)
	if isNoSuchKey(e) {
		return nil, ErrBlobNotFound
	}
	return nil, e
}

// Delete implements BlobStore (S3 answers 204 for a missing key too; a
// 404 NoSuchKey from a stricter implementation is not an error either).
func (s *S3Blobs) Delete(ctx context.Context, key string) error {
	if !ids.Valid(key) {
		return nil
	}
	resp, err := s.do(ctx, http.MethodDelete, s.Prefix+key, nil, 0, emptySHA256)
	if err != nil {
		return err
	}
	defer drain(resp.Body)
	if resp.StatusCode/100 == 2 {
		return nil
	}
	e := s3Error(resp, http.MethodDelete, s.Prefix+key)
	if isNoSuchKey(e) {
		return nil
	}
	return e
}

// Check makes a HEAD request on the bucket, so that a wrong endpoint,
// bucket or credentials fail at startup rather than at the first upload.
func (s *S3Blobs) Check(ctx context.Context) error {
	resp, err := s.do(ctx, http.MethodHead, "", nil, 0, emptySHA256)
	if err != nil {
		return err
	}
	defer drain(resp.Body)
	if resp.StatusCode/100 != 2 {
		e := s3Error(resp, http.MethodHead, "")
		if e.Code == "" && resp.StatusCode == http.StatusNotFound {
			e.Code = "NoSuchBucket"
		}
		return e
	}
	return nil
}

// isNoSuchKey reports whether e means the object is missing. A 404 from
// a missing bucket is not: that is a configuration error to report.
func isNoSuchKey(e *S3Error) bool {
	return e.StatusCode == http.StatusNotFound && e.Code != "NoSuchBucket"
}

// do sends one signed request for objectKey ("" for the bucket itself).
func (s *S3Blobs) do(ctx context.Context, method, objectKey string, body io.Reader, length int64, payloadHash string) (*http.Response, error) {
	u, err := url.Parse(s.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("s3 blob store: invalid endpoint %q", s.Endpoint)
	}
	if s.Bucket == "" {
		return nil, errors.New("s3 blob store: no bucket")
	}
	path := strings.TrimSuffix(u.Path, "/") + "/" + s.Bucket
	if objectKey != "" {
		path += "/" + objectKey
	}
	u.Path, u.RawPath = path, s3Escape(path, false)
	u.RawQuery, u.Fragment = "", ""
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Body = io.NopCloser(body)
		req.ContentLength = length
		if length == 0 {
			req.Body = http.NoBody
		}
	}
	s.sign(req, payloadHash, s.clock())
	c := s.Client
	if c == nil {
		c = s3DefaultClient
	}
	return c.Do(req)
}

func (s *S3Blobs) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// spool reads r to the end, into memory or, past memLimit, a temporary
// file (removed when the returned body is closed), hashing it on the way.
func (s *S3Blobs) spool(r io.Reader) (body io.ReadSeekCloser, n int64, sum string, err error) {
	limit := s.memLimit
	if limit <= 0 {
		limit = s3MemLimit
	}
	h := sha256.New()
	var buf bytes.Buffer
	n, err = io.Copy(io.MultiWriter(&buf, h), io.LimitReader(r, limit+1))
	if err != nil {
		return nil, n, "", err
	}
	if n <= limit {
		return nopSeekCloser{bytes.NewReader(buf.Bytes())}, n, hex.EncodeToString(h.Sum(nil)), nil
	}
	f, err := os.CreateTemp("", "lasso-s3-put-*")
	if err != nil {
		return nil, n, "", err
	}
	tmp := &tempFile{f}
	if _, err = f.Write(buf.Bytes()); err == nil {
		var m int64
		m, err = io.Copy(io.MultiWriter(f, h), io.LimitReader(r, s3MaxPut-n+1))
		n += m
		if err == nil && n > s3MaxPut {
			err = fmt.Errorf("s3 blob store: body over %d bytes", int64(s3MaxPut))
		}
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		tmp.Close()
		return nil, n, "", err
	}
	return tmp, n, hex.EncodeToString(h.Sum(nil)), nil
}

type nopSeekCloser struct{ *bytes.Reader }

func (nopSeekCloser) Close() error { return nil }

type tempFile struct{ *os.File }

func (t *tempFile) Close() error {
	err := t.File.Close()
	if rerr := os.Remove(t.Name()); err == nil {
		err = rerr
	}
	return err
}

// drain reads a little of a response body before closing it, so that the
// connection can be reused.
func drain(rc io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(rc, 64<<10))
	_ = rc.Close()
}

// s3Error reads an S3 XML error body (HEAD responses have none).
func s3Error(resp *http.Response, op, key string) *S3Error {
	e := &S3Error{Op: op, Key: key, StatusCode: resp.StatusCode, RequestID: resp.Header.Get("X-Amz-Request-Id")}
	var body struct {
		Code      string
		Message   string
		RequestID string `xml:"RequestId"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if xml.Unmarshal(b, &body) == nil {
		e.Code, e.Message = body.Code, body.Message
		if body.RequestID != "" {
			e.RequestID = body.RequestID
		}
	}
	return e
}

// sign adds the x-amz-date, x-amz-content-sha256 and Authorization headers
// of AWS Signature Version 4 to req. payloadHash is the hex SHA-256 of the
// body or "UNSIGNED-PAYLOAD". The signed headers are host and every
// content-md5, content-type, range and x-amz-* header req carries.
func (s *S3Blobs) sign(req *http.Request, payloadHash string, t time.Time) {
	t = t.UTC()
	amzDate := t.Format("20060102T150405Z")
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	names, values := []string{"host"}, map[string]string{"host": host}
	for k, vs := range req.Header {
		lk := strings.ToLower(k)
		if lk == "content-md5" || lk == "content-type" || lk == "range" || strings.HasPrefix(lk, "x-amz-") {
			names = append(names, lk)
			values[lk] = canonicalHeaderValue(vs)
		}
	}
	sort.Strings(names)
	canon := canonicalRequest(req.Method, req.URL.Path, req.URL.Query(), names, values, payloadHash)
	scope := t.Format("20060102") + "/" + s.region() + "/s3/aws4_request"
	sig := hex.EncodeToString(hmacSHA256(signingKey(s.SecretKey, t.Format("20060102"), s.region(), "s3"), stringToSign(amzDate, scope, canon)))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+s.AccessKey+"/"+scope+
		",SignedHeaders="+strings.Join(names, ";")+",Signature="+sig)
}

func (s *S3Blobs) region() string {
	if s.Region == "" {
		return "us-east-1"
	}
	return s.Region
}

// canonicalRequest builds a SigV4 canonical request. path is the decoded
// URL path (S3 encodes it once, keeping "/"); names are the lowercase
// signed header names, sorted.
func canonicalRequest(method, path string, query url.Values, names []string, values map[string]string, payloadHash string) string {
	var b strings.Builder
	b.WriteString(method)
	b.WriteByte('\n')
	if path == "" {
		path = "/"
	}
	b.WriteString(s3Escape(path, false))
	b.WriteByte('\n')
	var pairs []string
	for k, vs := range query {
		for _, v := range vs {
			pairs = append(pairs, s3Escape(k, true)+"="+s3Escape(v, true))
		}
	}
	sort.Strings(pairs)
	b.WriteString(strings.Join(pairs, "&"))
	b.WriteByte('\n')
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(':')
		b.WriteString(values[n])
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(names, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String()
}

// canonicalHeaderValue joins a header's values with commas, trimming them
// and collapsing runs of spaces.
func canonicalHeaderValue(vs []string) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(out, ",")
}

func stringToSign(amzDate, scope, canonicalRequest string) string {
	sum := sha256.Sum256([]byte(canonicalRequest))
	return "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
}

func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, "aws4_request")
}

func hmacSHA256(key []byte, data string) []byte {
	var m hash.Hash = hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// s3Escape percent-encodes every byte but the unreserved A-Z a-z 0-9 - . _ ~
// (and "/" unless encodeSlash), as SigV4 requires.
func s3Escape(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~', c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}
