package oracle

import (
	"slices"
	"strings"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/scenarios"
)

// Evidence is a set of the kinds of record a run gives its oracle. Every
// check — an invariant, a count, an expectation — declares the kinds it
// reads (InvariantReads, ExpectationReads); a run says which it has and,
// for each it lacks, why (Observed). A check whose kinds a run lacks is
// reported not observable, with that why, by the check itself: no judge
// keeps its own list of what it cannot see.
type Evidence uint32

// The kinds of evidence.
const (
	// EvJobs: the jobs the workload made.
	EvJobs Evidence = 1 << iota
	// EvStream: the store's disposition events, every one, in order.
	EvStream
	// EvAttempts: each attempt's verdict as its worker decided it — the
	// failure's class and severity, the action taken.
	EvAttempts
	// EvCalls: the dependencies' call log (who called, when, the answer,
	// whether it took effect).
	EvCalls
	// EvDeliveries: the notifications the receivers were sent.
	EvDeliveries
	// EvAlerter: the alerter's own counts (raised, deduplicated,
	// inhibited, ...).
	EvAlerter
	// EvBreakers: the circuit breakers' transitions.
	EvBreakers
	// EvBudgets: the retry budgets' counts (delayed, exceeded).
	EvBudgets
	// EvDLQ: the DLQ's entries at the end.
	EvDLQ
	// EvDLQReads: the DLQ read again and again through the run (entries
	// seen to arrive and to leave).
	EvDLQReads
	// EvSeverity: a severity on the DLQ's entries.
	EvSeverity
	// EvTexts: every text the system sent out or stored (errors,
	// summaries, payloads), to find a planted secret in.
	EvTexts
	// EvPolicy: the system's retry policy, declared (a black box's is its
	// own, and judged only as the scenario declares it).
	EvPolicy
	// EvCallJobs: each call's job (a black box's calls name it in
	// X-Faultline-Job), so that a job's calls can be told from another's.
	EvCallJobs
	numEvidence = iota
)

// evidenceNames name each kind in a note.
var evidenceNames = [numEvidence]string{
	"the jobs the workload made",
	"the store's disposition events",
	"each attempt's verdict (class, severity, action) as its worker decided it",
	"the dependencies' call log",
	"the notifications the receivers were sent",
	"the alerter's own counts",
	"the circuit breakers' transitions",
	"the retry budgets' counts",
	"the DLQ's entries at the end",
	"the DLQ's reads through the run",
	"a severity on the DLQ's entries",
	"every text the system sent out or stored",
	"the system's declared retry policy",
	"each call's job ID",
}

// String names the kinds in the set: "the jobs the workload made and the
// dependencies' call log".
func (e Evidence) String() string {
	var parts []string
	for i := range numEvidence {
		if e&(1<<i) != 0 {
			parts = append(parts, evidenceNames[i])
		}
	}
	switch n := len(parts); n {
	case 0:
		return "nothing"
	case 1:
		return parts[0]
	default:
		return strings.Join(parts[:n-1], ", ") + " and " + parts[n-1]
	}
}

// Observed is what a run observed: every kind of evidence but those it
// lacks, and why it lacks each. The zero Observed has everything (the
// simulator's).
type Observed struct {
	missing Evidence
	why     [numEvidence]string
}

// Simulated is what a simulated run observes: everything.
func Simulated() Observed { return Observed{} }

// Has says the run has every kind in e.
func (o Observed) Has(e Evidence) bool { return o.missing&e == 0 }

// lack records that the run lacks kind e, and why.
func (o *Observed) lack(e Evidence, why string) {
	o.missing |= e
	for i := range numEvidence {
		if e&(1<<i) != 0 {
			o.why[i] = why
		}
	}
}

