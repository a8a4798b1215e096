package reports

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

type htmlVerdict struct {
	Class, Label, Symbol, Headline string
}

func newHTMLVerdict(r *Result, failed int) htmlVerdict {
	var v htmlVerdict
	switch r.Verdict {
	case Passed:
		v = htmlVerdict{Class: "passed", Label: "PASSED", Symbol: "✔"}
	case Failed:
		v = htmlVerdict{Class: "failed", Label: "FAILED", Symbol: "✘"}
	case Errored:
		v = htmlVerdict{Class: "errored", Label: "ERRORED", Symbol: "⚠"}
	case Interrupted:
		v = htmlVerdict{Class: "errored", Label: "INTERRUPTED", Symbol: "⏹"}
	case Inconclusive:
		v = htmlVerdict{Class: "errored", Label: "INCONCLUSIVE", Symbol: "⏱"}
	default:
		v = htmlVerdict{Class: "errored", Label: strings.ToUpper(string(r.Verdict)), Symbol: "?"}
		if v.Label == "" {
			v.Label = "NO VERDICT"
		}
	}
	var parts []string
	if n := len(r.Expectations); n > 0 {
		if r.Verdict == Interrupted || r.Verdict == Errored {
			parts = append(parts, fmt.Sprintf("%d %s not evaluated", n, plural(n, "expectation", "expectations")))
		} else if unseen := len(expectationsWith(r, NotObservable)); unseen == n {
			parts = append(parts, fmt.Sprintf("no expectation was observable (%d)", n))
		} else if failed > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d expectations failed", failed, n-unseen))
		} else {
			parts = append(parts, fmt.Sprintf("all %d expectations held", n-unseen))
		}
	}
	if r.Verdict == Inconclusive {
		parts = append([]string{"neither a pass nor a fail: the drill's harness could not keep pace with its time scale"}, parts...)
	}
	var broken, violations int64
	for _, inv := range r.InvariantResults() {
		if inv.Verdict == Failed {
			broken++
			violations += inv.Violations
		}
	}
	switch broken {
	case 0:
		parts = append(parts, "no invariant was violated")
	case 1:
		parts = append(parts, fmt.Sprintf("1 invariant was violated (%d %s)", violations, plural(int(violations), "time", "times")))
	default:
		parts = append(parts, fmt.Sprintf("%d invariants were violated (%d times in all)", broken, violations))
	}
	if n := len(notObservable(r)); n > 0 {
		where := ""
		if r.Live != nil && r.Live.External != nil {
			where = " from outside"
		}
		parts = append(parts, fmt.Sprintf("%d not observable%s", n, where))
	}
	v.Headline = strings.Join(parts, "; ")
	if r.EndedAtMs < r.DurationMs {
		v.Headline += fmt.Sprintf("; the run stopped at %s of %s", htmlOffset(r.EndedAtMs), htmlOffset(r.DurationMs))
	}
	return v
}

// htmlConfusion is the confusion matrix: true classes as rows, what the
// classifier said and the route taken as columns.
type htmlConfusion struct {
	Said, Routes []string
	Rows         []htmlConfusionRow
}

type htmlConfusionRow struct {
	True   string
	Total  int64
	Said   []htmlCell
	Routes []htmlCell
}

// htmlCell is one count of the matrix with its mark: "hit" on the diagonal,
// "miss" off it, "bad" for a final failure that was retried.
type htmlCell struct {
	N    int64
	Mark string
}

