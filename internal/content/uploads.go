package content

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// Upload limits (§5.17).
const (
	MaxUploadBytes = 4_000_000
)

// SupportedUploadTypes are the image types an upload may have.
var SupportedUploadTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

var uploadExt = map[string]string{"image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp"}

// Upload states.
const (
	uploadPending   = "pending"
	uploadUploaded  = "uploaded"
	uploadCompleted = "completed"
	uploadRejected  = "rejected"
)

// Upload is a created upload: its id and the URL to PUT the bytes to.
type Upload struct {
	ID           string
	PresignedURL string
	ExpiresAt    time.Time
}

// CreateUpload starts an upload of contentLength bytes of contentType and
// returns a pre-signed PUT URL served by Lasso itself.
func (s *Service) CreateUpload(ctx context.Context, teamID, contentType string, contentLength int64) (Upload, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return Upload{}, err
	}
	if _, ok := uploadExt[contentType]; !ok {
		return Upload{}, apperr.New(apperr.Invalid, "Unsupported content type.").With("supportedContentTypes", SupportedUploadTypes)
	}
	if contentLength <= 0 {
		return Upload{}, apperr.New(apperr.Invalid, "contentLength must be a positive integer.")
	}
	if contentLength > MaxUploadBytes {
		return Upload{}, apperr.New(apperr.TooLarge, "File is too large: the maximum is %d bytes.", MaxUploadBytes).With("maxBytes", MaxUploadBytes)
	}
	secret, err := s.uploadSecret(ctx)
	if err != nil {
		return Upload{}, err
	}
	now := s.now()
	exp := now.Add(s.cfg.UploadURLTTL).Truncate(time.Second)
	u := Upload{ID: ids.New(), ExpiresAt: exp}
	filename := "image." + uploadExt[contentType]
	if _, err := s.db.Exec(ctx, `INSERT INTO uploads (id, team_id, content_type, content_length, filename, state, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, u.ID, teamID, contentType, contentLength, filename, uploadPending, ms(exp), ms(now)); err != nil {
		return Upload{}, err
	}
	q := url.Values{}
	q.Set("expires", strconv.FormatInt(exp.Unix(), 10))
	q.Set("sig", sign(secret, u.ID, contentType, contentLength, exp.Unix()))
	u.PresignedURL = s.cfg.PublicURL + "/uploads/" + u.ID + "?" + q.Encode()
	return u, nil
}

func sign(secret []byte, id, contentType string, length, expires int64) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "PUT\n%s\n%s\n%d\n%d", id, contentType, length, expires)
	return hex.EncodeToString(m.Sum(nil))
}

// uploadSecret returns the installation's signing key, creating it once
// (in the database, so every node shares it).
func (s *Service) uploadSecret(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	k := s.secret
	s.mu.Unlock()
	if k != nil {
		return k, nil
	}
	k, err := db.Secret(ctx, s.db, "upload_signing")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.secret = k
	s.mu.Unlock()
	return k, nil
}

// PutError is a refused pre-signed upload, with the HTTP status to answer.
type PutError struct {
	Status  int
	Message string
}

func (e *PutError) Error() string { return e.Message }

// PutUpload stores the body of a pre-signed PUT (not an API call: no
// authentication but the signature). contentType and contentLength are the
// request's headers and must match what was signed.
func (s *Service) PutUpload(ctx context.Context, id, expires, sig, contentType string, contentLength int64, body io.Reader) error {
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || !ids.Valid(id) {
		return &PutError{http.StatusForbidden, "Invalid upload URL."}
	}
	var teamID, ct, state string
	var length int64
	err = s.db.QueryRow(ctx, `SELECT team_id, content_type, content_length, state FROM uploads WHERE id = $1`, id).Scan(&teamID, &ct, &length, &state)
	if err == db.ErrNoRows {
		return &PutError{http.StatusForbidden, "Invalid upload URL."}
	}
	if err != nil {
		return err
	}
	secret, err := s.uploadSecret(ctx)
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(sig), []byte(sign(secret, id, ct, length, exp))) {
		return &PutError{http.StatusForbidden, "Invalid upload URL signature."}
	}
	if s.now().Unix() > exp {
		return &PutError{http.StatusForbidden, "The upload URL has expired."}
	}
	if state == uploadCompleted || state == uploadRejected {
		return &PutError{http.StatusConflict, "This upload is already complete."}
	}
	if contentType != ct {
		return &PutError{http.StatusBadRequest, fmt.Sprintf("Content-Type must be %s.", ct)}
	}
	if contentLength != length {
		return &PutError{http.StatusBadRequest, fmt.Sprintf("Content-Length must be %d.", length)}
	}
	n, err := s.cfg.Blobs.Put(ctx, id, io.LimitReader(body, length+1))
	if err != nil {
		_ = s.cfg.Blobs.Delete(ctx, id)
		return err
	}
	if n != length {
		_ = s.cfg.Blobs.Delete(ctx, id)
		return &PutError{http.StatusBadRequest, fmt.Sprintf("The body must be exactly %d bytes.", length)}
	}
	_, err = s.db.Exec(ctx, `UPDATE uploads SET state = $1, uploaded_at = $2 WHERE id = $3 AND state IN ($4, $1)`,
		uploadUploaded, ms(s.now()), id, uploadPending)
	return err
}

// CompletedUpload is a public asset.
type CompletedUpload struct {
	ID, FinalURL string
}

// UploadLimit is the completed-upload quota per team per rolling 24 h.
func (s *Service) UploadLimit() int { return s.cfg.UploadLimit }

// CompleteUpload checks the stored bytes (sniffed, not trusted from the
// client) and makes the file public. At most UploadLimit uploads complete
// per team per rolling 24 hours (429 beyond). Completing twice returns the
// same result.
func (s *Service) CompleteUpload(ctx context.Context, teamID, id string) (CompletedUpload, error) {
	if err := s.Begin(ctx, teamID); err != nil {
		return CompletedUpload{}, err
	}
	if err := checkID(id, "upload"); err != nil {
		return CompletedUpload{}, err
	}
	var ct, filename, state string
	err := s.db.QueryRow(ctx, `SELECT content_type, filename, state FROM uploads WHERE team_id = $1 AND id = $2`, teamID, id).Scan(&ct, &filename, &state)
	if err == db.ErrNoRows {
		return CompletedUpload{}, apperr.New(apperr.NotFound, "Upload not found.")
	}
	if err != nil {
		return CompletedUpload{}, err
	}
	out := CompletedUpload{ID: id, FinalURL: s.cfg.PublicURL + "/assets/" + id + "/" + filename}
	switch state {
	case uploadCompleted:
		return out, nil
	case uploadPending:
		return CompletedUpload{}, apperr.New(apperr.Invalid, "The file has not been uploaded yet: PUT it to the presignedUrl first.")
	case uploadRejected:
		return CompletedUpload{}, apperr.New(apperr.Invalid, "The uploaded file has an unsupported content type.").With("supportedContentTypes", SupportedUploadTypes)
	}
	sniffed, err := s.sniff(ctx, id)
	if err != nil {
		return CompletedUpload{}, err
	}
	if sniffed != ct {
		_ = s.cfg.Blobs.Delete(ctx, id)
		if _, err := s.db.Exec(ctx, `UPDATE uploads SET state = $1 WHERE id = $2`, uploadRejected, id); err != nil {
			return CompletedUpload{}, err
		}
		return CompletedUpload{}, apperr.New(apperr.Invalid, "The uploaded file has an unsupported content type.").With("supportedContentTypes", SupportedUploadTypes)
	}
	window := 24 * time.Hour
	err = s.db.InTx(ctx, func(tx db.Tx) error {
		now := ms(s.now())
		ok, err := s.quota(ctx, tx, teamID, "upload", 1, s.cfg.UploadLimit, window, func() (int, error) {
			var n int
			err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM uploads WHERE team_id = $1 AND completed_at > $2`, teamID, now-window.Milliseconds()).Scan(&n)
			return n, err
		})
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.RateLimited, "Upload limit exceeded: max %d uploads per 24 hours. Please contact support if you need to increase your upload limit.", s.cfg.UploadLimit).
				With("maxUploads", s.cfg.UploadLimit).With("windowHours", 24)
		}
		_, err = tx.Exec(ctx, `UPDATE uploads SET state = $1, completed_at = $2 WHERE id = $3 AND state = $4`, uploadCompleted, now, id, uploadUploaded)
		return err
	})
	if err != nil {
		return CompletedUpload{}, err
	}
	return out, nil
}