// Lacks says why a check that reads the kinds need cannot be judged on
// this run ("" and false when the run has them all): the kinds it lacks,
// named, and the run's reasons, e.g. "it reads the circuit breakers'
// transitions: the system's circuit breakers, if any, are inside it".
func (o Observed) Lacks(need Evidence) (string, bool) {
	missing := need & o.missing
	if missing == 0 {
		return "", false
	}
	var whys []string
	for i := range numEvidence {
		if w := o.why[i]; missing&(1<<i) != 0 && w != "" && !slices.Contains(whys, w) {
			whys = append(whys, w)
		}
	}
	why := "it reads " + missing.String()
	if len(whys) > 0 {
		why += ": " + strings.Join(whys, "; ")
	} else {
		why += ", which this run did not record"
	}
	return why, true
}

// The reasons a live run lacks a kind of evidence.
const (
	whyBudgetsSim    = "a simulated run's history does not record its retry budgets' counts (its own report has them)"
	whyTextsSim      = "a simulated run's history keeps a notification's summaries only, not its jobs' error texts and payload fields (its own report judged them)"
	whyBudgets       = "a drill's retry budgets live in each worker process, which does not report them"
	whyOldAlerter    = "the drill's history does not record its alerter's own counts (a history from an older faultline)"
	whyTrimmed       = "the store's event stream was trimmed before the drill read all of it"
	whyReadsRef      = "a drill of the reference follows its DLQ through the store's event stream, not by reading it again and again"
	whyTextsRef      = "a drill's history keeps a notification's summaries only, not its jobs' error texts and payload fields"
	whyStreamOutside = "the system's moves between its own queues happen inside it; the drill sees the calls, the alerts and the DLQ"
	whyVerdictOut    = "an attempt's verdict (its class, severity and the action it chose) is decided inside the system; the drill sees the calls and the DLQ, not what each attempt decided"
	whyBreakersOut   = "the system's circuit breakers, if any, are inside it"
	whyAlerterOut    = "the system's alerter, if any, is inside it: the drill counts the notifications its receivers were sent"
	whyBudgetsOut    = "the system's retry policy and budgets are its own; the calls of every job are in the call log"
	whyTextsOut      = "a black-box drill does not judge what its notifications and its DLQ's texts carry"
	whyNoPolicy      = "the system declares no retry policy (system.external.policy: {maxAttempts: N, minBackoff: D}): how many attempts a transient failure deserves is the system's own"
	whyNoAlerts      = "the system was given no receiver's URL (system.external.noAlerts): whether it pages cannot be seen from outside"
	whyNoSeverity    = "no entry of the DLQ carries a severity (at the layout's dlq.fields.severity): where none is written, none can be judged"
	whyNoCallJobs    = "none of the system's calls to its dependencies carried its job's ID in the X-Faultline-Job header: one job's calls cannot be told from another's (send the ID the job document carries in that header)"
)

// Observed says what the run that wrote h observed: a simulated run
// everything but its retry budgets' counts and its texts; a drill of the
// reference workers everything but the retry budgets (and the DLQ's
// successive reads, which its event stream replaces); a black-box drill
// the jobs, the call log, the deliveries (when the system was given the
// receivers), and the DLQ.
func (h *History) Observed() Observed {
	var o Observed
	if h.Simulated {
		// faultline run --history: everything but what the format does
		// not carry.
		o.lack(EvBudgets, whyBudgetsSim)
		o.lack(EvTexts, whyTextsSim)
		return o
	}
	if h.External == nil {
		o.lack(EvBudgets, whyBudgets)
		o.lack(EvDLQReads, whyReadsRef)
		o.lack(EvTexts, whyTextsRef)
		if h.Alerter == nil {
			o.lack(EvAlerter, whyOldAlerter)
		}
		if h.EventsLost {
			o.lack(EvStream, whyTrimmed)
		}
		return o
	}
	o.lack(EvStream, whyStreamOutside)
	o.lack(EvAttempts, whyVerdictOut)
	o.lack(EvBreakers, whyBreakersOut)
	o.lack(EvAlerter, whyAlerterOut)
	o.lack(EvBudgets, whyBudgetsOut)
	o.lack(EvTexts, whyTextsOut)
	if !h.External.Alerts {
		o.lack(EvDeliveries, whyNoAlerts)
	}
	severity := false
	for _, e := range h.External.Entries {
		severity = severity || e.Severity != ""
	}
	if !severity {
		o.lack(EvSeverity, whyNoSeverity)
	}
	if len(h.Calls) > 0 && !slices.ContainsFunc(h.Calls, func(c Call) bool { return c.JobID != "" }) {
		o.lack(EvCallJobs, whyNoCallJobs)
	}
	return o
}