func newHTMLConfusion(rows []Confusion) htmlConfusion {
	var said, routes []string
	for _, c := range rows {
		said = append(said, slices.Collect(maps.Keys(c.Said))...)
		said = append(said, c.True)
		routes = append(routes, slices.Collect(maps.Keys(c.Routes))...)
	}
	v := htmlConfusion{Said: htmlOrdered(said, htmlClassOrder), Routes: htmlOrdered(routes, htmlRouteOrder)}
	for _, c := range rows {
		row := htmlConfusionRow{True: c.True, Total: c.Total}
		for _, s := range v.Said {
			n := c.Said[s]
			mark := ""
			switch {
			case s == c.True:
				mark = "hit"
			case n > 0:
				mark = "miss"
			}
			row.Said = append(row.Said, htmlCell{n, mark})
		}
		for _, rt := range v.Routes {
			n := c.Routes[rt]
			mark := ""
			if n > 0 && rt == "retry" && (c.True == "critical" || c.True == "permanent") {
				mark = "bad"
			}
			row.Routes = append(row.Routes, htmlCell{n, mark})
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// htmlFates is where the jobs ended, with a bar for each disposition, what
// happened on the way, the split by task and sample jobs.
type htmlFates struct {
	Created int64
	Ends    []htmlFateRow
	Moves   []htmlFateRow
	Sample  []JobFate
	More    int
}

type htmlFateRow struct {
	Label, Note string
	N           int64
	Pct         string
	Bar         float64
	Bad         bool
}

func newHTMLFates(r *Result) htmlFates {
	l := r.Ledger
	v := htmlFates{Created: l.Created}
	end := func(label, note string, n int64, bad bool) {
		row := htmlFateRow{Label: label, Note: note, N: n, Bad: bad}
		if l.Created > 0 {
			f := float64(n) / float64(l.Created)
			row.Pct = strconv.FormatFloat(100*f, 'f', 1, 64) + " %"
			row.Bar = math.Round(1000*f) / 10
		}
		v.Ends = append(v.Ends, row)
	}
	end("succeeded", "completed", l.Succeeded, false)
	end("dead-lettered", "in the DLQ at the end", l.DeadLettered, false)
	end("fallback", "in the batch queue at the end", l.Fallback, false)
	if l.HeldAtEnd > 0 {
		end("held", "dead letters decided, waiting for room in the DLQ", l.HeldAtEnd, false)
	}
	end("queued", "waiting for a worker", l.Queued, false)
	end("in flight", "leased by a worker", l.InFlight, false)
	end("scheduled", "waiting to retry", l.Scheduled, false)
	end("removed", "evicted or purged from the DLQ", l.Removed, false)
	end("lost", "not accounted for by the store", l.Lost, l.Lost > 0)
	move := func(label, note string, n int64) {
		v.Moves = append(v.Moves, htmlFateRow{Label: label, Note: note, N: n})
	}
	move("attempts", "calls of a handler", l.Attempts)
	move("retries", "failures scheduled to run again", l.Retries)
	move("dead letters", "moves into the DLQ", l.DeadLetters)
	move("requeues", "moves out of the DLQ, back to a queue", l.Requeues)
	move("diversions", "jobs sent to the batch queue by an open breaker", l.Diversions)
	move("drained", "jobs run from the batch queue", l.Drained)
	move("released", "leases given back unrun", l.Released)
	move("lease expiries", "leases that ran out (a crashed or stalled worker)", l.LeaseExpiries)
	move("fenced", "late answers refused because the lease was lost", l.Fenced)
	move("evicted", "DLQ entries pushed out of a full DLQ", l.Evicted)
	move("purged", "DLQ entries purged", l.Purged)
	move("held", fmt.Sprintf("dead letters held while the DLQ was away or full, then written (longest %s)", htmlOffset(l.HeldMaxMs)), l.Held)
	move("kept", "dead letters the held set had no room for, kept by the worker with their leases alive", l.Kept)
	move("refused", fmt.Sprintf("jobs whose dead letters a full DLQ refused (%d refusals in all); held, never run again", l.RefusedTimes), l.Refused)
	move("budget delayed", "retries the retry budget pushed later", l.BudgetDelayed)
	move("budget exceeded", "retries over the budget after the longest wait", l.BudgetExceeded)
	move("charges", "calls that charged a payment", l.Charges)
	v.Sample, v.More = htmlCapped(r.Fates, htmlMaxRows)
	return v
}

type htmlDLQ struct {
	ByStatus, BySeverity []htmlKV
	Entries              []DLQEntry
	More                 int
}

func newHTMLDLQ(d DLQ) htmlDLQ {
	v := htmlDLQ{
		ByStatus:   htmlSortedKV(d.ByStatus, []string{"failed", "quarantined", "requeued", "deleted"}),
		BySeverity: htmlSortedKV(d.BySeverity, htmlSeverityOrder),
	}
	v.Entries, v.More = htmlCapped(d.Entries, htmlMaxRows)
	return v
}

type htmlAlerts struct {
	Counts     []htmlKV
	ByReceiver []htmlKV
	Pages      []htmlKV
	Deliveries []htmlDelivery
	More       int
}

type htmlDelivery struct {
	Delivery
	Page bool
}

func newHTMLAlerts(a Alerts) htmlAlerts {
	v := htmlAlerts{
		Counts: []htmlKV{
			{"notifications", a.Notifications}, {"pages", a.Pages}, {"rejected sends", a.Rejected},
			{"raised", a.Raised}, {"deduplicated", a.Deduplicated}, {"inhibited", a.Inhibited},
			{"redelivered", a.Redelivered}, {"repeats", a.Repeats}, {"resolved", a.Resolved},
		},
		ByReceiver: htmlSortedKV(a.ByReceiver, nil),
		Pages:      htmlSortedKV(a.PagesByFingerprint, nil),
	}
	ds, more := htmlCapped(a.Deliveries, htmlMaxRows)
	for _, d := range ds {
		v.Deliveries = append(v.Deliveries, htmlDelivery{d, d.IsPage()})
	}
	v.More = more
	return v
}
