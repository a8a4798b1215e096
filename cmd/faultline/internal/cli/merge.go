package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reports"
)

// ErrShardsMismatch is matched (errors.Is) by report merge's error for
// directories that are not the N shards of one run: shards of different
// runs, a shard missing or given twice.
var ErrShardsMismatch = errors.New("not the shards of one run")

func newMergeCommand() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "merge SHARD-DIR... [--out DIR]",
		Short: "Combine the report directories of a sharded run (faultline run --shard I/N) into one",
		Long: `Read the report directories that the N shards of one run wrote (faultline run
--shard I/N --report-dir DIR) and write into --out what the unsharded run would have
written: one summary.json (every run, in the unsharded order, with the totals), one
junit.xml, one summary.md (appended to $GITHUB_STEP_SUMMARY too, when set) and the
failing runs' reports. It reads the shards one run at a time: memory stays flat in
the number of runs.

It refuses (exit 2) directories that are not the N shards of one run, saying which:
shards of different runs (another scenario set, seed spec, shard count or faultline
version), a shard missing, a shard given twice, a shard lacking a failing run's report,
a summary.json cut short or with a bad value (named with its line and column). The
merged files are written to a staging directory and moved into --out only once every
shard was read whole: a refused merge leaves --out as it was.

Exit codes: 0 every run passed; 1 a run failed, errored or was interrupted, or a
shard did not make all its runs; 2 invalid input (the directories, an unwritable
--out); 5 a run was inconclusive (a drill's harness fell behind its time scale) and
none of the above.`,
		Example: `  faultline report merge shard-1/ shard-2/ shard-3/ --out merged/
  faultline report merge shards/*/ --out merged/`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usage(c, errors.New("report merge needs the shards' report directories"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return mergeShards(c.Context(), c.OutOrStdout(), args, out)
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "faultline-reports", "where the merged reports are written")
	return c
}

// shardDir is one shard's report directory, open for reading.
type shardDir struct {
	dir    string
	sum    *reports.SummaryReader
	junit  *reports.JUnitSuiteReader
	files  []io.Closer
	head   reports.SummaryRun
	more   bool
	header reports.SummaryHeader
}

func (d *shardDir) close() {
	for _, f := range d.files {
		_ = f.Close()
	}
}

// next reads the shard's next row into head.
func (d *shardDir) next() error {
	row, ok, err := d.sum.Next()
	if err != nil {
		return &InvalidInputError{Err: summaryFileError(filepath.Join(d.dir, "summary.json"), err)}
	}
	d.head, d.more = row, ok
	return nil
}

// openShard opens dir's summary.json and junit.xml and reads the header.
func openShard(dir string) (*shardDir, error) {
	d := &shardDir{dir: dir}
	path := filepath.Join(dir, "summary.json")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &InvalidInputError{Err: fmt.Errorf("%s: no summary.json: not the report directory of a shard", dir),
			Hint: "Try: faultline run … --shard I/N --report-dir DIR writes one"}
	}
	if err != nil {
		return nil, &InvalidInputError{Err: err}
	}
	d.files = append(d.files, f)
	if d.sum, err = reports.NewSummaryReader(f); err != nil {
		d.close()
		return nil, &InvalidInputError{Err: summaryFileError(path, err), Hint: "Try: faultline run … --shard I/N --report-dir DIR writes one"}
	}
	d.header = d.sum.Header()
	if d.header.Shard == nil {
		d.close()
		return nil, &InvalidInputError{Err: fmt.Errorf("%s: a merged summary (of %d shards), not a shard's", path, d.header.MergedShards)}
	}
	j, err := os.Open(filepath.Join(dir, "junit.xml"))
	if err != nil {
		d.close()
		return nil, &InvalidInputError{Err: fmt.Errorf("%s: %w (every shard writes one)", dir, err)}
	}
	d.files = append(d.files, j)
	d.junit = reports.NewJUnitSuiteReader(j)
	return d, nil
}

// summaryFileError names the summary.json an error of its reader is
// about: "PATH:LINE:COL: FIELD: what is wrong" when the reader said where.
func summaryFileError(path string, err error) error {
	var se *reports.SummaryError
	if errors.As(err, &se) {
		se.File = path
		return se
	}
	return fmt.Errorf("%s: %w", path, err)
}

