package simmatchers

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reports"
)

// ErrNilResult is the error of every matcher given a nil *reports.Result:
// sim.Run returned an error instead of a result.
var ErrNilResult = errors.New("simmatchers: the result is nil (check the error sim.Run returned)")

// maxListed bounds the deliveries, DLQ entries and transitions a failure
// message lists.
const maxListed = 10

// Job states and alert fields as the report spells them.
var (
	stateDeadLettered = disposition.DeadLettered.String()
	stateSucceeded    = disposition.Succeeded.String()
	severityHigh      = classify.High.String()
	statusFiring      = alert.Firing.String()
	deadStatuses      = []string{dlq.Failed.String(), dlq.Quarantined.String(), dlq.Deleted.String()}
)

// run holds what every failure message says of a run; the templates call
// its methods with the actual result.
type run struct{}

// Run names the run: `scenario "payments" (seed 1)`.
func (run) Run(r *reports.Result) string {
	return fmt.Sprintf("scenario %q (seed %d)", r.Scenario, r.Seed)
}

// at formats a virtual offset in milliseconds: "+3m0.05s".
func at(ms int64) string { return "+" + (time.Duration(ms) * time.Millisecond).String() }

// violation describes v on one line, its trail on the following ones.
func violation(v reports.Violation, trail bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "invariant %s violated at %s", v.Invariant, at(v.AtMs))
	if v.JobID != "" {
		fmt.Fprintf(&b, " by job %s", v.JobID)
	}
	b.WriteString(": " + v.Message)
	if trail {
		for _, t := range v.Trail {
			b.WriteString("\n      " + t)
		}
	}
	return b.String()
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func checkNil(r *reports.Result) error {
	if r == nil {
		return ErrNilResult
	}
	return nil
}

// Pass succeeds when the run's verdict is passed: every expectation held
// and no invariant was violated. Its failure lists the failed expectations
// with what was expected and what happened, and each violated invariant's
// first violation with the job's trail and how many more there were (or
// the error of a run that errored or was interrupted, whose expectations
// were not evaluated).
func Pass() types.GomegaMatcher {
	return gcustom.MakeMatcher(func(r *reports.Result) (bool, error) {
		if err := checkNil(r); err != nil {
			return false, err
		}
		return r.Verdict == reports.Passed, nil
	}).WithTemplate(`{{if .Failure -}}
Expected {{.Data.Run .Actual}} to pass, but its verdict is {{.Actual.Verdict}}:
{{- range .Data.Problems .Actual}}
  {{.}}
{{- end}}
{{- else -}}
Expected {{.Data.Run .Actual}} not to pass, but it passed: {{.Data.Held .Actual}} and no invariant was violated
{{- end}}`, passData{})
}

type passData struct{ run }

// Held counts the expectations that held.
func (passData) Held(r *reports.Result) string {
	return plural(int64(len(r.Expectations)), "expectation held", "expectations held")
}

// Problems lists why r did not pass, one item per failed expectation or
// violation.
func (passData) Problems(r *reports.Result) []string {
	var out []string
	switch {
	case r.Verdict == reports.Interrupted:
		out = append(out, "the run was interrupted: "+r.Error)
	case r.Error != "":
		out = append(out, "the run errored: "+r.Error)
	}
	skipped := int64(0)
	for _, e := range r.Expectations {
		switch e.Verdict {
		case reports.Passed, reports.NotObservable: // a black-box drill's: listed, not failed
		case reports.Skipped:
			skipped++
		default:
			out = append(out, fmt.Sprintf("expectation failed: %s: expected %s, got %s", e.Name, e.Expected, e.Actual))
		}
	}
	if skipped > 0 {
		out = append(out, plural(skipped, "expectation", "expectations")+" not evaluated: the run did not reach its end")
	}
	for _, inv := range r.InvariantResults() {
		first := true
		for _, v := range r.Violations {
			if v.Invariant == inv.Name && first {
				out = append(out, violation(v, true))
				first = false
			}
		}
		if inv.Violations > 1 {
			out = append(out, fmt.Sprintf("and %s of %s", plural(inv.Violations-1, "more violation", "more violations"), inv.Name))
		}
	}
	if len(out) == 0 {
		out = append(out, "the report records no failed expectation, violation or error")
	}
	return out
}

