package content

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lasso-mail/lasso/internal/ids"
)

// BlobStore keeps uploaded files by key (an upload id).
type BlobStore interface {
	// Put stores r under key, replacing any previous content, and returns
	// the number of bytes written.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// Get opens the content of key; ErrBlobNotFound when there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// ErrBlobNotFound is returned by BlobStore.Get for a missing key.
var ErrBlobNotFound = errors.New("blob not found")

// DirBlobs is a BlobStore in a local directory (the default: the data
// dir's uploads/). Nodes that do not share a disk need another store.
type DirBlobs struct{ Dir string }

func (d DirBlobs) path(key string) (string, error) {
	if !ids.Valid(key) {
		return "", fmt.Errorf("invalid blob key %q", key)
	}
	return filepath.Join(d.Dir, key[len(key)-2:], key), nil
}

// Put implements BlobStore: it writes a temporary file and renames it into
// place, so readers never see a partial file.
func (d DirBlobs) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	p, err := d.path(key)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".upload-*")
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return n, err
	}
	return n, nil
}

// Get implements BlobStore.
func (d DirBlobs) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, ErrBlobNotFound
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrBlobNotFound
	}
	return f, err
}

// Delete implements BlobStore.
func (d DirBlobs) Delete(ctx context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return nil
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
