package httpapi

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/lasso-mail/lasso/internal/accounts"
	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/content"
)

// Uploads (§5.17).

func (a *API) createUpload(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	// emailMessageId is sent by older Go SDKs; it is ignored (§16 #15).
	m, err := contentBody(r, false, "contentType", "contentLength", "emailMessageId")
	if err != nil {
		return err
	}
	ct, err := strPtr(m, "contentType")
	if err != nil || ct == nil {
		return apperr.New(apperr.Invalid, "Unsupported content type.").With("supportedContentTypes", content.SupportedUploadTypes)
	}
	var length int64
	switch v := m["contentLength"].(type) {
	case nil:
		return apperr.New(apperr.Invalid, "contentLength is required.")
	case interface{ Int64() (int64, error) }:
		if length, err = v.Int64(); err != nil {
			return apperr.New(apperr.Invalid, "contentLength must be a positive integer.")
		}
	default:
		return apperr.New(apperr.Invalid, "contentLength must be a positive integer.")
	}
	u, err := a.Content.CreateUpload(r.Context(), team.ID, *ct, length)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"emailAssetId": u.ID, "presignedUrl": u.PresignedURL, "expiresAt": isoTime(u.ExpiresAt)})
	return nil
}

func (a *API) completeUpload(w http.ResponseWriter, r *http.Request, team accounts.Team) error {
	if _, err := contentBody(r, true); err != nil {
		return err
	}
	c, err := a.Content.CompleteUpload(r.Context(), team.ID, r.PathValue("id"))
	if err != nil {
		if errors.Is(err, apperr.RateLimited) {
			quotaHeaders(w, a.Content.UploadLimit())
		}
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"emailAssetId": c.ID, "finalUrl": c.FinalURL})
	return nil
}

// UploadHandler serves the pre-signed PUT URLs handed out by POST
// /v1/uploads (mounted at PUT /uploads/{id}, outside the API: no API key,
// the signature authorises the request).
func (a *API) UploadHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := func(status int, msg string) {
			writeJSON(w, status, map[string]any{"success": false, "message": msg})
		}
		ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil {
			fail(http.StatusBadRequest, "Content-Type is required.")
			return
		}
		if r.ContentLength < 0 {
			fail(http.StatusLengthRequired, "Content-Length is required.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, content.MaxUploadBytes+1)
		q := r.URL.Query()
		err = a.Content.PutUpload(r.Context(), r.PathValue("id"), q.Get("expires"), q.Get("sig"), ct, r.ContentLength, r.Body)
		var pe *content.PutError
		switch {
		case errors.As(err, &pe):
			fail(pe.Status, pe.Message)
		case err != nil:
			a.log.ErrorContext(r.Context(), "upload failed", "err", err)
			fail(http.StatusInternalServerError, "Internal server error.")
		default:
			w.Header().Set("ETag", `"`+r.PathValue("id")+`"`)
			w.WriteHeader(http.StatusOK)
		}
	})
}

// AssetHandler serves completed uploads publicly at GET
// /assets/{id}/{filename} with a long cache lifetime (they never change).
func (a *API) AssetHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asset, err := a.Content.OpenAsset(r.Context(), r.PathValue("id"), r.PathValue("filename"))
		if err != nil {
			if errors.Is(err, apperr.NotFound) {
				http.NotFound(w, r)
				return
			}
			a.log.ErrorContext(r.Context(), "asset failed", "err", err)
			http.Error(w, "Internal server error.", http.StatusInternalServerError)
			return
		}
		defer asset.Body.Close()
		etag := `"` + r.PathValue("id") + `"`
		h := w.Header()
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
		h.Set("ETag", etag)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
		h.Set("Expires", time.Now().Add(365*24*time.Hour).UTC().Format(http.TimeFormat))
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", asset.ContentType)
		h.Set("Content-Length", strconv.FormatInt(asset.Size, 10))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = io.Copy(w, asset.Body)
		}
	})
}