// runKey is what identifies a run: shards of one run agree on it.
func runKey(h reports.SummaryHeader) string {
	return fmt.Sprintf("%d scenarios (%s), %s (%s), %d runs, %d shards, faultline %s",
		h.Scenarios, short(h.ScenarioSetHash), h.SeedSpec, short(h.SeedSpecHash), h.TotalRuns, h.Shard.Count, h.ToolVersion)
}

// short is a hash's first 12 hex digits.
func short(hash string) string {
	if len(hash) > len("sha256:")+12 {
		return hash[:len("sha256:")+12] + "…"
	}
	return hash
}

// checkShards says whether ds are the N shards of one run, each once, and
// returns them in shard order.
func checkShards(ds []*shardDir) ([]*shardDir, error) {
	hint := "Try: faultline report merge with the report directories of the N shards of one run, each once"
	groups := map[string][]string{}
	var keys []string
	for _, d := range ds {
		k := runKey(d.header)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], d.dir)
	}
	if len(keys) > 1 {
		var b strings.Builder
		b.WriteString("shards of different runs:")
		for _, k := range keys {
			fmt.Fprintf(&b, "\n  %s: %s", strings.Join(groups[k], ", "), k)
		}
		return nil, &InvalidInputError{Err: fmt.Errorf("%s: %w", b.String(), ErrShardsMismatch), Hint: hint}
	}
	n := ds[0].header.Shard.Count
	byIndex := make([]*shardDir, n+1)
	for _, d := range ds {
		i := d.header.Shard.Index
		if i < 1 || i > n {
			return nil, &InvalidInputError{Err: fmt.Errorf("%s: shard %s is not one of 1..%d", d.dir, d.header.Shard, n)}
		}
		if byIndex[i] != nil {
			return nil, &InvalidInputError{Err: fmt.Errorf("shard %d/%d given twice: %s and %s: %w", i, n, byIndex[i].dir, d.dir, ErrShardsMismatch), Hint: hint}
		}
		byIndex[i] = d
	}
	var missing, have []string
	for i := 1; i <= n; i++ {
		if byIndex[i] == nil {
			missing = append(missing, strconv.Itoa(i))
		} else {
			have = append(have, fmt.Sprintf("%d (%s)", i, byIndex[i].dir))
		}
	}
	if len(missing) > 0 {
		return nil, &InvalidInputError{Err: fmt.Errorf("shard %s of %d missing (given: %s): %w",
			strings.Join(missing, ", "), n, strings.Join(have, ", "), ErrShardsMismatch), Hint: hint}
	}
	return byIndex[1:], nil
}

// mergeShards merges the shards' report directories into out.
func mergeShards(ctx context.Context, w io.Writer, dirs []string, out string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var ds []*shardDir
	defer func() {
		for _, d := range ds {
			d.close()
		}
	}()
	for _, dir := range dirs {
		d, err := openShard(dir)
		if err != nil {
			return err
		}
		ds = append(ds, d)
	}
	shards, err := checkShards(ds)
	if err != nil {
		return err
	}
	for _, d := range shards {
		if same(d.dir, out) {
			return &InvalidInputError{Err: fmt.Errorf("--out %s is a shard's directory: the merge would overwrite it", out),
				Hint: "Try: --out merged/"}
		}
	}
	if err := checkOutputDir("--out", out); err != nil {
		return err
	}
	n := len(shards)
	h := shards[0].header
	h.Shard, h.MergedShards = nil, n

	// Everything is written to a staging directory inside out, moved into
	// out only once every shard was read whole: a bad shard leaves out as
	// it was.
	stage, err := os.MkdirTemp(out, ".merge-*")
	if err != nil {
		return outputError(out, err)
	}
	defer os.RemoveAll(stage)
	m, err := newMergeSink(stage, h)
	if err != nil {
		return err
	}
	defer m.abort()
	for _, d := range shards {
		if err := d.next(); err != nil {
			return err
		}
	}
	last := int64(-1)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		// The next run in the unsharded order: the least index at the
		// shards' heads (pair p is shard p mod N + 1's).
		var d *shardDir
		for _, s := range shards {
			if s.more && (d == nil || s.head.Index < d.head.Index) {
				d = s
			}
		}
		if d == nil {
			break
		}
		row := d.head
		if int(row.Index%uint64(n)) != d.header.Shard.Index-1 || int64(row.Index) <= last || row.Index >= h.TotalRuns {
			return &InvalidInputError{Err: fmt.Errorf("%s: run %d (%s, seed %d) is not shard %s's, or comes out of order: was summary.json edited?",
				filepath.Join(d.dir, "summary.json"), row.Index, masked(row.Scenario), row.Seed, d.header.Shard)}
		}
		last = int64(row.Index)
		if err := m.add(d, row); err != nil {
			return err
		}
		if err := d.next(); err != nil {
			return err
		}
	}
	counts, err := m.finish()
	if err != nil {
		return err
	}
	if err := publish(stage, out); err != nil {
		return err
	}
	fmt.Fprintf(w, "merged %d shards of %s × %s: %d of %d runs: %d passed, %d failed", n,
		plural2(h.Scenarios, "scenario", "scenarios"), h.SeedSpec, counts.Runs, h.TotalRuns, counts.Passed, counts.Failed)
	if counts.Errored > 0 {
		fmt.Fprintf(w, ", %d errored", counts.Errored)
	}
	if counts.Interrupted > 0 {
		fmt.Fprintf(w, ", %d interrupted (expectations not evaluated)", counts.Interrupted)
	}
	if counts.Inconclusive > 0 {
		fmt.Fprintf(w, ", %d inconclusive (a drill's harness fell behind its time scale)", counts.Inconclusive)
	}
	if counts.NotRun > 0 {
		fmt.Fprintf(w, "; %d not made (a shard was stopped, or runs could not start)", counts.NotRun)
	}
	fmt.Fprintf(w, "\nreports written to %s\n", masked(out))
	if err := m.closeStep(); err != nil {
		fmt.Fprintln(w, "faultline:", masked(err.Error()))
	}
	return mergedVerdictError(counts, h.TotalRuns)
}

