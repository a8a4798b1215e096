package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reference/dlq"
	rjob "github.com/faultline/faultline/reference/job"
)

// exportPage is how many entries export reads per page: it never holds more
// than that many in memory.
const exportPage = 500

// maxReported is how many malformed lines or duplicate IDs import names
// before it only counts.
const maxReported = 20

// corruptLine is a corrupt entry as export writes it: its stored bytes
// (base64 in JSON) under the ID they were stored as, so that import writes
// them back byte for byte and the entry stays corrupt. An entry line never
// has a top-level "corrupt" key (dlq.Encode writes none), so the two shapes
// cannot be confused.
type corruptLine struct {
	Corrupt     bool   `json:"corrupt"`
	ID          string `json:"id"`
	Raw         []byte `json:"raw"`
	DecodeError string `json:"decode_error,omitempty"`
}

// exportLine is entry e as one line of an export, without its newline: the
// bytes dlq.Encode writes, or a corruptLine.
func exportLine(e *dlq.Entry) ([]byte, error) {
	if e.Corrupt {
		return json.Marshal(corruptLine{Corrupt: true, ID: e.ID(), Raw: e.Raw, DecodeError: e.DecodeError})
	}
	return dlq.Encode(*e)
}

func newDLQExportCommand(g *dlqGlobal) *cobra.Command {
	var (
		output string
		ff     filterFlags
	)
	c := &cobra.Command{
		Use:   "export [FILTERS] [--output FILE]",
		Short: "Write DLQ entries as JSON Lines, to move them to another environment or keep them as evidence",
		Long: `export writes the entries the filters match (every entry without filters), newest
first, as JSON Lines: one entry per line, exactly as faultline stores it (the job
with its payload, every failed attempt, the status history). A corrupt entry (stored
bytes that do not decode) is written as
  {"corrupt":true,"id":"ID","raw":"BASE64 OF ITS BYTES","decode_error":"..."}
so that import keeps it corrupt, byte for byte. Corrupt entries have no fields to
filter on: only an export without filters includes them.

It reads the DLQ a page at a time (` + fmt.Sprint(exportPage) + ` entries), never all of it at once. With
--output FILE it writes FILE.partial-* beside FILE and renames it when the last
entry is written, so FILE is never half written; it refuses to overwrite a file.
Without --output it writes to stdout. A summary goes to stderr.

Payloads and errors are exported unmasked (secrets included): an export is the
data itself. Keep the file as you would keep the DLQ.`,
		Example: `  faultline dlq export --namespace prod --output dlq-prod.jsonl
  faultline dlq export --task charge --since 24h > charge.jsonl`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if slices.Contains(dlqOutputs, output) {
				return usage(c, fmt.Errorf("--output names the file to write (export always writes JSON Lines), got %q: pass --output FILE, or nothing for stdout", output))
			}
			f, err := ff.filter(c, time.Now())
			if err != nil {
				return err
			}
			if output != "" && output != "-" {
				if _, err := os.Lstat(output); err == nil {
					return usage(c, fmt.Errorf("--output %s: the file exists; export does not overwrite (remove it or choose another name)", output))
				}
				if st, err := os.Stat(filepath.Dir(output)); err != nil || !st.IsDir() {
					return usage(c, fmt.Errorf("--output %s: no such directory %s", output, filepath.Dir(output)))
				}
			}
			return g.withConn(c, 0, func(ctx context.Context, d *dlqConn) error {
				n, corrupt, err := exportTo(ctx, d, f, output, c.OutOrStdout())
				if err != nil {
					return err
				}
				dest := output
				if dest == "" || dest == "-" {
					dest = "stdout"
				}
				fmt.Fprintf(c.ErrOrStderr(), "exported %d %s (%d corrupt) from namespace %q at %s to %s (unmasked)\n",
					n, plural(n, "entry", "entries"), corrupt, d.namespace, d.target.printable(), dest)
				return nil
			})
		},
	}
	ff.add(c)
	c.Flags().StringVarP(&output, "output", "o", "", "the file to write (default stdout); never overwritten")
	return c
}

