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
	group []*job
}

func (p *printer) add(j *job) {
	if !p.sweep {
		printRun(p.w, j)
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
	details(p.w, bad[0])
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

// printRun prints one run's verdict.
func printRun(w io.Writer, j *job) {
	name := j.t.loaded.Scenario.Name
	if j.err == nil && !j.res.Failed() {
		l := j.res.Ledger
		fmt.Fprintf(w, "PASS  %s  seed %d  %d jobs: %d succeeded, %d in the DLQ, %d pending, %d lost; %d %s; %d expectations held\n",
			name, j.seed, l.Created, l.Succeeded, l.DeadLettered, l.Queued+l.InFlight+l.Scheduled+l.Fallback, l.Lost,
			j.res.Alerts.Pages, plural(int(j.res.Alerts.Pages), "page", "pages"), len(j.res.Expectations))
		return
	}
	fmt.Fprintf(w, "FAIL  %s  seed %d\n", name, j.seed)
	details(w, j)
}

// details prints why a run failed and how to reproduce it.
func details(w io.Writer, j *job) {
	if j.err != nil {
		fmt.Fprintf(w, "  error: %v\n", j.err)
		fmt.Fprintf(w, "  reproduce: %s\n", j.reproduce())
		return
	}
	r := j.res
	if r.Verdict == reports.Errored {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	for _, v := range r.Violations {
		job := ""
		if v.JobID != "" {
			job = ", job " + v.JobID
		}
		fmt.Fprintf(w, "  ✗ invariant %s at +%s%s (seed %d): %s\n", v.Invariant, msDuration(v.AtMs), job, v.Seed, v.Message)
		if len(v.Trail) > 0 {
			fmt.Fprintln(w, "      trail:")
			for _, t := range v.Trail {
				fmt.Fprintf(w, "        %s\n", t)
			}
		}
	}
	for _, e := range r.Expectations {
		if e.Verdict != reports.Passed {
			fmt.Fprintf(w, "  ✗ %s: expected %s, got %s\n", e.Name, e.Expected, e.Actual)
		}
	}
	fmt.Fprintf(w, "  reproduce: %s\n", j.reproduce())
}

func msDuration(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}
