package reports

import (
	"bytes"
	"encoding/json"
	"html/template"
	"maps"
	"slices"
)

// htmlView is the report as the template reads it: the model plus what is
// computed for the page (the chart's geometry, sorted maps, capped lists).
type htmlView struct {
	R   *Result
	CSS template.CSS
	JS  template.JS
	CSP string

	Verdict  htmlVerdict
	Failed   []Expectation
	Held     int
	Skipped  int
	Vios     []Violation
	ViosMore int
	// Invariants says what became of each invariant.
	Invariants []InvariantResult
	// Unseen is what a black-box drill could not observe from outside,
	// with why; UnseenExp how many of them are expectations; InvTally the
	// invariants by verdict, set when any is not observable.
	Unseen    []unobserved
	UnseenExp int
	InvTally  string
	// External describes a black-box drill's system under test.
	External []externalFact

	Timeline    *htmlTimeline
	Confusion   htmlConfusion
	Fates       htmlFates
	DLQ         htmlDLQ
	Alerts      htmlAlerts
	Trans       []Transition
	TransMore   int
	Faults      []Fault
	Steps       []Step
	StepsMore   int
	Config      string
	ConfigLines int
}

// htmlKV is one entry of a count map, for a table in a stable order.
type htmlKV struct {
	K string
	V int64
}

func newHTMLView(r *Result) *htmlView {
	v := &htmlView{R: r}
	for _, e := range r.Expectations {
		switch e.Verdict {
		case Passed:
			v.Held++
		case Skipped:
			v.Skipped++
		case NotObservable:
			v.UnseenExp++
		default:
			v.Failed = append(v.Failed, e)
		}
	}
	v.Invariants = r.InvariantResults()
	v.Unseen = notObservable(r)
	if len(v.Unseen) > v.UnseenExp {
		v.InvTally = invariantTally(r)
	}
	if r.Live != nil && r.Live.External != nil {
		v.External = externalFacts(r.Live.External, r.Ledger.Lost)
	}
	v.Vios, v.ViosMore = htmlCapped(r.Violations, htmlMaxViolations)
	v.Verdict = newHTMLVerdict(r, len(v.Failed))
	v.Timeline = newHTMLTimeline(r)
	v.Confusion = newHTMLConfusion(r.Confusion)
	v.Fates = newHTMLFates(r)
	v.DLQ = newHTMLDLQ(r.DLQ)
	v.Alerts = newHTMLAlerts(r.Alerts)
	v.Trans, v.TransMore = htmlCapped(r.Breakers, htmlMaxRows)
	v.Faults = r.Faults
	v.Steps, v.StepsMore = htmlCapped(r.Steps, htmlMaxRows)
	if len(r.Config) > 0 {
		if b, err := json.MarshalIndent(r.Config, "", "  "); err == nil {
			v.Config, v.ConfigLines = string(b), bytes.Count(b, []byte("\n"))+1
		}
	}
	return v
}

// htmlCapped returns the first n of s and how many it left out.
func htmlCapped[T any](s []T, n int) ([]T, int) {
	if len(s) <= n {
		return s, 0
	}
	return s[:n], len(s) - n
}

// classOrder is the order of failure classes in tables; others follow,
// sorted.
var htmlClassOrder = []string{"transient", "indeterminate", "permanent", "critical"}

// severityOrder is the order of severities, worst first.
var htmlSeverityOrder = []string{"high", "medium", "low"}

// routeOrder is the order of routes in the confusion matrix.
var htmlRouteOrder = []string{"retry", "dead-letter", "fallback"}

// htmlOrdered returns keys in the order of first, then the rest sorted.
func htmlOrdered(keys []string, first []string) []string {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		seen[k] = true
	}
	var out []string
	for _, k := range first {
		if seen[k] {
			out = append(out, k)
			delete(seen, k)
		}
	}
	return append(out, slices.Sorted(maps.Keys(seen))...)
}

// htmlSortedKV returns m's entries, keys in the order of first, then sorted.
func htmlSortedKV[V int | int64](m map[string]V, first []string) []htmlKV {
	var out []htmlKV
	for _, k := range htmlOrdered(slices.Collect(maps.Keys(m)), first) {
		out = append(out, htmlKV{k, int64(m[k])})
	}
	return out
}