// exportTo writes the entries f matches to the file path ("" or "-":
// stdout) and returns how many, and how many of them were corrupt.
func exportTo(ctx context.Context, d *dlqConn, f dlq.Filter, path string, stdout io.Writer) (n, corrupt int, err error) {
	var (
		out  io.Writer = stdout
		tmp  *os.File
		done bool
	)
	if path != "" && path != "-" {
		tmp, err = os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".partial-*")
		if err != nil {
			return 0, 0, fmt.Errorf("export: %w", err)
		}
		defer func() {
			if !done {
				_ = tmp.Close()
				_ = os.Remove(tmp.Name())
			}
		}()
		out = tmp
	}
	w := bufio.NewWriterSize(out, 1<<16)
	cursor := ""
	for {
		page, err := d.store.List(ctx, f, cursor, exportPage)
		if err != nil {
			return n, corrupt, fmt.Errorf("export (after %d entries): %w", n, err)
		}
		for i := range page.Entries {
			e := &page.Entries[i]
			line, err := exportLine(e)
			if err != nil {
				return n, corrupt, fmt.Errorf("export %s: %w", masked(e.ID()), err)
			}
			line = append(line, '\n')
			if _, err := w.Write(line); err != nil {
				return n, corrupt, fmt.Errorf("export: write: %w", err)
			}
			n++
			if e.Corrupt {
				corrupt++
			}
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if err := w.Flush(); err != nil {
		return n, corrupt, fmt.Errorf("export: write: %w", err)
	}
	if tmp == nil {
		return n, corrupt, nil
	}
	if err := tmp.Sync(); err != nil {
		return n, corrupt, fmt.Errorf("export: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return n, corrupt, fmt.Errorf("export: %w", err)
	}
	// Link, then remove the temporary name: unlike a rename, a link refuses
	// to replace a file that appeared at path meanwhile.
	if err := os.Link(tmp.Name(), path); err != nil {
		return n, corrupt, fmt.Errorf("export: %w", err)
	}
	done = true
	_ = os.Remove(tmp.Name())
	return n, corrupt, nil
}

// importItem is one line of an import, checked: the ID and the bytes to
// store (the entry encoded again by dlq.Encode, or a corrupt entry's raw
// bytes).
type importItem struct {
	line    int
	id      string
	bytes   []byte
	corrupt bool
}

// lineError is a malformed line of an import file.
type lineError struct {
	Line int
	Err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

func (e *lineError) Unwrap() error { return e.Err }

// parseImportLine checks one non-blank line of an export.
func parseImportLine(n int, b []byte) (importItem, error) {
	var head struct {
		Corrupt *bool           `json:"corrupt"`
		ID      string          `json:"id"`
		Raw     []byte          `json:"raw"`
		Job     json.RawMessage `json:"job"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return importItem{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if head.Corrupt != nil {
		switch {
		case !*head.Corrupt:
			return importItem{}, errors.New(`"corrupt" is false: an entry line has no "corrupt" key`)
		case head.ID == "":
			return importItem{}, errors.New(`a corrupt entry without its "id"`)
		case head.Raw == nil:
			return importItem{}, errors.New(`a corrupt entry without its "raw" bytes`)
		}
		return importItem{line: n, id: head.ID, bytes: head.Raw, corrupt: true}, nil
	}
	var j struct {
		ID string `json:"id"`
	}
	if len(head.Job) == 0 || json.Unmarshal(head.Job, &j) != nil || j.ID == "" {
		return importItem{}, errors.New(`not a DLQ entry: no "job" with an "id" (export writes one entry per line)`)
	}
	e := dlq.Decode(j.ID, b)
	if e.Corrupt {
		return importItem{}, fmt.Errorf("entry %q does not decode: %s", j.ID, e.DecodeError)
	}
	if e.Status == 0 {
		return importItem{}, fmt.Errorf("entry %q has no status", j.ID)
	}
	if err := rjob.Validate(&e.Job, 0); err != nil {
		return importItem{}, fmt.Errorf("entry %q: %w", j.ID, err)
	}
	raw, err := dlq.Encode(e)
	if err != nil {
		return importItem{}, err
	}
	return importItem{line: n, id: j.ID, bytes: raw}, nil
}

// The bounds of a line of an import: defaultImportLineLimit by default (16
// MiB: sixteen times the largest payload an entry holds,
// job.DefaultMaxPayload, and room for its history), and what
// --max-line-bytes takes, minImportLineLimit to maxImportLineLimit (64 MiB:
// a longer entry, one Redis script, would stall Redis for seconds).
const (
	defaultImportLineLimit = 16 << 20
	minImportLineLimit     = 1 << 10
	maxImportLineLimit     = 64 << 20
)

// lineTooLongError is a line of an import over the line limit: refused
// before it is read into memory (only its length is).
type lineTooLongError struct {
	// Size is the line's length in bytes, without its newline.
	Size  int64
	Limit int
}

func (e *lineTooLongError) Error() string {
	return fmt.Sprintf("%d bytes, over the limit of %d bytes a line (--max-line-bytes)", e.Size, e.Limit)
}

// eachLine calls f with every non-blank line of r and its number (from 1),
// trimmed. A line longer than limit bytes is never held in memory: f gets
// its number, no bytes and a *lineTooLongError.
func eachLine(r io.Reader, limit int, f func(n int, b []byte, tooLong error) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		var (
			line []byte
			size int64
			over bool
			err  error
		)
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			size += int64(len(chunk))
			if !over && len(line)+len(chunk) > limit+1 { // +1: the newline
				over, line = true, nil
			}
			if !over {
				line = append(line, chunk...)
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if err == nil {
			size-- // the newline
		}
		var ferr error
		switch {
		case over || size > int64(limit):
			ferr = f(n, nil, &lineTooLongError{Size: size, Limit: limit})
		case len(bytes.TrimSpace(line)) > 0:
			ferr = f(n, bytes.TrimSpace(line), nil)
		}
		if ferr != nil {
			return ferr
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read line %d: %w", n, err)
		}
	}
}

// importSource opens what import reads: the file, or stdin ("-") copied to a
// temporary file first, so that the file can be read twice (checked whole,
// then written). The caller calls the cleanup.
func importSource(c *cobra.Command, name string) (*os.File, func(), error) {
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, usage(c, fmt.Errorf("import: %w", err))
		}
		return f, func() { _ = f.Close() }, nil
	}
	tmp, err := os.CreateTemp("", "faultline-import-*.jsonl")
	if err != nil {
		return nil, nil, fmt.Errorf("import: spool stdin: %w", err)
	}
	cleanup := func() { _ = tmp.Close(); _ = os.Remove(tmp.Name()) }
	if _, err := io.Copy(tmp, c.InOrStdin()); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("import: read stdin: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("import: %w", err)
	}
	return tmp, cleanup, nil
}

// checkImport reads the whole file and returns how many entries it holds,
// or an invalid-input error naming the malformed lines (and an ID given on
// two lines). It keeps only the IDs in memory.
func checkImport(c *cobra.Command, f *os.File, limit int) (int, error) {
	seen := map[string]int{}
	var bad []string
	nbad := 0
	err := eachLine(f, limit, func(n int, b []byte, tooLong error) error {
		it, err := importItem{}, tooLong
		if err == nil {
			it, err = parseImportLine(n, b)
		}
		if err == nil {
			if first, dup := seen[it.id]; dup {
				err = fmt.Errorf("entry %q again (first on line %d)", it.id, first)
			} else {
				seen[it.id] = n
			}
		}
		if err != nil {
			nbad++
			if len(bad) < maxReported {
				bad = append(bad, (&lineError{Line: n, Err: err}).Error())
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("import %s: %w", f.Name(), err)
	}
	if nbad > 0 {
		more := ""
		if nbad > len(bad) {
			more = fmt.Sprintf("; and %d more", nbad-len(bad))
		}
		return 0, usage(c, fmt.Errorf("import: %d malformed %s, nothing imported: %s%s",
			nbad, plural(nbad, "line", "lines"), strings.Join(bad, "; "), more))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	return len(seen), nil
}

// importSummary is what an import did (or, on a dry run, would do).
type importSummary struct {
	DryRun bool `json:"dry_run"`
	// Stated is how many entries the file holds; Imported were written
	// (Corrupt of them corrupt); Present were in the DLQ already with the
	// same contents (a rerun); Duplicates were refused: their IDs are in
	// the DLQ with other contents.
	Stated     int      `json:"stated"`
	Imported   int      `json:"imported"`
	Corrupt    int      `json:"corrupt"`
	Present    int      `json:"already_present"`
	Duplicates int      `json:"duplicates"`
	DupIDs     []string `json:"duplicate_ids,omitempty"`
	// Live were refused because a job of their ID is queued or in flight.
	Live    int      `json:"live_jobs"`
	LiveIDs []string `json:"live_job_ids,omitempty"`
	// Full were refused because the DLQ was full (the reject policy): the
	// import stopped there.
	Full int `json:"refused_full,omitempty"`
}

// DLQFullError says an import stopped because the DLQ was full under the
// reject policy: how many entries it imported before, and the capacity it
// was told. It maps to ExitFailed: an expected condition, not an internal
// error; a rerun once there is room finishes the import.
type DLQFullError struct {
	Namespace string
	// Capacity and Overflow are the DLQ's bound and policy as --capacity
	// and --overflow gave them.
	Capacity int
	Overflow string
	// Stated is how many entries the file holds; Imported were written;
	// Refused were refused for want of room; Other were not written for
	// another reason (present already, duplicates, live jobs).
	Stated, Imported, Refused, Other int
	// Err is the store's refusal (dlq.ErrFull).
	Err error
}

// Error says what was imported, that the DLQ is full at its capacity, and
// what to do.
func (e *DLQFullError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "import: the DLQ of namespace %q is full (capacity %d, the --capacity given; overflow %s): %d of %d %s imported, %d refused",
		e.Namespace, e.Capacity, e.Overflow, e.Imported, e.Stated, plural(e.Stated, "entry", "entries"), e.Refused)
	if left := e.Stated - e.Imported - e.Refused - e.Other; left > 0 {
		fmt.Fprintf(&b, ", %d not reached", left)
	}
	b.WriteString("; make room (requeue, delete, purge) or raise the capacity, then rerun the import: entries imported already count as present")
	return b.String()
}

// Unwrap returns the store's refusal.
func (e *DLQFullError) Unwrap() error { return e.Err }

func newDLQImportCommand(g *dlqGlobal) *cobra.Command {
	var (
		dryRun  bool
		output  string
		maxLine int
		cf      confirmation
	)
	c := &cobra.Command{
		Use:   "import FILE|-",
		Short: "Add the entries of a JSON Lines export to the DLQ; IDs already there are refused and reported",
		Long: `import adds the entries of a file faultline dlq export wrote (- reads stdin) to the
DLQ, as they were: status, status history, failed attempts, payload; a corrupt entry
stays corrupt with its bytes.

The whole file is checked first: a malformed line (not JSON, not an entry, an ID on
two lines, longer than --max-line-bytes) is invalid input (exit 2) naming its line
number, and nothing is written (nor audited). A line is read into memory only when
it is within --max-line-bytes (default 16 MiB; an entry's payload is at most 1 MiB):
a longer one is measured, refused, and nothing is imported; drop or fix it, or raise
the limit (up to 64 MiB).
An entry whose ID is in the DLQ already is not written: with the same contents it
counts as already present (rerunning an interrupted import finishes it); with other
contents it is a refused duplicate, listed by ID, and import exits 2 after writing
the others. --dry-run checks and counts, writing nothing. Before writing, import
asks on a terminal, stating the count; a script passes --yes.

Each entry is written in one step only if its ID is absent (no entry, no job queued
or in flight), within the DLQ's capacity (--capacity, --overflow: as the workers
configure it): a full DLQ under the reject policy stops the import, exit 1, saying
how many entries were imported and the capacity (rerun it once there is room: what
was imported counts as present); under evict-oldest the oldest entries make room,
as for any dead letter. A corrupt entry
is written as its bytes.`,
		Example: `  faultline dlq import dlq-prod.jsonl --namespace staging --dry-run
  faultline dlq export --namespace prod | faultline dlq import - --namespace staging --yes`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usage(c, fmt.Errorf("import takes one file (or - for stdin), got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return usage(c, fmt.Errorf("--output: unknown value %q (allowed: table, json)", masked(output)))
			}
			if maxLine < minImportLineLimit || maxLine > maxImportLineLimit {
				return usage(c, fmt.Errorf("--max-line-bytes must be between %d and %d (64 MiB), got %d", minImportLineLimit, maxImportLineLimit, maxLine))
			}
			f, cleanup, err := importSource(c, args[0])
			if err != nil {
				return err
			}
			defer cleanup()
			stated, err := checkImport(c, f, maxLine)
			if err != nil {
				return err
			}
			return g.withConn(c, 0, func(ctx context.Context, d *dlqConn) error {
				sum := importSummary{DryRun: dryRun, Stated: stated}
				w := c.OutOrStdout()
				if !dryRun {
					ok, err := cf.ask(c, fmt.Sprintf("import %d %s into namespace %q at %s", stated, plural(stated, "entry", "entries"), d.namespace, d.target.printable()))
					if err != nil || !ok {
						return err
					}
					rec := dlq.AuditRecord{By: g.actor(), Action: "import", Phase: "started", Stated: stated, Note: "from " + args[0]}
					if err := d.record(c, rec); err != nil {
						return fmt.Errorf("import: nothing imported: %w", err)
					}
				}
				chunk := make([]importItem, 0, importChunk)
				err := eachLine(f, maxLine, func(n int, b []byte, tooLong error) error {
					it, err := importItem{}, tooLong
					if err == nil {
						it, err = parseImportLine(n, b)
					}
					if err != nil {
						return usage(c, fmt.Errorf("import: the file changed while it was read: %w", &lineError{Line: n, Err: err}))
					}
					if chunk = append(chunk, it); len(chunk) == importChunk {
						err, chunk = importItems(ctx, d, chunk, &sum, dryRun), chunk[:0]
					}
					return err
				})
				if err == nil {
					err = importItems(ctx, d, chunk, &sum, dryRun)
				}
				if errors.Is(err, dlq.ErrFull) {
					err = &DLQFullError{Namespace: d.namespace, Capacity: g.capacity, Overflow: g.overflow,
						Stated: sum.Stated, Imported: sum.Imported, Refused: sum.Full,
						Other: sum.Present + sum.Duplicates + sum.Live, Err: err}
				}
				if !dryRun {
					rec := dlq.AuditRecord{By: g.actor(), Action: "import", Phase: "done", Stated: sum.Stated, Moved: sum.Imported,
						Skipped: sum.Present + sum.Duplicates + sum.Live, Note: "from " + args[0]}
					if err != nil {
						rec.Phase, rec.Note = "failed", rec.Note+": "+masked(err.Error())
					}
					_ = d.record(c, rec)
				}
				var full *DLQFullError
				if err != nil && !errors.As(err, &full) {
					return fmt.Errorf("%w (after %d imported)", err, sum.Imported)
				}
				if output == "json" {
					if err := writeJSON(w, sum, true); err != nil {
						return err
					}
				} else {
					printImport(w, &sum, d)
				}
				if full != nil {
					return full
				}
				if sum.Duplicates > 0 {
					return usage(c, fmt.Errorf("%d %s not imported: %s in the DLQ of namespace %q with other contents",
						sum.Duplicates, plural(sum.Duplicates, "entry was", "entries were"), plural(sum.Duplicates, "its ID is", "their IDs are"), d.namespace))
				}
				if sum.Live > 0 {
					return usage(c, fmt.Errorf("%d %s not imported: a job of %s ID is queued or in flight in namespace %q",
						sum.Live, plural(sum.Live, "entry was", "entries were"), plural(sum.Live, "its", "their"), d.namespace))
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&dryRun, "dry-run", false, "check the file and count what would be imported; write nothing")
	c.Flags().StringVarP(&output, "output", "o", "table", "summary format: table, json")
	c.Flags().IntVar(&maxLine, "max-line-bytes", defaultImportLineLimit, "the longest line taken, in bytes (1024..67108864); a longer one is refused, nothing imported")
	cf.addYes(c, true)
	return c
}

// importChunk is how many entries import holds in memory at a time, and
// importWorkers how many of them it checks and writes at once.
const (
	importChunk   = 512
	importWorkers = 8
)

// importOutcome is what import did with one entry.
type importOutcome uint8

const (
	imported importOutcome = iota + 1
	alreadyPresent
	duplicate
	// live: no entry, but a job of that ID is queued or in flight.
	live
)

// importItems imports a chunk of checked entries, importWorkers at a time,
// and counts what happened in sum in the file's order. On an error it
// counts the entries that were written all the same, and returns the error
// of the first entry that failed.
func importItems(ctx context.Context, d *dlqConn, items []importItem, sum *importSummary, dryRun bool) error {
	outs := make([]importOutcome, len(items))
	errs := make([]error, len(items))
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range min(importWorkers, len(items)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(items); i = int(next.Add(1) - 1) {
				outs[i], errs[i] = importOne(ctx, d, &items[i], dryRun)
			}
		})
	}
	wg.Wait()
	var first error
	for i, o := range outs {
		switch {
		case errs[i] != nil:
			first = cmp.Or(first, errs[i])
			if errors.Is(errs[i], dlq.ErrFull) {
				sum.Full++
			}
		case o == imported:
			sum.Imported++
			if items[i].corrupt {
				sum.Corrupt++
			}
		case o == alreadyPresent:
			sum.Present++
		case o == live:
			sum.Live++
			if len(sum.LiveIDs) < maxReported {
				sum.LiveIDs = append(sum.LiveIDs, masked(items[i].id))
			}
		case o == duplicate:
			sum.Duplicates++
			if len(sum.DupIDs) < maxReported {
				sum.DupIDs = append(sum.DupIDs, masked(items[i].id))
			}
		}
	}
	return first
}

// importOne writes one checked entry unless its ID is in the DLQ: then it
// is already present (the same contents) or a duplicate (other contents).
// A decodable entry is written in one step only if absent (dlq.Importer),
// within the DLQ's capacity, so two imports at once, or a worker
// dead-lettering the same job meanwhile, never overwrite an entry; a
// corrupt one is kept as its bytes, written the same way (only if absent).
func importOne(ctx context.Context, d *dlqConn, it *importItem, dryRun bool) (importOutcome, error) {
	if !dryRun {
		var added bool
		var err error
		if it.corrupt {
			added, err = d.store.WriteRawIfAbsent(ctx, it.id, it.bytes)
		} else {
			_, added, err = dlq.Importer(d.store).AddIfAbsent(ctx, dlq.Decode(it.id, it.bytes), time.Now())
		}
		switch {
		case err != nil:
			return 0, fmt.Errorf("import %s (line %d): %w", masked(it.id), it.line, err)
		case added:
			return imported, nil
		}
		// Not written: an entry of that ID is there (compared below), or
		// its job is queued or in flight.
	}
	cur, err := d.store.Get(ctx, it.id)
	switch {
	case err == nil:
		same := cur.Corrupt == it.corrupt && bytes.Equal(cur.Raw, it.bytes)
		if !cur.Corrupt && !it.corrupt {
			b, err := dlq.Encode(cur)
			same = err == nil && bytes.Equal(b, it.bytes)
		}
		if same {
			return alreadyPresent, nil
		}
		return duplicate, nil
	case !errors.Is(err, dlq.ErrNotFound):
		return 0, fmt.Errorf("import %s (line %d): %w", masked(it.id), it.line, err)
	case !dryRun:
		return live, nil
	}
	if busy, err := d.store.JobLive(ctx, it.id); err != nil {
		return 0, fmt.Errorf("import %s (line %d): %w", masked(it.id), it.line, err)
	} else if busy {
		return live, nil
	}
	return imported, nil
}

func printImport(w io.Writer, s *importSummary, d *dlqConn) {
	verb := "imported"
	if s.DryRun {
		verb = "would import"
	}
	fmt.Fprintf(w, "%s %d of %d %s (%d corrupt) into namespace %q at %s; already present %d; refused duplicates %d\n",
		verb, s.Imported, s.Stated, plural(s.Stated, "entry", "entries"), s.Corrupt, d.namespace, d.target.printable(), s.Present, s.Duplicates)
	if s.Duplicates > 0 {
		more := ""
		if s.Duplicates > len(s.DupIDs) {
			more = fmt.Sprintf(" and %d more", s.Duplicates-len(s.DupIDs))
		}
		fmt.Fprintf(w, "duplicates (ID already in the DLQ with other contents): %s%s\n", strings.Join(s.DupIDs, ", "), more)
	}
	if s.Live > 0 {
		more := ""
		if s.Live > len(s.LiveIDs) {
			more = fmt.Sprintf(" and %d more", s.Live-len(s.LiveIDs))
		}
		fmt.Fprintf(w, "not imported, a job of that ID is queued or in flight: %s%s\n", strings.Join(s.LiveIDs, ", "), more)
	}
	if s.Full > 0 {
		fmt.Fprintf(w, "not imported, the DLQ is full: %d (the import stopped there)\n", s.Full)
	}
	if s.DryRun {
		fmt.Fprintln(w, "dry run: nothing written")
	}
}