// mergedVerdictError is report merge's error for the merged runs' counts:
// nil when every run passed; ErrChecksFailed when one failed or errored;
// ErrInterrupted (with ErrChecksFailed) when one was interrupted or not
// made; ErrInconclusive when one was inconclusive and none of the others
// happened (a failure wins over inconclusive).
func mergedVerdictError(counts reports.SummaryCounts, total uint64) error {
	switch counts.Verdict() {
	case reports.Passed:
		return nil
	case reports.Failed:
		return fmt.Errorf("%d of %d runs failed: %w", counts.Failed, counts.Runs, ErrChecksFailed)
	case reports.Errored:
		if counts.Errored == 0 { // a row's verdict this faultline does not know
			return fmt.Errorf("%d of %d runs neither passed nor failed as this faultline knows verdicts: %w", counts.Runs-counts.Passed, counts.Runs, ErrChecksFailed)
		}
		return fmt.Errorf("%d %s could not be carried out: %w", counts.Errored, plural(int(counts.Errored), "run", "runs"), ErrChecksFailed)
	case reports.Interrupted:
		return fmt.Errorf("%w: %d of %d runs made and finished: not a pass: %w", ErrInterrupted, counts.Passed, total, ErrChecksFailed)
	}
	return fmt.Errorf("%w: %d of %d runs could not be judged (a drill's harness fell behind its time scale): not a pass",
		ErrInconclusive, counts.Inconclusive, counts.Runs)
}

// publish moves the files of the staging directory stage into out.
func publish(stage, out string) error {
	entries, err := os.ReadDir(stage)
	if err != nil {
		return outputError(out, err)
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(stage, e.Name()), filepath.Join(out, e.Name())); err != nil {
			return outputError(filepath.Join(out, e.Name()), err)
		}
	}
	return nil
}

