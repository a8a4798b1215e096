package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
)

// maxSeeds is the most seeds one call of faultline run sweeps; with
// --shard I/N the cap is on a shard's share (the range may hold N times
// as many), so that a sharded sweep is bounded by the machines, not by
// one call.
const maxSeeds = 1_000_000

// parseShard parses --shard "I/N": the I-th of N shards, 1-based.
func parseShard(s string) (reports.Shard, error) {
	bad := fmt.Errorf("--shard: expected I/N with 1 ≤ I ≤ N, 1-based (the first of four is 1/4), got %q", s)
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return reports.Shard{}, bad
	}
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		if err1 == nil && err2 == nil && i == 0 && n >= 1 {
			return reports.Shard{}, fmt.Errorf("%w (a 0-based index, such as Kubernetes' JOB_COMPLETION_INDEX, needs 1 added: --shard $((JOB_COMPLETION_INDEX+1))/%d)", bad, n)
		}
		return reports.Shard{}, bad
	}
	return reports.Shard{Index: i, Count: n}, nil
}

// pairPlan is the flattened (scenario, seed) pairs of a run: pair p is
// scenario p / perTarget with its (p mod perTarget)-th seed, scenarios
// first as an unsharded run makes them.
type pairPlan struct {
	targets   []target
	perTarget uint64
	seedOf    func(t *target, k uint64) uint64
}

// total is the number of pairs.
func (pp pairPlan) total() uint64 { return uint64(len(pp.targets)) * pp.perTarget }

// jobs are the shard's jobs: the pairs p with p mod N = I-1, in order.
// The assignment depends on nothing but the pairs' order, so every
// machine computes the same one, and shard sizes differ by one at most.
func (pp pairPlan) jobs(sh reports.Shard) []*job {
	var out []*job
	for p := uint64(sh.Index - 1); p < pp.total(); p += uint64(sh.Count) {
		t := &pp.targets[p/pp.perTarget]
		out = append(out, &job{t: t, seed: pp.seedOf(t, p%pp.perTarget), index: p})
	}
	return out
}

// share is how many pairs a shard runs.
func share(total uint64, sh reports.Shard) uint64 {
	if uint64(sh.Index) > total {
		return 0
	}
	return (total-uint64(sh.Index))/uint64(sh.Count) + 1
}

// scenarioSetHash identifies the scenarios of a run: "sha256:…" of their
// content hashes (each effective document: includes merged, defaults
// filled in), in order. Paths are left out, so shards given the same
// files under different checkouts agree.
func scenarioSetHash(targets []target) string {
	h := sha256.New()
	_, _ = io.WriteString(h, "faultline scenario set\n")
	for _, t := range targets {
		_, _ = io.WriteString(h, t.loaded.Hash+"\n")
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// seedSpecHash is "sha256:…" of the seed spec.
func seedSpecHash(spec string) string {
	sum := sha256.Sum256([]byte("faultline seed spec\n" + spec))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// shardHeader is the header of a shard's summary.json.
func shardHeader(sh reports.Shard, pp pairPlan, seedSpec string) reports.SummaryHeader {
	return reports.SummaryHeader{ToolVersion: Version(), Shard: &sh, ScenarioSetHash: scenarioSetHash(pp.targets),
		Scenarios: len(pp.targets), SeedSpec: seedSpec, SeedSpecHash: seedSpecHash(seedSpec), TotalRuns: pp.total()}
}

// shardSink writes what a shard adds to the reports runSink writes: every
// failing run's JSON (and HTML, if asked) report, and summary.json in its
// sharded form (reports.SummaryWriter), one row a run, so that report
// merge can put the shards together. Nothing of a run is kept.
type shardSink struct {
	dir  string
	html bool
	path string
	file outputFile
	sw   *reports.SummaryWriter
	err  error
}

// newShardSink opens dir/summary.json and writes h.
func newShardSink(dir string, h reports.SummaryHeader, share uint64, html bool) (*shardSink, error) {
	s := &shardSink{dir: dir, html: html, path: filepath.Join(dir, "summary.json")}
	f, err := openOutput(s.path, createFlags, 0o666)
	if err != nil {
		return nil, outputError(s.path, err)
	}
	s.file, s.sw = f, reports.NewSummaryWriter(f, h, share)
	return s, nil
}

// add writes j's row and, when it failed, its reports. The first error is
// kept and returned by close.
func (s *shardSink) add(j *job) {
	if s.err != nil || !j.done() || j.res == nil {
		return
	}
	r := j.res
	row := reports.SummaryRunOf(r, j.index)
	row.Scenario = masked(r.Scenario)
	row.Warnings = nil
	for _, w := range r.Warnings {
		row.Warnings = append(row.Warnings, masked(w))
	}
	if r.Failed() {
		row.Failure = masked(scenarios.Signature(r))
		stem := fmt.Sprintf("%s.seed-%d", j.stem(), r.Seed)
		formats := []string{"json"}
		if s.html {
			formats = append(formats, "html")
		}
		for _, format := range formats {
			if err := writeFile(filepath.Join(s.dir, stem+"."+format), func(w io.Writer) error {
				return writeFormat(w, format, []*reports.Result{r}, false)
			}); err != nil {
				s.err = err
				return
			}
		}
		row.Report = stem + ".json"
	}
	if err := s.sw.Add(row); err != nil {
		s.err = outputError(s.path, err)
	}
}

// close finishes summary.json.
func (s *shardSink) close() error {
	if s.file == nil {
		return s.err
	}
	err := s.err
	if err == nil {
		if err = s.sw.Finish(); err != nil {
			err = outputError(s.path, err)
		}
	}
	if cerr := s.file.Close(); err == nil && cerr != nil {
		err = outputError(s.path, cerr) // a write lost on close
	}
	s.file = nil
	return err
}

// plural2 is "n scenario(s)".
func plural2(n int, one, many string) string { return fmt.Sprintf("%d %s", n, plural(n, one, many)) }