// LoseNoJob succeeds when every job the run created is accounted for: the
// ledger's buckets (queued, in flight, scheduled, in fallback,
// dead-lettered, succeeded, removed) add up to the jobs created, and no
// conservation invariant was violated.
func LoseNoJob() types.GomegaMatcher {
	return gcustom.MakeMatcher(func(r *reports.Result) (bool, error) {
		if err := checkNil(r); err != nil {
			return false, err
		}
		return ledgerSum(&r.Ledger) == r.Ledger.Created && conservation(r) == nil, nil
	}).WithTemplate(`{{if .Failure -}}
Expected {{.Data.Run .Actual}} to lose no job, but {{.Data.Losses .Actual}}
{{- else -}}
Expected {{.Data.Run .Actual}} to lose a job, but all {{.Actual.Ledger.Created}} created jobs are accounted for: {{.Data.Buckets .Actual}}
{{- end}}`, loseData{})
}

type loseData struct{ run }

func ledgerSum(l *reports.Ledger) int64 {
	return l.Queued + l.InFlight + l.Scheduled + l.Fallback + l.DeadLettered + l.Succeeded + l.Removed
}

func conservation(r *reports.Result) *reports.Violation {
	for i := range r.Violations {
		if r.Violations[i].Invariant == oracle.InvConservation {
			return &r.Violations[i]
		}
	}
	return nil
}

// Buckets spells out the ledger's sum.
func (loseData) Buckets(r *reports.Result) string {
	l := &r.Ledger
	return fmt.Sprintf("queued %d + in flight %d + scheduled %d + in fallback %d + dead-lettered %d + succeeded %d + removed %d = %d",
		l.Queued, l.InFlight, l.Scheduled, l.Fallback, l.DeadLettered, l.Succeeded, l.Removed, ledgerSum(l))
}

// Losses says how r lost jobs.
func (d loseData) Losses(r *reports.Result) string {
	var why []string
	if sum := ledgerSum(&r.Ledger); sum != r.Ledger.Created {
		why = append(why, fmt.Sprintf("its ledger accounts for %d of its %d created jobs (%s)", sum, r.Ledger.Created, d.Buckets(r)))
	}
	if v := conservation(r); v != nil {
		why = append(why, violation(*v, true))
	}
	return strings.Join(why, ", and ")
}

// where is what the report says of one job: its fate, else its DLQ entry.
type where struct {
	fate  *reports.JobFate
	entry *reports.DLQEntry
}

func find(r *reports.Result, id string) where {
	var w where
	for i := range r.Fates {
		if r.Fates[i].JobID == id {
			w.fate = &r.Fates[i]
			return w
		}
	}
	for i := range r.DLQ.Entries {
		if r.DLQ.Entries[i].JobID == id {
			w.entry = &r.DLQ.Entries[i]
			return w
		}
	}
	return w
}

// describe says where the job is, for a failure message.
func (w where) describe(r *reports.Result) string {
	switch {
	case w.fate != nil:
		f := w.fate
		s := fmt.Sprintf("it ended %s (last move %s)", f.State, f.LastMove)
		if f.Severity != "" {
			s += fmt.Sprintf(" with severity %s, class %s", f.Severity, f.Class)
		}
		return s
	case w.entry != nil:
		e := w.entry
		s := fmt.Sprintf("its DLQ entry is %s with severity %s, class %s", e.Status, e.Severity, e.Class)
		if e.Rule != "" {
			s += fmt.Sprintf(" by rule %q", e.Rule)
		}
		return s + fmt.Sprintf(", after %s (%s)", plural(int64(e.Attempts), "attempt", "attempts"), e.Reason)
	}
	s := "the report has neither a fate nor a DLQ entry for it (a run keeps the fates of its explicit jobs and of the jobs an expectation names"
	if r.DLQ.Truncated {
		s += fmt.Sprintf("; it lists only the first %d DLQ entries", len(r.DLQ.Entries))
	}
	return s + ")"
}

// HaveDeadLettered succeeds when job jobID ended in the DLQ (failed,
// quarantined or deleted there) with its latest failure of severity
// severity (classify.SeverityNone: any). It reads the job's fate, kept for
// explicit jobs and the jobs an expectation names, else its DLQ entry.
func HaveDeadLettered(jobID string, severity classify.Severity) types.GomegaMatcher {
	d := jobData{ID: jobID, Want: "be dead-lettered"}
	if severity != classify.SeverityNone {
		d.Want += " with severity " + severity.String()
	}
	return gcustom.MakeMatcher(func(r *reports.Result) (bool, error) {
		if err := checkNil(r); err != nil {
			return false, err
		}
		w := find(r, jobID)
		sevOK := func(s string) bool { return severity == classify.SeverityNone || s == severity.String() }
		switch {
		case w.fate != nil:
			return w.fate.State == stateDeadLettered && sevOK(w.fate.Severity), nil
		case w.entry != nil:
			for _, s := range deadStatuses {
				if w.entry.Status == s {
					return sevOK(w.entry.Severity), nil
				}
			}
		}
		return false, nil
	}).WithTemplate(jobTemplate, d)
}