// same says whether a and b name one directory.
func same(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	if err1 == nil && err2 == nil {
		return os.SameFile(sa, sb)
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// mergeSink writes the merged reports one run at a time: summary.json
// streamed, junit.xml spooled to an unlinked temporary file until the
// totals are known, summary.md capped as MarkdownWriter caps it, and the
// failing runs' reports copied.
type mergeSink struct {
	dir     string
	sumPath string
	sumFile outputFile
	sum     *reports.SummaryWriter
	spool   *os.File
	junit   *reports.JUnitWriter
	md      *reports.MarkdownWriter
}

func newMergeSink(dir string, h reports.SummaryHeader) (*mergeSink, error) {
	m := &mergeSink{dir: dir, sumPath: filepath.Join(dir, "summary.json"), md: reports.NewMarkdownWriter()}
	spool, err := os.CreateTemp(dir, ".junit-*.spool")
	if err != nil {
		return nil, outputError(filepath.Join(dir, "junit.xml"), err)
	}
	_ = os.Remove(spool.Name()) // unlinked: gone with the process
	m.spool, m.junit = spool, reports.NewJUnitWriter(spool)
	f, err := openOutput(m.sumPath, createFlags, 0o666)
	if err != nil {
		m.abort()
		return nil, outputError(m.sumPath, err)
	}
	m.sumFile, m.sum = f, reports.NewSummaryWriter(f, h, h.TotalRuns)
	return m, nil
}

// add merges one run of shard d.
func (m *mergeSink) add(d *shardDir, row reports.SummaryRun) error {
	scenario, seed, err := d.junit.CopyNext(m.junit)
	if err != nil {
		return &InvalidInputError{Err: fmt.Errorf("%s: run %d (%s, seed %d): %w", filepath.Join(d.dir, "junit.xml"), row.Index, masked(row.Scenario), row.Seed, err)}
	}
	if scenario != row.Scenario || seed != strconv.FormatUint(row.Seed, 10) {
		return &InvalidInputError{Err: fmt.Errorf("%s: its suite %q (seed %s) is not summary.json's run %d (%s, seed %d): the files are of different runs",
			filepath.Join(d.dir, "junit.xml"), masked(scenario), seed, row.Index, masked(row.Scenario), row.Seed)}
	}
	r := row.Result()
	if row.Verdict != reports.Passed {
		if row.Report == "" || filepath.Base(row.Report) != row.Report {
			return &InvalidInputError{Err: fmt.Errorf("%s: run %d (%s, seed %d) failed but names no report beside it",
				filepath.Join(d.dir, "summary.json"), row.Index, masked(row.Scenario), row.Seed)}
		}
		path := filepath.Join(d.dir, row.Report)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return &InvalidInputError{Err: fmt.Errorf("shard %s (%s) lacks %s, the report of its run %d (%s, seed %d, %s), which its summary.json names: nothing was written to --out",
				d.header.Shard, d.dir, row.Report, row.Index, masked(row.Scenario), row.Seed, row.Verdict),
				Hint: "Try: copy each shard's whole report directory (its summary.json, junit.xml and every *.seed-N.json) before merging"}
		}
		if r, err = readReport(path); err != nil {
			return err
		}
		stem := strings.TrimSuffix(row.Report, ".json")
		for _, name := range []string{stem + ".json", stem + ".html"} {
			if err := copyReport(filepath.Join(d.dir, name), filepath.Join(m.dir, name)); err != nil {
				return err
			}
		}
	}
	if err := m.md.Add(r); err != nil {
		return err
	}
	if err := m.sum.Add(row); err != nil {
		return outputError(m.sumPath, err)
	}
	return nil
}

// copyReport copies a failing run's report file, if the shard has it.
func copyReport(src, dst string) error {
	f, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) && filepath.Ext(src) == ".html" {
		return nil // written only with --report html
	}
	if err != nil {
		return &InvalidInputError{Err: err}
	}
	defer f.Close()
	return writeFile(dst, func(w io.Writer) error {
		_, err := io.Copy(w, f)
		return err
	})
}

// finish writes junit.xml and summary.md and closes summary.json.
func (m *mergeSink) finish() (reports.SummaryCounts, error) {
	counts := m.sum.Counts()
	err := m.sum.Finish()
	if cerr := m.sumFile.Close(); err == nil {
		err = cerr
	}
	m.sumFile = nil
	if err != nil {
		return counts, outputError(m.sumPath, err)
	}
	if counts.NotRun > 0 {
		m.md.NotMade(counts.NotRun, counts.NotRun+counts.Runs)
	}
	if err := writeFile(filepath.Join(m.dir, "junit.xml"), m.junit.Finish); err != nil {
		return counts, err
	}
	return counts, writeFile(filepath.Join(m.dir, "summary.md"), m.md.Finish)
}

// closeStep appends the merged summary to GITHUB_STEP_SUMMARY, if set.
func (m *mergeSink) closeStep() error {
	if os.Getenv("GITHUB_STEP_SUMMARY") == "" {
		return nil
	}
	return appendStepSummary(m.md)
}

func (m *mergeSink) abort() {
	if m.spool != nil {
		_ = m.spool.Close()
		m.spool = nil
	}
	if m.sumFile != nil {
		_ = m.sumFile.Close()
		m.sumFile = nil
	}
}
