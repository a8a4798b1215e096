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
// one block per scenario with the first failing seed in detail.
type printer struct {
	w     io.Writer
	sweep bool
	color bool
	group []*job
}

func (p *printer) add(j *job) {
	if !p.sweep {
		printRun(p.w, j, p.color)
		return
	}
	if len(p.group) > 0 && p.group[0].t != j.t {
		p.flush()
	}
	p.group = append(p.group, j)
}

// flush prints the pending sweep group.
func (p *printer) flush() {
	if len(p.group) == 0 {
		return
	}
	g := p.group
	p.group = nil
	var bad []*job
	for _, j := range g {
		if j.err != nil || j.res.Failed() {
			bad = append(bad, j)
		}
	}
	name := g[0].t.loaded.Scenario.Name
	seeds := fmt.Sprintf("seeds %d..%d", g[0].seed, g[len(g)-1].seed)
	if len(bad) == 0 {
		fmt.Fprintf(p.w, "PASS  %s  %s: %d runs\n", name, seeds, len(g))
		if c := claim(g[0].t.loaded.Scenario.Description); c != "" {
			fmt.Fprintf(p.w, "  proved: %s\n", c)
		}
		return
	}
	list := make([]string, 0, min(len(bad), 20))
	for i, j := range bad {
		if i == 20 {
			list = append(list, fmt.Sprintf("… %d more", len(bad)-20))
			break
		}
		list = append(list, fmt.Sprint(j.seed))
	}
	fmt.Fprintf(p.w, "FAIL  %s  %s: %d of %d runs failed (seeds %s)\n", name, seeds, len(bad), len(g), strings.Join(list, ", "))
	details(p.w, bad[0], p.color)
	for i, j := range bad[1:] {
		if i == 9 {
			fmt.Fprintf(p.w, "  … and %d more failing seeds\n", len(bad)-10)
			break
		}
		fmt.Fprintf(p.w, "  seed %d: %s\n", j.seed, failure(j))
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
		fmt.Fprintf(w, "ERROR  %s  seed %d\n", j.t.loaded.Scenario.Name, j.seed)
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
	var buf bytes.Buffer
	if err := reports.WriteText(&buf, j.res, reports.TextOptions{Color: color}); err != nil {
		fmt.Fprintf(w, "  (the report could not be written: %s)\n", masked(err.Error()))
		return
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
	if c := claim(j.res.Description); c != "" {
		word := "proved"
		if j.res.Failed() {
			word = "not proved"
		}
		fmt.Fprintf(w, "  %s: %s\n", word, c)
	}
	fmt.Fprintf(w, "  %s\n", conservation(j.res.Ledger))
	io.WriteString(w, text[cut:])
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
	}
	var sum int64
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		sum += t.n
		if t.show || t.n != 0 {
			parts = append(parts, fmt.Sprintf("%d %s", t.n, t.name))
		}
	}
	s := fmt.Sprintf("accounted for: %d created = %s", l.Created, strings.Join(parts, " + "))
	if sum != l.Created {
		s += fmt.Sprintf("  ✗ %d not accounted for", l.Created-sum)
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
