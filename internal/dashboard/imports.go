package dashboard

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/contacts"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// maxUpload bounds one CSV file (1,000,000 rows of a few columns fit well
// inside it).
const maxUpload = 1 << 30

// Import statuses.
const (
	importUploaded = "uploaded"
	importRunning  = "running"
	importDone     = "done"
	importFailed   = "failed"
)

// importJob is one CSV import.
type importJob struct {
	ID        string
	TeamID    string
	Filename  string
	Path      string
	Size      int64
	Status    string
	Total     int64
	Processed int64
	Created   int64
	Updated   int64
	Skipped   int64
	Error     string
	CreatedAt time.Time
}

// mapping is what the user chose on the mapping form.
type mapping struct {
	// Columns maps a column index to a property key ("" skips it).
	Columns map[int]string `json:"columns"`
	// NewProps are properties to create before the import, by key → type.
	NewProps map[string]string `json:"newProps"`
	Lists    []string          `json:"lists"`
	// TriggerWorkflows lets the imported contacts start workflows (contact
	// added, added to list, property changed); off, the import starts none.
	TriggerWorkflows bool `json:"triggerWorkflows"`
}

// importer runs imports in the background, on the node that received the
// start request.
type importer struct {
	d      *Dashboard
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newImporter(d *Dashboard) *importer {
	ctx, cancel := context.WithCancel(context.Background())
	return &importer{d: d, ctx: ctx, cancel: cancel}
}

func (im *importer) close() {
	im.cancel()
	im.wg.Wait()
}

func (d *Dashboard) importDir() string { return filepath.Join(d.deps.DataDir, "imports") }

func scanImport(r interface{ Scan(...any) error }) (importJob, error) {
	var j importJob
	var created int64
	err := r.Scan(&j.ID, &j.TeamID, &j.Filename, &j.Path, &j.Size, &j.Status, &j.Total, &j.Processed, &j.Created, &j.Updated, &j.Skipped, &j.Error, &created)
	j.CreatedAt = time.UnixMilli(created).UTC()
	return j, err
}

const importCols = `id, team_id, filename, path, size, status, total_rows, processed, created, updated, skipped, error, created_at`

func (s *store) imports(ctx context.Context, teamID string) ([]importJob, error) {
	rows, err := s.db.Query(ctx, `SELECT `+importCols+` FROM csv_imports WHERE team_id = $1 ORDER BY created_at DESC LIMIT 20`, teamID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []importJob
	for rows.Next() {
		j, err := scanImport(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

func (s *store) importJob(ctx context.Context, teamID, id string) (importJob, error) {
	j, err := scanImport(s.db.QueryRow(ctx, `SELECT `+importCols+` FROM csv_imports WHERE id = $1 AND team_id = $2`, id, teamID))
	if errors.Is(err, db.ErrNoRows) {
		return j, apperr.New(apperr.NotFound, "Import not found.")
	}
	return j, err
}

// importsPage lists imports with the upload form.
type importsPage struct {
	Page
	Imports []importJob
}

// handleImports handles "GET /imports".
func (d *Dashboard) handleImports(w http.ResponseWriter, r *http.Request, u *User) {
	d.renderImports(w, r, u, http.StatusOK, "")
}

func (d *Dashboard) renderImports(w http.ResponseWriter, r *http.Request, u *User, status int, errMsg string) {
	jobs, err := d.store.imports(r.Context(), u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	data := &importsPage{Page: d.page(r, "Import contacts", "imports"), Imports: jobs}
	data.Error = errMsg
	d.render(w, r, status, "imports", data)
}

// handleImportUpload handles "POST /imports": the file streams to disk part
// by part (never held in memory). The CSRF token is the first form part
// (or the X-CSRF-Token header), checked before the file is read.
func (d *Dashboard) handleImportUpload(w http.ResponseWriter, r *http.Request, u *User) {
	r.Body = http.MaxBytesReader(w, r.Body, maxUpload)
	mr, err := r.MultipartReader()
	if err != nil {
		d.renderImports(w, r, u, http.StatusBadRequest, "Choose a CSV file to upload.")
		return
	}
	csrfOK := r.Header.Get(csrfHeader) != "" // checked by the middleware
	if err := os.MkdirAll(d.importDir(), 0o750); err != nil {
		d.serverError(w, r, err)
		return
	}
	id := ids.New()
	path := filepath.Join(d.importDir(), id+".csv")
	var filename string
	var size int64
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			_ = os.Remove(path)
			d.renderImports(w, r, u, http.StatusBadRequest, "The upload was interrupted or too large.")
			return
		}
		switch p.FormName() {
		case csrfField:
			b, _ := io.ReadAll(io.LimitReader(p, 200))
			want := csrfToken(r)
			csrfOK = csrfOK || (want != "" && subtle.ConstantTimeCompare(b, []byte(want)) == 1)
		case "file":
			if !csrfOK {
				http.Error(w, "Invalid or missing CSRF token. Reload the page and try again.", http.StatusForbidden)
				return
			}
			filename = filepath.Base(p.FileName())
			f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
			if err != nil {
				d.serverError(w, r, err)
				return
			}
			size, err = io.Copy(f, p)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				_ = os.Remove(path)
				d.renderImports(w, r, u, http.StatusBadRequest, "The upload was interrupted or too large (1 GiB at most).")
				return
			}
		}
		p.Close()
	}
	if !csrfOK {
		http.Error(w, "Invalid or missing CSRF token. Reload the page and try again.", http.StatusForbidden)
		return
	}
	if filename == "" || size == 0 {
		_ = os.Remove(path)
		d.renderImports(w, r, u, http.StatusUnprocessableEntity, "Choose a non-empty CSV file.")
		return
	}
	now := d.now().UnixMilli()
	if _, err := d.deps.DB.Exec(r.Context(), `INSERT INTO csv_imports (id, team_id, user_id, filename, path, size, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
		id, u.TeamID, u.ID, filename, path, size, importUploaded, now); err != nil {
		_ = os.Remove(path)
		d.serverError(w, r, err)
		return
	}
	redirect(w, r, "/imports/"+id)
}

// targetOption is a property a column may map to.
type targetOption struct {
	Key, Label, Type string
}

// importColumn is one column of the file with its guessed mapping.
type importColumn struct {
	Index  int
	Header string
	Sample string
	Guess  string
}

// importPage is an import: the mapping form, the progress bar or the report.
type importPage struct {
	Page
	Job     importJob
	Columns []importColumn
	Preview [][]string
	Targets []targetOption
	Lists   []contacts.List
	Percent int64
}

var builtinTargets = []targetOption{
	{"email", "Email", "string"}, {"firstName", "First name", "string"}, {"lastName", "Last name", "string"},
	{"userId", "User id", "string"}, {"subscribed", "Subscribed", "boolean"}, {"userGroup", "User group", "string"},
	{"source", "Source", "string"}, {"notes", "Notes", "string"},
}

func readPreview(path string, n int) ([]string, [][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	cr := newCSVReader(f)
	header, err := cr.Read()
	if err != nil {
		return nil, nil, apperr.New(apperr.Invalid, "The file has no header row, or is not CSV.")
	}
	var rows [][]string
	for len(rows) < n {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			continue
		}
		rows = append(rows, rec)
	}
	return header, rows, nil
}

func newCSVReader(r io.Reader) *csv.Reader {
	br := bufio.NewReaderSize(r, 256<<10)
	// Skip a UTF-8 byte order mark.
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		_, _ = br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	cr.ReuseRecord = false
	return cr
}

func normHeader(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.NewReplacer(" ", "", "_", "", "-", "").Replace(s)
}

// handleImport handles "GET /imports/{id}".
func (d *Dashboard) handleImport(w http.ResponseWriter, r *http.Request, u *User) {
	d.renderImport(w, r, u, http.StatusOK, "")
}

func (d *Dashboard) renderImport(w http.ResponseWriter, r *http.Request, u *User, status int, errMsg string) {
	ctx := r.Context()
	j, err := d.store.importJob(ctx, u.TeamID, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := &importPage{Page: d.page(r, "Import "+j.Filename, "imports"), Job: j, Percent: progress(j)}
	data.Error = errMsg
	if j.Status == importUploaded {
		header, rows, err := readPreview(j.Path, 5)
		if err != nil {
			if msg, ok := apperr.Message(err); ok {
				data.Error = msg
			} else {
				d.serverError(w, r, err)
				return
			}
		}
		data.Preview = rows
		props, err := d.deps.Contacts.ListProperties(ctx, u.TeamID, true)
		if err != nil {
			d.serverError(w, r, err)
			return
		}
		data.Targets = append(data.Targets, builtinTargets...)
		for _, p := range props {
			data.Targets = append(data.Targets, targetOption{p.Key, p.Label, p.Type})
		}
		for i, h := range header {
			c := importColumn{Index: i, Header: h}
			if len(rows) > 0 && i < len(rows[0]) {
				c.Sample = rows[0][i]
			}
			for _, t := range data.Targets {
				if normHeader(h) == normHeader(t.Key) || normHeader(h) == normHeader(t.Label) {
					c.Guess = t.Key
				}
			}
			if c.Guess == "" && (normHeader(h) == "emailaddress" || normHeader(h) == "mail") {
				c.Guess = "email"
			}
			data.Columns = append(data.Columns, c)
		}
		if data.Lists, err = d.deps.Contacts.Lists(ctx, u.TeamID); err != nil {
			d.serverError(w, r, err)
			return
		}
	}
	d.render(w, r, status, "import", data)
}

func progress(j importJob) int64 {
	if j.Status == importDone {
		return 100
	}
	if j.Total <= 0 {
		return 0
	}
	p := j.Processed * 100 / j.Total
	if p > 99 {
		p = 99
	}
	return p
}

// handleImportStart handles "POST /imports/{id}/start": it saves the
// mapping, creates new properties and starts the background job.
func (d *Dashboard) handleImportStart(w http.ResponseWriter, r *http.Request, u *User) {
	ctx := r.Context()
	j, err := d.store.importJob(ctx, u.TeamID, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if j.Status != importUploaded {
		redirect(w, r, "/imports/"+j.ID)
		return
	}
	_ = r.ParseForm()
	m := mapping{Columns: map[int]string{}, NewProps: map[string]string{}, TriggerWorkflows: r.PostFormValue("workflows") == "on"}
	header, _, err := readPreview(j.Path, 0)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	hasEmail := false
	for i := range header {
		key := r.PostFormValue("col" + strconv.Itoa(i))
		if key == "_new" {
			key = strings.TrimSpace(r.PostFormValue("new" + strconv.Itoa(i)))
			typ := r.PostFormValue("newtype" + strconv.Itoa(i))
			if key == "" {
				d.renderImport(w, r, u, http.StatusUnprocessableEntity, fmt.Sprintf("Name the new property for column %q.", header[i]))
				return
			}
			m.NewProps[key] = typ
		}
		if key == "email" {
			hasEmail = true
		}
		if key != "" {
			m.Columns[i] = key
		}
	}
	if !hasEmail {
		d.renderImport(w, r, u, http.StatusUnprocessableEntity, "Map one column to Email: it identifies each contact.")
		return
	}
	lists, err := d.deps.Contacts.Lists(ctx, u.TeamID)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	chosen := map[string]bool{}
	for _, l := range r.PostForm["lists"] {
		chosen[l] = true
	}
	for _, l := range lists {
		if chosen[l.ID] {
			m.Lists = append(m.Lists, l.ID)
		}
	}
	for key, typ := range m.NewProps {
		if err := d.deps.Contacts.CreateProperty(ctx, u.TeamID, key, typ); err != nil {
			if msg, ok := apperr.Message(err); ok && msg != "Property already exists." {
				d.renderImport(w, r, u, http.StatusUnprocessableEntity, msg)
				return
			} else if !ok {
				d.serverError(w, r, err)
				return
			}
		}
	}
	raw, _ := json.Marshal(m)
	n, err := d.deps.DB.Exec(ctx, `UPDATE csv_imports SET status = $1, mapping = $2, updated_at = $3 WHERE id = $4 AND team_id = $5 AND status = $6`,
		importRunning, string(raw), d.now().UnixMilli(), j.ID, u.TeamID, importUploaded)
	if err != nil {
		d.serverError(w, r, err)
		return
	}
	if n == 1 {
		d.imports.start(j, m)
	}
	redirect(w, r, "/imports/"+j.ID)
}

// handleImportProgress handles "GET /imports/{id}/progress" (htmx polling).
func (d *Dashboard) handleImportProgress(w http.ResponseWriter, r *http.Request, u *User) {
	j, err := d.store.importJob(r.Context(), u.TeamID, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := &importPage{Job: j, Percent: progress(j)}
	d.renderFragment(w, r, http.StatusOK, "import", "progress", data)
}

// handleImportErrors handles "GET /imports/{id}/errors.csv": the skipped
// rows with their line number and reason.
func (d *Dashboard) handleImportErrors(w http.ResponseWriter, r *http.Request, u *User) {
	j, err := d.store.importJob(r.Context(), u.TeamID, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	f, err := os.Open(errorsPath(j.Path))
	if err != nil {
		d.notFound(w, r)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="import-errors-`+j.ID+`.csv"`)
	_, _ = io.Copy(w, f)
}

func errorsPath(p string) string { return strings.TrimSuffix(p, ".csv") + ".errors.csv" }

func (im *importer) start(j importJob, m mapping) {
	im.wg.Add(1)
	go func() {
		defer im.wg.Done()
		err := im.run(im.ctx, j, m)
		status, msg := importDone, ""
		if err != nil {
			status, msg = importFailed, "The import stopped: "+err.Error()
			im.d.log.Error("csv import failed", slog.String("import_id", j.ID), slog.String("error", err.Error()))
		}
		_, _ = im.d.deps.DB.Exec(context.WithoutCancel(im.ctx), `UPDATE csv_imports SET status = $1, error = $2, updated_at = $3 WHERE id = $4`,
			status, msg, im.d.now().UnixMilli(), j.ID)
	}()
}

// countRows counts the data rows (lines after the header) cheaply, for the
// progress bar; quoted newlines make it an estimate.
func countRows(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	var last byte = '\n'
	for {
		k, err := f.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if k > 0 {
			last = buf[k-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	return max(n-1, 0), nil
}

type rowResult struct {
	line    int64
	record  []string
	created bool
	err     error
}

// run imports every row in batched transactions (contacts.UpsertBatch). A bad row is written to the error file and skipped; it never
// stops the import.
func (im *importer) run(ctx context.Context, j importJob, m mapping) error {
	d := im.d
	total, err := countRows(j.Path)
	if err != nil {
		return err
	}
	if _, err := d.deps.DB.Exec(ctx, `UPDATE csv_imports SET total_rows = $1 WHERE id = $2`, total, j.ID); err != nil {
		return err
	}
	if d.deps.DB.Dialect() == db.SQLite {
		// SQLite's default page cache (2 MB) makes every index insert of a
		// big audience a read from the OS: give the writer connection room
		// (it keeps this size; memory is only used as pages are touched).
		if _, err := d.deps.DB.Exec(ctx, `PRAGMA cache_size = -65536`); err != nil {
			return err
		}
	}
	props, err := d.deps.Contacts.ListProperties(ctx, j.TeamID, false)
	if err != nil {
		return err
	}
	types := map[string]string{}
	for _, p := range props {
		types[p.Key] = p.Type
	}
	f, err := os.Open(j.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	ef, err := os.Create(errorsPath(j.Path))
	if err != nil {
		return err
	}
	defer ef.Close()
	ew := csv.NewWriter(ef)
	cr := newCSVReader(f)
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("read header: %w", err)
	}
	_ = ew.Write(append([]string{"line", "reason"}, header...))

	// Rows go to the contacts service in batches of batchRows, each one
	// transaction; a couple of batches are prepared while one is written.
	const writers, batchRows = 2, 5000
	batches := make(chan []rowResult, writers)
	results := make(chan rowResult, batchRows)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for chunk := range batches {
				var ins []contacts.Upsert
				var at []int
				for i, rr := range chunk {
					if rr.err != nil {
						continue
					}
					in, perr := buildUpsert(rr.record, m, types)
					if perr != nil {
						chunk[i].err = perr
						continue
					}
					ins = append(ins, in)
					at = append(at, i)
				}
				res, err := d.deps.Contacts.UpsertBatch(ctx, j.TeamID, ins)
				for k, i := range at {
					if err != nil {
						chunk[i].err = err
						continue
					}
					chunk[i].err, chunk[i].created = res[k].Err, res[k].Created
				}
				for _, rr := range chunk {
					results <- rr
				}
			}
		})
	}
	var readErr error
	go func() {
		defer close(batches)
		line := int64(1)
		chunk := make([]rowResult, 0, batchRows)
		send := func() bool {
			if len(chunk) == 0 {
				return true
			}
			select {
			case batches <- chunk:
				chunk = make([]rowResult, 0, batchRows)
				return true
			case <-ctx.Done():
				return false
			}
		}
		for {
			rec, err := cr.Read()
			line++
			if err == io.EOF {
				send()
				return
			}
			rr := rowResult{line: line, record: rec}
			if err != nil {
				var pe *csv.ParseError
				if !errors.As(err, &pe) {
					readErr = err
					send()
					return
				}
				rr.err = apperr.New(apperr.Invalid, "Unreadable CSV row: %v", pe.Err)
			}
			chunk = append(chunk, rr)
			if len(chunk) == batchRows && !send() {
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	var processed, created, updated, skipped atomic.Int64
	flush := func() error {
		ew.Flush()
		_, err := d.deps.DB.Exec(context.WithoutCancel(ctx), `UPDATE csv_imports SET processed = $1, created = $2, updated = $3, skipped = $4, updated_at = $5 WHERE id = $6`,
			processed.Load(), created.Load(), updated.Load(), skipped.Load(), d.now().UnixMilli(), j.ID)
		return err
	}
	lastFlush := time.Now()
	for rr := range results {
		processed.Add(1)
		switch {
		case rr.err != nil:
			if ctx.Err() != nil {
				continue
			}
			skipped.Add(1)
			reason, ok := apperr.Message(rr.err)
			if !ok {
				reason = "internal error"
				d.log.Error("csv import row", slog.String("import_id", j.ID), slog.Int64("line", rr.line), slog.String("error", rr.err.Error()))
			}
			_ = ew.Write(append([]string{strconv.FormatInt(rr.line, 10), reason}, rr.record...))
		case rr.created:
			created.Add(1)
		default:
			updated.Add(1)
		}
		if time.Since(lastFlush) > 250*time.Millisecond {
			lastFlush = time.Now()
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if readErr != nil {
		return readErr
	}
	return ctx.Err()
}

// buildUpsert turns a row into a contact upsert through the mapping,
// converting values to the property's type.
func buildUpsert(rec []string, m mapping, types map[string]string) (contacts.Upsert, error) {
	in := contacts.Upsert{Props: map[string]any{}, NoTriggers: !m.TriggerWorkflows}
	for i, key := range m.Columns {
		if i >= len(rec) {
			continue
		}
		v := strings.TrimSpace(rec[i])
		switch key {
		case "email":
			in.Email = v
			continue
		case "userId":
			in.UserID = v
			continue
		}
		if v == "" {
			continue
		}
		typ := types[key]
		if t, ok := m.NewProps[key]; ok {
			typ = t
		}
		switch typ {
		case contacts.TypeNumber:
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				return in, apperr.New(apperr.Invalid, "%s: %q is not a number.", key, v)
			}
			in.Props[key] = json.Number(v)
		case contacts.TypeBoolean:
			switch strings.ToLower(v) {
			case "true", "yes", "y", "1":
				in.Props[key] = true
			case "false", "no", "n", "0":
				in.Props[key] = false
			default:
				return in, apperr.New(apperr.Invalid, "%s: %q is not true or false.", key, v)
			}
		default:
			in.Props[key] = v
		}
	}
	if in.Email == "" {
		return in, apperr.New(apperr.Invalid, "The email address is empty.")
	}
	if len(m.Lists) > 0 {
		in.MailingLists = map[string]bool{}
		for _, l := range m.Lists {
			in.MailingLists[l] = true
		}
	}
	return in, nil
}
