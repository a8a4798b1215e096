package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/faultline/faultline/reports"
)

// printer writes the verdicts: one block per run, or, for a seed sweep,
// one block per scenario with the first failing seed in detail. A sweep's
// group keeps no result: what its block shows of a run is taken when the
// run comes (its seed, the first failing run's details, the next failing
// seeds' verdicts), so that the results can be let go of at once.
type printer struct {
	w     io.Writer
	sweep bool
	color bool
	group *sweepGroup
}

// sweepGroup is what a sweep's block needs of one scenario's runs.
type sweepGroup struct {
	t           *target
	first, last uint64
	runs        int
	// bad lists the first failing seeds; nBad counts them all.
	bad    []uint64
	nBad   int
	detail bytes.Buffer // the first failing run's details
	more   []string     // "seed N: verdict" of the next failing runs
}

func (p *printer) add(j *job) {
	if !p.sweep {
		printRun(p.w, j, p.color)
		return
	}
	if p.group != nil && p.group.t != j.t {
		p.flush()
	}
	if p.group == nil {
		p.group = &sweepGroup{t: j.t, first: j.seed}
	}
	g := p.group
	g.last = j.seed
	g.runs++
	if j.err == nil && !j.res.Failed() {
		return
	}
	g.nBad++
	if len(g.bad) < 20 {
		g.bad = append(g.bad, j.seed)
	}
	switch {
	case g.nBad == 1:
		details(&g.detail, j, p.color)
	case len(g.more) < 9:
		g.more = append(g.more, fmt.Sprintf("  seed %d: %s\n", j.seed, failure(j)))
	}
}

// flush prints the pending sweep group.
func (p *printer) flush() {
	g := p.group
	if g == nil {
		return
	}
	p.group = nil
	name := masked(g.t.loaded.Scenario.Name)
	seeds := fmt.Sprintf("seeds %d..%d", g.first, g.last)
	if g.nBad == 0 {
		fmt.Fprintf(p.w, "PASS  %s  %s: %d runs\n", name, seeds, g.runs)
		if c := claim(g.t.loaded.Scenario.Description); c != "" {
			fmt.Fprintf(p.w, "  proved: %s\n", c)
		}
		return
	}
	list := make([]string, 0, len(g.bad)+1)
	for _, seed := range g.bad {
		list = append(list, fmt.Sprint(seed))
	}
	if g.nBad > len(g.bad) {
		list = append(list, fmt.Sprintf("… %d more", g.nBad-len(g.bad)))
	}
	fmt.Fprintf(p.w, "FAIL  %s  %s: %d of %d runs failed (seeds %s)\n", name, seeds, g.nBad, g.runs, strings.Join(list, ", "))
	_, _ = g.detail.WriteTo(p.w)
	for _, m := range g.more {
		io.WriteString(p.w, m)
	}
	if g.nBad > 1+len(g.more) {
		fmt.Fprintf(p.w, "  … and %d more failing seeds\n", g.nBad-1-len(g.more))
	}
}

func failure(j *job) string {
	if j.err != nil {
		return "error: " + masked(j.err.Error())
	}
	return j.res.Verdict.String()
}

// printRun prints one run's verdict: the text report (reports.WriteText).
func printRun(w io.Writer, j *job, color bool) {
	if j.err != nil {
		fmt.Fprintf(w, "ERROR  %s  seed %d\n", masked(j.t.loaded.Scenario.Name), j.seed)
	}
	details(w, j, color)
}

// details prints the run's text report, with, under its totals, what the
// scenario claims to prove and how the jobs add up; for a failure, why it
// failed and how to reproduce it.
func details(w io.Writer, j *job, color bool) {
	if j.err != nil {
		fmt.Fprintf(w, "  error: %s\n", masked(j.err.Error()))
		fmt.Fprintf(w, "  reproduce: %s\n", masked(j.reproduce()))
		return
	}
	if err := writeReportText(w, j.res, color); err != nil {
		fmt.Fprintf(w, "  (the report could not be written: %s)\n", masked(err.Error()))
	}
}

// writeReportText writes a result's text report, with, under its totals,
// what the scenario claims to prove and how the jobs add up: for a run
// and for a drill alike.
func writeReportText(w io.Writer, res *reports.Result, color bool) error {
	var buf bytes.Buffer
	if err := reports.WriteText(&buf, res, reports.TextOptions{Color: color}); err != nil {
		return err
	}
	// The verdict line and the totals line come first; ours follow them.
	text := buf.String()
	cut := 0
	for range 2 {
		i := strings.IndexByte(text[cut:], '\n')
		if i < 0 {
			cut = len(text)
			break
		}
		cut += i + 1
	}
	io.WriteString(w, text[:cut])
	if c := claim(res.Description); c != "" {
		word := "proved"
		if res.Failed() {
			word = "not proved"
		}
		fmt.Fprintf(w, "  %s: %s\n", word, c)
	}
	fmt.Fprintf(w, "  %s\n", conservation(res.Ledger))
	io.WriteString(w, text[cut:])
	return nil
}

// claim is a scenario's description as the one-line claim it proves,
// secrets masked.
func claim(description string) string { return oneLine(masked(description)) }

// conservation says where every created job is, as a sum that adds up to
// the jobs created: "1200 created = 900 succeeded + 100 in the DLQ + 200
// removed from the DLQ". Succeeded and the DLQ are always named; the other
// places only when they hold jobs. A sum that does not add up says by how
// much.
func conservation(l reports.Ledger) string {
	terms := []struct {
		n    int64
		name string
		show bool
	}{
		{l.Succeeded, "succeeded", true},
		{l.DeadLettered, "in the DLQ", true},
		{l.Removed, removedFromDLQ(l), false},
		{l.Queued, "queued", false},
		{l.InFlight, "in flight", false},
		{l.Scheduled, "scheduled for a retry", false},
		{l.Fallback, "in the fallback queue", false},
		{l.HeldAtEnd, "held for room in the DLQ", false},
	}
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		if t.show || t.n != 0 {
			parts = append(parts, fmt.Sprintf("%d %s", t.n, t.name))
		}
	}
	s := fmt.Sprintf("accounted for: %d created = %s", l.Created, strings.Join(parts, " + "))
	if n := l.Unaccounted(); n != 0 {
		s += fmt.Sprintf("  ✗ %d not accounted for", n)
	}
	return s
}

func msDuration(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

// removedFromDLQ names the jobs whose DLQ entry is gone: evicted from a full
// DLQ, purged by an operator, or both.
func removedFromDLQ(l reports.Ledger) string {
	switch {
	case l.Purged == 0:
		return "evicted from the full DLQ"
	case l.Evicted == 0:
		return "purged from the DLQ"
	}
	return "removed from the DLQ (evicted or purged)"
}
