package delivery

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/textproto"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Capture is the local capture mailbox: instead of sending, it writes each
// message as an .eml file into a directory, so that an installation without
// relay or MX delivery shows its mail instead of dropping it.
//
// Every file starts with "Return-Path: <envelope sender>" and
// "X-Envelope-To: <recipients>" followed by the message as sent.
type Capture struct {
	dir     string
	nowFunc func() time.Time
}

var _ Transport = (*Capture)(nil)

// CapturedMessage describes one captured message.
type CapturedMessage struct {
	// ID names the message for ReadCaptured and DeleteCaptured.
	ID string
	// Time is when it was captured.
	Time time.Time
	// Size in bytes of the file.
	Size int64
	// From is the envelope sender, To the envelope recipients.
	From string
	To   []string
	// Subject is the decoded Subject field.
	Subject string
}

// NewCapture returns a capture transport writing into dir, which is created
// if needed. nowFunc defaults to time.Now.
func NewCapture(dir string, nowFunc func() time.Time) (*Capture, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("delivery: capture dir: %w", err)
	}
	if nowFunc == nil {
		nowFunc = time.Now
	}
	return &Capture{dir: dir, nowFunc: nowFunc}, nil
}

// Dir returns the capture directory.
func (c *Capture) Dir() string { return c.dir }

// Close does nothing.
func (c *Capture) Close() error { return nil }

// Send writes msg to a new file. Every recipient gets the same result:
// delivered (250) or, if the file cannot be written, temporary.
func (c *Capture) Send(ctx context.Context, env Envelope, msg []byte) []Result {
	if err := ctx.Err(); err != nil {
		return allResults(env.To, replyFromError(err, "4.4.7", "delivery time expired"), "capture")
	}
	for _, a := range append([]string{env.From}, env.To...) {
		if strings.ContainsAny(a, "\r\n") {
			return allResults(env.To, localReply("5.1.3", "bad address syntax", ErrHeaderInjection), "capture")
		}
	}
	id, err := c.write(env, msg)
	if err != nil {
		return allResults(env.To, localReply("4.3.0", "capture mailbox write failed", err), "capture")
	}
	return allResults(env.To, reply{code: 250, enhanced: "2.0.0", message: "captured as " + id}, "capture")
}

func (c *Capture) write(env Envelope, msg []byte) (string, error) {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	now := c.nowFunc().UTC()
	id := now.Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(rnd[:])

	var b bytes.Buffer
	b.Grow(len(msg) + 128)
	b.WriteString("Return-Path: <" + env.From + ">\r\n")
	b.WriteString("X-Envelope-To: " + strings.Join(env.To, ", ") + "\r\n")
	b.Write(msg)

	f, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	_, err = f.Write(b.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(c.dir, id+".eml"))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return id, nil
}

var captureID = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{9}Z-[0-9a-f]{8}$`)

// ErrNotCaptured is returned for an unknown or malformed capture ID.
var ErrNotCaptured = errors.New("delivery: no such captured message")

func (c *Capture) path(id string) (string, error) {
	if !captureID.MatchString(id) {
		return "", ErrNotCaptured
	}
	return filepath.Join(c.dir, id+".eml"), nil
}

// List returns the captured messages, newest first.
func (c *Capture) List() ([]CapturedMessage, error) {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("delivery: list captured: %w", err)
	}
	var out []CapturedMessage
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".eml")
		if !ok || !captureID.MatchString(id) {
			continue
		}
		m, err := c.stat(id)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b CapturedMessage) int { return strings.Compare(b.ID, a.ID) })
	return out, nil
}

func (c *Capture) stat(id string) (CapturedMessage, error) {
	p, _ := c.path(id)
	f, err := os.Open(p)
	if err != nil {
		return CapturedMessage{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return CapturedMessage{}, err
	}
	m := CapturedMessage{ID: id, Size: fi.Size()}
	m.Time, _ = time.Parse("20060102T150405.000000000Z", id[:strings.IndexByte(id, '-')])
	h, _ := textproto.NewReader(bufio.NewReader(f)).ReadMIMEHeader()
	m.From = strings.TrimSuffix(strings.TrimPrefix(h.Get("Return-Path"), "<"), ">")
	if to := h.Get("X-Envelope-To"); to != "" {
		for _, a := range strings.Split(to, ",") {
			m.To = append(m.To, strings.TrimSpace(a))
		}
	}
	m.Subject = h.Get("Subject")
	if dec, err := new(mime.WordDecoder).DecodeHeader(m.Subject); err == nil {
		m.Subject = dec
	}
	return m, nil
}

// Read returns the captured file: the two envelope fields followed by the
// message as sent.
func (c *Capture) Read(id string) ([]byte, error) {
	p, err := c.path(id)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotCaptured
	}
	return b, err
}

// Delete removes a captured message.
func (c *Capture) Delete(id string) error {
	p, err := c.path(id)
	if err != nil {
		return err
	}
	err = os.Remove(p)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrNotCaptured
	}
	return err
}