// HaveSucceeded succeeds when job jobID ended succeeded. It reads the job's
// fate: name a generated job in an expectation for the run to keep it.
func HaveSucceeded(jobID string) types.GomegaMatcher {
	return gcustom.MakeMatcher(func(r *reports.Result) (bool, error) {
		if err := checkNil(r); err != nil {
			return false, err
		}
		w := find(r, jobID)
		return w.fate != nil && w.fate.State == stateSucceeded, nil
	}).WithTemplate(jobTemplate, jobData{ID: jobID, Want: "succeed"})
}

const jobTemplate = `Expected job {{.Data.ID}} of {{.Data.Run .Actual}} {{.To}} {{.Data.Want}}, but {{.Data.Where .Actual}}`

type jobData struct {
	run
	ID, Want string
}

// Where says where the job is.
func (d jobData) Where(r *reports.Result) string { return find(r, d.ID).describe(r) }

// HavePages succeeds when receivers got exactly n pages — firing
// high-severity alerts — with fingerprint fingerprint ("" = any), counted
// over the report's deliveries (the first 500 alerts delivered). Its
// failure lists the pages that were sent.
func HavePages(n int, fingerprint string) types.GomegaMatcher {
	d := pagesData{Fingerprint: fingerprint, Want: plural(int64(n), "page", "pages")}
	if fingerprint != "" {
		d.Want += " for fingerprint " + fingerprint
	}
	return gcustom.MakeMatcher(func(r *reports.Result) (bool, error) {
		if err := checkNil(r); err != nil {
			return false, err
		}
		return d.count(r) == int64(n), nil
	}).WithTemplate(`Expected {{.Data.Run .Actual}} {{.To}} send {{.Data.Want}}, but receivers got {{.Data.Got .Actual}}
{{- range .Data.List .Actual}}
  {{.}}
{{- end}}`, d)
}

type pagesData struct {
	run
	Fingerprint, Want string
}

func (d pagesData) pages(r *reports.Result) []reports.Delivery {
	var out []reports.Delivery
	for _, dl := range r.Alerts.Deliveries {
		if dl.Status == statusFiring && dl.Severity == severityHigh && (d.Fingerprint == "" || dl.Fingerprint == d.Fingerprint) {
			out = append(out, dl)
		}
	}
	return out
}

// count counts the pages: from the report's uncapped per-fingerprint
// counts when it has them, else from the deliveries it lists.
func (d pagesData) count(r *reports.Result) int64 {
	if r.Alerts.PagesByFingerprint == nil {
		return int64(len(d.pages(r)))
	}
	if d.Fingerprint != "" {
		return r.Alerts.PagesByFingerprint[d.Fingerprint]
	}
	var n int64
	for _, c := range r.Alerts.PagesByFingerprint {
		n += c
	}
	return n
}

// Got counts the pages.
func (d pagesData) Got(r *reports.Result) string {
	s := fmt.Sprint(d.count(r))
	if r.Alerts.Truncated {
		s += fmt.Sprintf(" (the report lists the first %d deliveries)", len(r.Alerts.Deliveries))
	}
	if len(d.pages(r)) > 0 {
		s += ":"
	}
	return s
}

// List lists the pages.
func (d pagesData) List(r *reports.Result) []string {
	var out []string
	for i, p := range d.pages(r) {
		if i == maxListed {
			out = append(out, fmt.Sprintf("... and %d more", len(d.pages(r))-maxListed))
			break
		}
		out = append(out, fmt.Sprintf("%s to %s: %q (fingerprint %s, count %d)", at(p.AtMs), p.Receiver, p.Summary, p.Fingerprint, p.Count))
	}
	return out
}

// HaveDrainedDLQ succeeds when the DLQ holds no dead job at the end of the
// run: no entry failed, quarantined or deleted (requeued entries are kept
// for the record and do not count). Its failure lists the entries left.
func HaveDrainedDLQ() types.GomegaMatcher {
	return gcustom.MakeMatcher(func(r *reports.Result) (bool, error) {
		if err := checkNil(r); err != nil {
			return false, err
		}
		return r.Ledger.DeadLettered == 0, nil
	}).WithTemplate(`{{if .Failure -}}
Expected the DLQ of {{.Data.Run .Actual}} to be drained at the end, but it holds {{.Data.Held .Actual}}
{{- range .Data.Left .Actual}}
  {{.}}
{{- end}}
{{- else -}}
Expected the DLQ of {{.Data.Run .Actual}} not to be drained at the end, but it holds no dead-lettered job
{{- end}}`, dlqData{})
}