// A judge follows a run's jobs one of two ways: through the store's
// disposition events (the Ledger: the simulator, a drill of the
// reference), or from outside the system (a black-box drill: the call
// log, the deliveries, the DLQ's reads).
const (
	// ViaLedger: the check as the ledger judges it.
	ViaLedger = false
	// FromOutside: the check as a black-box judge judges it.
	FromOutside = true
)

// ledgerReads are what each invariant reads when the ledger judges it.
var ledgerReads = map[string]Evidence{
	InvConservation:       EvJobs | EvStream,
	InvLegalMove:          EvStream,
	InvNoMoveAfterDone:    EvStream,
	InvOneDLQEntry:        EvStream,
	InvNoRetryOfFinal:     EvStream | EvAttempts,
	InvAttempts:           EvStream,
	InvNoDoubleCharge:     EvCalls,
	InvCriticalPaged:      EvAttempts | EvDeliveries,
	InvOnePage:            EvDeliveries,
	InvBreakerLegal:       EvBreakers,
	InvNoRerunAfterDead:   EvStream | EvAttempts,
	InvOutcomeIsMove:      EvStream | EvAttempts,
	InvNoLeaseLeftExpired: EvStream | EvAttempts,
	InvNoSecretLeaves:     EvTexts,
}

// outsideReads are what each invariant a black-box judge has a check for
// reads; an invariant it has none for reads what the ledger's does.
var outsideReads = map[string]Evidence{
	InvConservation:     EvJobs | EvCalls | EvCallJobs | EvDLQ,
	InvNotBoth:          EvCalls | EvCallJobs | EvDLQ,
	InvNoMoveAfterDone:  EvCalls | EvCallJobs,
	InvOneDLQEntry:      EvDLQReads | EvDLQ,
	InvDLQNeverShrinks:  EvDLQReads,
	InvNoDoubleCharge:   EvCalls | EvCallJobs,
	InvNoRetryOfFinal:   EvCalls | EvCallJobs,
	InvNoRerunAfterDead: EvCalls | EvCallJobs | EvDLQReads,
	InvCriticalPaged:    EvCalls | EvDeliveries,
	InvOnePage:          EvCalls | EvDeliveries,
	InvDLQSeverity:      EvDLQ | EvSeverity,
	InvDLQEntryComplete: EvDLQ,
	InvAttempts:         EvCalls | EvCallJobs,
	InvTransientRetried: EvCalls | EvCallJobs | EvPolicy,
}

// The invariants only a black-box judge checks (the others it shares with
// the ledger keep their names).
const (
	// InvNotBoth: no job both succeeded and sits in the DLQ.
	InvNotBoth = "not-both-succeeded-and-dead-lettered"
	// InvDLQNeverShrinks: an entry leaves the DLQ only by a mechanism the
	// scenario declares (system.external.dlqShrinks).
	InvDLQNeverShrinks = "dlq-never-shrinks"
	// InvDLQSeverity: where the layout carries a severity, a critical
	// failure's entry says high (or critical).
	InvDLQSeverity = "dlq-entry-severity"
	// InvDLQEntryComplete: every dead letter carries its job, its error,
	// its attempt count and when it failed.
	InvDLQEntryComplete = "dlq-entry-complete"
	// InvTransientRetried: with a declared retry policy, a job whose
	// failures were transient is dead-lettered only after its declared
	// attempts.
	InvTransientRetried = "transient-retried"
)