// sniff returns the content type of the stored bytes of upload id.
func (s *Service) sniff(ctx context.Context, id string) (string, error) {
	rc, err := s.cfg.Blobs.Get(ctx, id)
	if errors.Is(err, ErrBlobNotFound) {
		return "", apperr.New(apperr.Invalid, "The file has not been uploaded yet: PUT it to the presignedUrl first.")
	}
	if err != nil {
		return "", err
	}
	defer rc.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(rc, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	return sniffImage(head[:n]), nil
}

// sniffImage names the image type of b's first bytes, or "".
func sniffImage(b []byte) string {
	if len(b) >= 12 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WEBP")) {
		return "image/webp"
	}
	switch t := http.DetectContentType(b); t {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return t
	}
	return ""
}

// Asset is a completed upload opened for serving.
type Asset struct {
	Body        io.ReadCloser
	ContentType string
	Size        int64
}

// OpenAsset opens the public file of a completed upload; apperr.NotFound
// when id and filename do not name one.
func (s *Service) OpenAsset(ctx context.Context, id, filename string) (*Asset, error) {
	notFound := apperr.New(apperr.NotFound, "Asset not found.")
	if !ids.Valid(id) {
		return nil, notFound
	}
	var ct, name string
	var size int64
	err := s.db.QueryRow(ctx, `SELECT content_type, filename, content_length FROM uploads WHERE id = $1 AND state = $2`, id, uploadCompleted).Scan(&ct, &name, &size)
	if err == db.ErrNoRows || (err == nil && name != filename) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	rc, err := s.cfg.Blobs.Get(ctx, id)
	if errors.Is(err, ErrBlobNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	return &Asset{Body: rc, ContentType: ct, Size: size}, nil
}

// AbandonedUploadAge is how long an upload may stay uncompleted: past it,
// PruneUploads deletes its row and stored bytes. It is well past the
// pre-signed URL's life (UploadURLTTL, 1 h by default).
const AbandonedUploadAge = 24 * time.Hour

// PruneUploads deletes uploads that were never completed (pending,
// uploaded, or rejected) within AbandonedUploadAge, with their stored
// bytes, and returns how many it deleted. Each row is deleted only if it is
// still not completed, and its bytes after it, so that a completion racing
// the pruning keeps its file.
func (s *Service) PruneUploads(ctx context.Context) (int64, error) {
	cut := ms(s.now().Add(-AbandonedUploadAge))
	var total int64
	for {
		batch, err := db.All(ctx, s.db, func(r db.Rows) (string, error) {
			var id string
			err := r.Scan(&id)
			return id, err
		}, `SELECT id FROM uploads WHERE state <> $1 AND created_at < $2 ORDER BY created_at LIMIT `+strconv.Itoa(db.PruneBatch), uploadCompleted, cut)
		if err != nil {
			return total, fmt.Errorf("prune uploads: %w", err)
		}
		for _, id := range batch {
			// The row goes first, unless the upload was completed meanwhile.
			n, err := s.db.Exec(ctx, `DELETE FROM uploads WHERE id = $1 AND state <> $2`, id, uploadCompleted)
			if err != nil {
				return total, fmt.Errorf("prune upload %s: %w", id, err)
			}
			if n == 0 {
				continue
			}
			total++
			if err := s.cfg.Blobs.Delete(ctx, id); err != nil {
				return total, fmt.Errorf("prune upload %s: delete stored bytes: %w", id, err)
			}
		}
		if len(batch) < db.PruneBatch {
			return total, nil
		}
	}
}
