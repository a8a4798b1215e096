package cli

import (
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
		return "error: " + j.err.Error()
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

// details prints why a run failed and how to reproduce it.
func details(w io.Writer, j *job, color bool) {
	if j.err != nil {
		fmt.Fprintf(w, "  error: %v\n", j.err)
		fmt.Fprintf(w, "  reproduce: %s\n", j.reproduce())
		return
	}
	if err := reports.WriteText(w, j.res, reports.TextOptions{Color: color}); err != nil {
		fmt.Fprintf(w, "  (the report could not be written: %v)\n", err)
	}
}

func msDuration(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}
