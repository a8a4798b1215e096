package oracle

import (
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reports"
)

// MaxDeliveries is how many deliveries a result lists (all are counted).
const MaxDeliveries = 500

// Pages is the checker of a run's pages: critical-failure-paged (every
// critical failure's fingerprint pages within PageWithin, unless a
// high-severity alert of it is already firing) and
// one-page-per-repeat-interval (a receiver gets one alert again only after
// the repeat interval, or at a higher severity), from the critical
// failures and the notifications the receivers accepted, in the order the
// run saw them. It counts the alerts for the result as it goes. The engine
// feeds it as its run goes, the ledger's judge from a history: one checker.
type Pages struct {
	led            *Ledger
	within, repeat time.Duration
	// at schedules f at offset d on the run's clock (a page deadline).
	at func(d time.Duration, f func())

	// Alerts are the run's alert counts and the first MaxDeliveries
	// deliveries, for its result.
	Alerts reports.Alerts

	pages       map[pageKey]pageState
	firing      map[FiringKey]int64
	highFiring  map[string]bool
	pendingCrit map[string]pendingPage
	// critFPs are the alert fingerprints of critical failures; the first
	// critical page is the first high-severity firing delivery of one of
	// them at or after the first critical failure.
	critFPs              map[string]bool
	firstCrit, firstPage time.Duration
	hasCrit, hasPage     bool
}

type pageKey struct{ receiver, fingerprint string }

type pageState struct {
	at       time.Duration
	severity classify.Severity
}

type pendingPage struct {
	at  time.Duration
	job string
}

// NewPages returns the pages checker of a run whose violations led
// records: within is the page deadline (invariants.pageWithin; negative:
// critical-failure-paged is off), repeat the alerter's shortest repeat
// interval (RepeatEvery), at the run's scheduler.
func NewPages(led *Ledger, within, repeat time.Duration, at func(d time.Duration, f func())) *Pages {
	return &Pages{led: led, within: within, repeat: repeat, at: at, pages: map[pageKey]pageState{}, firing: map[FiringKey]int64{},
		highFiring: map[string]bool{}, pendingCrit: map[string]pendingPage{}, critFPs: map[string]bool{}}
}

// Critical notes a critical failure of job at offset now, whose alert
// fingerprint is fp: unless a high-severity alert of fp is firing, a page
// of it is due within the deadline.
func (p *Pages) Critical(now time.Duration, job, fp string) {
	if !p.hasCrit {
		p.hasCrit, p.firstCrit = true, now
	}
	p.critFPs[fp] = true
	if p.within < 0 || p.highFiring[fp] {
		return
	}
	if _, ok := p.pendingCrit[fp]; ok {
		return
	}
	p.pendingCrit[fp] = pendingPage{at: now, job: job}
	p.at(now+p.within, func() {
		if q, ok := p.pendingCrit[fp]; ok && q.at == now {
			p.led.FailJob(InvCriticalPaged, q.job, "job %s failed critically at %s, and no high-severity alert for fingerprint %q reached a receiver within %s",
				q.job, fmtOffset(q.at), fp, p.within)
		}
	})
}

// Deliver notes notification n, accepted by receiver at offset now.
func (p *Pages) Deliver(now time.Duration, receiver string, n alert.Notification) {
	al := &p.Alerts
	al.Notifications++
	if al.ByReceiver == nil {
		al.ByReceiver = map[string]int64{}
	}
	al.ByReceiver[receiver]++
	for _, a := range n.Alerts {
		if len(al.Deliveries) < MaxDeliveries {
			al.Deliveries = append(al.Deliveries, reports.Delivery{AtMs: now.Milliseconds(), Receiver: receiver,
				Fingerprint: a.Fingerprint, Name: a.Name, Severity: a.Severity.String(), Status: a.Status.String(),
				Count: a.Count, Summary: a.Summary, Attempt: n.Attempt})
		} else {
			al.Truncated = true
		}
		k := pageKey{receiver, a.Fingerprint}
		if a.Status == alert.Resolved {
			delete(p.pages, k)
			if a.Severity == classify.High {
				delete(p.highFiring, a.Fingerprint)
			}
			continue
		}
		if prev, ok := p.pages[k]; ok && now-prev.at < p.repeat && a.Severity <= prev.severity {
			p.led.Fail(InvOnePage, nil, "receiver %s got alert %q (fingerprint %s) again after %s, within the repeat interval of %s",
				receiver, a.Summary, a.Fingerprint, now-prev.at, p.repeat)
		}
		p.pages[k] = pageState{at: now, severity: a.Severity}
		p.firing[FiringKey{Receiver: receiver, Fingerprint: a.Fingerprint, Severity: a.Severity}]++
		if alert.IsPage(a) { // what a page is, everywhere: see alert.IsPage
			if al.PagesByFingerprint == nil {
				al.PagesByFingerprint = map[string]int64{}
			}
			al.PagesByFingerprint[a.Fingerprint]++
			al.Pages++
			p.highFiring[a.Fingerprint] = true
			delete(p.pendingCrit, a.Fingerprint)
			if !p.hasPage && p.hasCrit && p.critFPs[a.Fingerprint] && now >= p.firstCrit {
				p.hasPage, p.firstPage = true, now
			}
		}
	}
}

// Refused counts a notification a receiver refused.
func (p *Pages) Refused() { p.Alerts.Rejected++ }

// PageWithin is the page deadline (negative: critical-failure-paged is
// off).
func (p *Pages) PageWithin() time.Duration { return p.within }

// Observe fills in what an Observation reads of the pages: the first
// critical failure and page, and the firing deliveries.
func (p *Pages) Observe(o *Observation) {
	o.FirstCritical, o.HasCritical, o.FirstCriticalPage, o.HasCriticalPage = p.firstCrit, p.hasCrit, p.firstPage, p.hasPage
	o.Firing = p.firing
}