type dlqData struct{ run }

// Held counts the dead jobs.
func (dlqData) Held(r *reports.Result) string {
	return plural(r.Ledger.DeadLettered, "dead-lettered job", "dead-lettered jobs") + ":"
}

// Left lists the entries still dead.
func (dlqData) Left(r *reports.Result) []string {
	var out []string
	for _, e := range r.DLQ.Entries {
		if e.Status == dlq.Requeued.String() {
			continue
		}
		if len(out) == maxListed {
			out = append(out, "... and more")
			break
		}
		s := fmt.Sprintf("job %s (%s): %s, severity %s, class %s", e.JobID, e.Task, e.Status, e.Severity, e.Class)
		if e.Rule != "" {
			s += fmt.Sprintf(", rule %q", e.Rule)
		}
		out = append(out, s+", "+e.Reason)
	}
	return out
}

// HaveViolated succeeds when the run recorded a violation of invariant
// (one of the sim.Inv... names). Its failure names the invariant that was
// violated instead, if any; negated, it shows the violation and its trail.
func HaveViolated(invariant string) types.GomegaMatcher {
	return gcustom.MakeMatcher(func(r *reports.Result) (bool, error) {
		if err := checkNil(r); err != nil {
			return false, err
		}
		for _, v := range r.Violations {
			if v.Invariant == invariant {
				return true, nil
			}
		}
		return false, nil
	}).WithTemplate(`Expected {{.Data.Run .Actual}} {{.To}} violate invariant {{.Data.Invariant}}, but {{if .Failure}}{{.Data.Instead .Actual}}{{else}}{{.Data.Did .Actual}}{{end}}`,
		violatedData{Invariant: invariant})
}

type violatedData struct {
	run
	Invariant string
}

// Instead says what r violated instead of the invariant.
func (d violatedData) Instead(r *reports.Result) string {
	if len(r.Violations) == 0 {
		return "it violated none"
	}
	const most = 5
	s := make([]string, 0, most+1)
	for i, v := range r.Violations {
		if i == most {
			s = append(s, fmt.Sprintf("and %d more", len(r.Violations)-most))
			break
		}
		s = append(s, violation(v, false))
	}
	return "it violated another: " + strings.Join(s, "; ")
}

// Did shows the violation of the invariant, with the job's trail.
func (d violatedData) Did(r *reports.Result) string {
	for _, v := range r.Violations {
		if v.Invariant == d.Invariant {
			return "it did: " + violation(v, true)
		}
	}
	return "it did not"
}

// HaveBreakerTransitionsAtMost succeeds when breaker breaker changed state
// at most n times during the run: hysteresis keeps a breaker from flapping
// with a flapping dependency. Its failure lists the first transitions.
func HaveBreakerTransitionsAtMost(breaker string, n int) types.GomegaMatcher {
	d := breakerData{Breaker: breaker, N: n}
	return gcustom.MakeMatcher(func(r *reports.Result) (bool, error) {
		if err := checkNil(r); err != nil {
			return false, err
		}
		return len(d.transitions(r)) <= n, nil
	}).WithTemplate(`{{if .Failure -}}
Expected breaker {{.Data.Breaker}} of {{.Data.Run .Actual}} to change state at most {{.Data.N}} times, but it changed {{.Data.Count .Actual}}
{{- else -}}
Expected breaker {{.Data.Breaker}} of {{.Data.Run .Actual}} to change state more than {{.Data.N}} times, but it changed {{.Data.Count .Actual}}
{{- end}}
{{- range .Data.List .Actual}}
  {{.}}
{{- end}}`, d)
}

type breakerData struct {
	run
	Breaker string
	N       int
}

func (d breakerData) transitions(r *reports.Result) []reports.Transition {
	var out []reports.Transition
	for _, t := range r.Breakers {
		if t.Breaker == d.Breaker {
			out = append(out, t)
		}
	}
	return out
}

// Count counts the transitions.
func (d breakerData) Count(r *reports.Result) string {
	n := len(d.transitions(r))
	s := plural(int64(n), "time", "times")
	if n > 0 {
		s += ":"
	}
	return s
}

// List lists the first transitions.
func (d breakerData) List(r *reports.Result) []string {
	ts := d.transitions(r)
	var out []string
	for i, t := range ts {
		if i == maxListed {
			out = append(out, fmt.Sprintf("... and %d more", len(ts)-maxListed))
			break
		}
		out = append(out, fmt.Sprintf("%s %s → %s (%s)", at(t.AtMs), t.From, t.To, t.Reason))
	}
	return out
}
