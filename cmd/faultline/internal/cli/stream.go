package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// runSink takes the finished runs one at a time, in order, as they are
// printed, and writes what the reports need of each at once: the run's
// JSON and HTML files, its suite of junit.xml (spooled to a temporary file
// until the totals are known), its row of summary.md and summary.json, and
// of the GitHub step summary. The command then lets go of the result
// (job.release), so that memory stays flat in the number of runs: a sweep
// of 1,000 seeds no longer holds 1,000 results.
type runSink struct {
	dir     string
	formats []string
	sweep   bool

	junit      *reports.JUnitWriter
	junitSpool *os.File
	md         *reports.MarkdownWriter
	step       *reports.MarkdownWriter
	summary    outputFile
	sumPath    string // summary.json's path
	rows       int
	err        error
}

// newRunSink opens what the reports are streamed to: dir with formats (none
// for no reports), a summary.json for a sweep, the step summary when
// GITHUB_STEP_SUMMARY is set.
func newRunSink(dir string, formats []string, sweep bool) (*runSink, error) {
	s := &runSink{dir: dir, formats: formats, sweep: sweep}
	if os.Getenv("GITHUB_STEP_SUMMARY") != "" {
		s.step = reports.NewMarkdownWriter()
	}
	if len(formats) == 0 {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, f := range formats {
		switch f {
		case "junit":
			spool, err := os.CreateTemp(dir, ".junit-*.spool")
			if err != nil {
				return nil, outputError(filepath.Join(dir, "junit.xml"), err)
			}
			_ = os.Remove(spool.Name()) // unlinked: gone with the process, whatever happens
			s.junitSpool, s.junit = spool, reports.NewJUnitWriter(spool)
		case "md":
			s.md = reports.NewMarkdownWriter()
		}
	}
	if sweep {
		s.sumPath = filepath.Join(dir, "summary.json")
		f, err := openOutput(s.sumPath, createFlags, 0o666)
		if err != nil {
			s.abort()
			return nil, outputError(s.sumPath, err)
		}
		s.summary = f
		_, _ = io.WriteString(f, "[")
	}
	return s, nil
}

// summaryRow is one run of a sweep in summary.json.
type summaryRow struct {
	Scenario string          `json:"scenario"`
	Seed     uint64          `json:"seed"`
	Verdict  reports.Verdict `json:"verdict"`
	Failure  string          `json:"failure,omitempty"`
}

// add writes j's result wherever it goes. The first error is kept and
// returned by close; later runs are not written.
func (s *runSink) add(j *job) {
	if s.err != nil || !j.done() || j.res == nil {
		return
	}
	r := j.res
	for _, format := range s.formats {
		switch format {
		case "json", "html":
			if s.sweep && !r.Failed() {
				continue
			}
			name := fmt.Sprintf("%s.seed-%d.%s", j.stem(), r.Seed, format)
			if err := writeFile(filepath.Join(s.dir, name), func(w io.Writer) error { return writeFormat(w, format, []*reports.Result{r}, false) }); err != nil {
				s.err = err
				return
			}
		case "junit":
			if err := s.junit.Add(r); err != nil { // the spool, in the report directory
				s.err = outputError(filepath.Join(s.dir, "junit.xml"), err)
				return
			}
		case "md":
			_ = s.md.Add(r)
		}
	}
	if s.step != nil {
		_ = s.step.Add(r)
	}
	if s.summary != nil {
		b, err := json.MarshalIndent(summaryRow{masked(r.Scenario), j.seed, r.Verdict, masked(scenarios.Signature(r))}, "  ", "  ")
		if err != nil {
			s.err = err
			return
		}
		sep := ",\n  "
		if s.rows == 0 {
			sep = "\n  "
		}
		s.rows++
		if _, err := fmt.Fprintf(s.summary, "%s%s", sep, b); err != nil {
			s.err = outputError(s.sumPath, err)
		}
	}
}

// stem is what j's report files are named after: its target's stem, else
// its scenario's name.
func (j *job) stem() string {
	if j.t != nil && j.t.stem != "" {
		return j.t.stem
	}
	return safeName(j.res.Scenario)
}

// notMade tells the Markdown summaries that of total runs, n were never
// made (the command was interrupted).
func (s *runSink) notMade(n, total int) {
	for _, md := range []*reports.MarkdownWriter{s.md, s.step} {
		if md != nil {
			md.NotMade(uint64(n), uint64(total))
		}
	}
}

// close finishes junit.xml, summary.md and summary.json, and appends the
// step summary. It reports whether report files were written.
func (s *runSink) close() (bool, error) {
	defer s.abort()
	if s.err != nil {
		return false, s.err
	}
	var errs []error
	if s.junit != nil {
		errs = append(errs, writeFile(filepath.Join(s.dir, "junit.xml"), s.junit.Finish))
	}
	if s.md != nil {
		errs = append(errs, writeFile(filepath.Join(s.dir, "summary.md"), s.md.Finish))
	}
	if s.summary != nil {
		end := "\n]\n"
		if s.rows == 0 {
			end = "]\n"
		}
		_, err := io.WriteString(s.summary, end)
		if cerr := s.summary.Close(); err == nil {
			err = cerr // a write lost on close
		}
		s.summary = nil
		if err != nil {
			errs = append(errs, outputError(s.sumPath, err))
		}
	}
	return len(s.formats) > 0, errors.Join(errs...)
}

// closeStep appends the step summary, if GITHUB_STEP_SUMMARY is set.
func (s *runSink) closeStep() error {
	if s.step == nil {
		return nil
	}
	return appendStepSummary(s.step)
}

// afterRelease, when set (by the memory benchmark), is called after each
// run was printed, written and let go of.
var afterRelease func()

// release keeps of j's result only its verdict, once it was printed and
// written: what the command needs afterwards (counting, shrinking) is the
// verdict and the seed.
func (j *job) release() {
	if j.res != nil {
		j.verdict, j.res = j.res.Verdict, nil
	}
}

// outcome is j's verdict, released or not: Errored for a run that could
// not start.
func (j *job) outcome() reports.Verdict {
	switch {
	case j.err != nil:
		return reports.Errored
	case j.res != nil:
		return j.res.Verdict
	}
	return j.verdict
}

// abort closes what is open.
func (s *runSink) abort() {
	if s.junitSpool != nil {
		_ = s.junitSpool.Close()
		s.junitSpool = nil
	}
	if s.summary != nil {
		_ = s.summary.Close()
		s.summary = nil
	}
}

// appendStepSummary appends the Markdown summary of the runs to the file
// GitHub Actions names in GITHUB_STEP_SUMMARY.
func appendStepSummary(md *reports.MarkdownWriter) error {
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	f, err := openOutput(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	if err := md.Finish(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("GITHUB_STEP_SUMMARY: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: write %s: %w", path, err)
	}
	return nil
}