// InvNoSecretLeaves: no text the scenario planted as a secret
// (Scenario.Invariants.Secrets: a card number, a bearer token, a webhook
// URL in a fault's body or a job's payload) leaves the process — not in a
// delivered notification (its summaries, its jobs' error texts and
// payload fields, its labels), not in any field of the report as it is
// written (reports.Redact: the DLQ entries' error texts, the deliveries,
// the fates), the scenario's own texts (its description, its effective
// configuration) aside — while the DLQ's stored payload of a job created
// with one is still the payload it was created with, so that a requeue
// sends it as it was. Listed only for a scenario that plants secrets.
// (sim checks it: it alone sees every text.)
const InvNoSecretLeaves = "no-planted-secret-leaves"

// InvariantReads is what invariant name reads, judged via the ledger or
// from outside; an invariant with no check from outside reads what the
// ledger's check reads (so a black-box run, lacking it, reports it not
// observable).
func InvariantReads(name string, outside bool) Evidence {
	if outside {
		if e, ok := outsideReads[name]; ok {
			return e
		}
	}
	return ledgerReads[name]
}

// HasOutsideCheck says a black-box judge has a check of its own for
// invariant name.
func HasOutsideCheck(name string) bool { _, ok := outsideReads[name]; return ok }

// CountReads is what count c reads, judged via the ledger or from
// outside (where a black-box judge counts from the call log, the
// deliveries and the DLQ, and cannot filter by what only a verdict
// carries).
func CountReads(c scenarios.Count, outside bool) Evidence {
	verdicts := c.Severity != classify.SeverityNone || c.Class != 0 || c.Fingerprint != ""
	if outside {
		switch {
		case verdicts || (c.Metric == scenarios.Pages && c.Receiver != "") ||
			(c.Task != "" && c.Metric != scenarios.DeadLettered && c.Metric != scenarios.Created && c.Metric != scenarios.Succeeded):
			return EvStream | EvAttempts
		}
		switch c.Metric {
		case scenarios.Created:
			return EvJobs
		case scenarios.Succeeded:
			return EvJobs | EvCalls | EvCallJobs
		case scenarios.Charges:
			return EvJobs | EvCalls
		case scenarios.DeadLettered:
			return EvJobs | EvDLQ
		case scenarios.Lost, scenarios.Pending:
			return EvJobs | EvCalls | EvCallJobs | EvDLQ
		case scenarios.Notifications, scenarios.Pages:
			return EvDeliveries
		}
	}
	switch c.Metric {
	case scenarios.Created:
		return EvJobs
	case scenarios.Charges:
		return EvCalls
	case scenarios.Notifications, scenarios.Pages, scenarios.AlertsRefused:
		if c.Fingerprint != "" || c.Severity != classify.SeverityNone {
			return EvDeliveries | EvAttempts
		}
		return EvDeliveries
	case scenarios.AlertsRaised:
		return EvAlerter
	case scenarios.BudgetDelayed, scenarios.BudgetExceeded:
		return EvBudgets
	case scenarios.DeadLettered, scenarios.DeadLetters:
		if verdicts {
			return EvStream | EvAttempts
		}
	}
	return EvStream
}

// ExpectationReads is what expectation e reads, judged via the ledger or
// from outside.
func ExpectationReads(e scenarios.Expectation, outside bool) Evidence {
	switch x := e.(type) {
	case scenarios.Count:
		return CountReads(x, outside)
	case *scenarios.Count:
		return CountReads(*x, outside)
	case scenarios.JobFate, *scenarios.JobFate, scenarios.DrainedBy, *scenarios.DrainedBy,
		scenarios.JobAttempts, *scenarios.JobAttempts:
		return EvStream
	case scenarios.PageWithin, *scenarios.PageWithin:
		return EvAttempts | EvDeliveries
	case scenarios.BreakerOpened, *scenarios.BreakerOpened, scenarios.BreakerClosedBy, *scenarios.BreakerClosedBy,
		scenarios.BreakerTransitions, *scenarios.BreakerTransitions:
		return EvBreakers
	case scenarios.Confusion, *scenarios.Confusion:
		return EvStream | EvAttempts
	case scenarios.RetryRate:
		return rateReads(x)
	case *scenarios.RetryRate:
		return rateReads(*x)
	}
	return 0
}

func rateReads(r scenarios.RetryRate) Evidence {
	if r.Calls {
		return EvCalls
	}
	return EvStream
}
