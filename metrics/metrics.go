package metrics

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
)

// Limits of the open labels (see the package doc).
const (
	// MaxLabelValues is how many distinct values an open label (receiver,
	// breaker, worker, fault, target, model, op) takes; later new values
	// are recorded as Other.
	MaxLabelValues = 64
	// MaxValueLen is the longest value an open label takes, in bytes.
	MaxValueLen = 128
	// Other is the value a label is given in place of one it refuses.
	Other = "other"
)

// The results of faultline_notifications_total.
const (
	// Accepted is the result of a notification the receiver took.
	Accepted = "accepted"
	// Refused is the result of a notification the receiver refused or
	// never answered.
	Refused = "refused"
)

// Labels is the label set every faultline metric carries, as constant
// labels: the project's one set, shared by the drills' /metrics and every
// later one. Scenario is "" outside a drill.
type Labels struct {
	Namespace, Scenario string
}

// Set is one /metrics of the project: the faultline_ metrics on their own
// registry, and the hooks that change them. Its methods are safe for
// concurrent use and do nothing on a nil *Set.
type Set struct {
	reg *prometheus.Registry

	moves         *prometheus.CounterVec
	jobs          *prometheus.GaugeVec
	dlqDepth      *prometheus.GaugeVec
	dlqOldest     prometheus.Gauge
	pages         *prometheus.CounterVec
	notifications *prometheus.CounterVec
	breakers      *breakerCollector
	faultActive   *prometheus.GaugeVec
	faultHits     *prometheus.CounterVec
	requeues      prometheus.Counter
	deletes       prometheus.Counter
	errors        *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	bucketed      *prometheus.CounterVec

	// The labels' vocabularies.
	jobState, reason, severity, breakerState, result    *vocab
	receiver, breaker, worker, fault, target, model, op *vocab
	dependency                                          *vocab
	budgetBooked                                        *prometheus.GaugeVec
	leader                                              *prometheus.GaugeVec
	leaderTerm, relayBacklog                            prometheus.Gauge
}

// New returns a Set whose every series carries l, on a registry of its
// own. Invalid UTF-8 in l is replaced (Prometheus refuses it).
func New(l Labels) *Set {
	s := &Set{reg: prometheus.NewRegistry()}
	s.bucketed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultline_label_values_bucketed_total",
		Help: `Label values replaced by "other": unknown names, empty ones, and new ones past the label's cap.`,
	}, []string{"label"})

	s.jobState = s.closed("state", jobStates())
	s.reason = s.closed("reason", reasons())
	s.severity = s.closed("severity", severities())
	s.breakerState = s.closed("state", breakerStates())
	s.result = s.closed("result", []string{Accepted, Refused})
	s.receiver = s.open("receiver")
	s.breaker = s.open("breaker")
	s.worker = s.open("worker")
	s.fault = s.open("fault")
	s.target = s.open("target")
	s.model = s.open("model")
	s.op = s.open("op")
	s.dependency = s.open("dependency")

	s.moves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultline_job_moves_total",
		Help: "Disposition events: a job moved to state `to` for `reason`.",
	}, []string{"to", "reason"})
	s.jobs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "faultline_jobs",
		Help: "Jobs in each disposition state at the last snapshot.",
	}, []string{"state"})
	s.dlqDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "faultline_dlq_depth",
		Help: "Dead letters in the DLQ, by the severity of their last failure.",
	}, []string{"severity"})
	s.dlqOldest = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "faultline_dlq_oldest_age_seconds",
		Help: "Age of the oldest failed DLQ entry; 0 when there is none.",
	})
	s.pages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultline_pages_total",
		Help: "Pages (firing, high severity) sent to a receiver.",
	}, []string{"receiver"})
	s.notifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultline_notifications_total",
		Help: "Notifications tried on a receiver, by result (accepted or refused).",
	}, []string{"receiver", "result"})
	s.breakers = &breakerCollector{
		desc: prometheus.NewDesc("faultline_breaker_state",
			"1 for a circuit breaker's current state, 0 for its other states.",
			[]string{"breaker", "worker", "state"}, nil),
		states: map[[2]string]string{},
	}
	s.faultActive = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "faultline_fault_active",
		Help: "1 while a fault is active, 0 once it is undone.",
	}, []string{"fault", "target", "model"})
	s.faultHits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultline_fault_hits_total",
		Help: "Calls, connections or processes a fault acted on.",
	}, []string{"fault"})
	s.requeues = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "faultline_dlq_requeues_total",
		Help: "DLQ entries requeued, by an operator or the auto-retry.",
	})
	s.deletes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "faultline_dlq_deletes_total",
		Help: "DLQ entries deleted or purged.",
	})
	s.budgetBooked = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "faultline_retry_budget_booked",
		Help: "Retries booked in the current slot of the fleet's shared retry budget, by dependency (a slot holds at most the budget's burst).",
	}, []string{"dependency"})
	s.leader = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "faultline_fleet_leader",
		Help: "1 for the process that leads the standalone workers' fleet (runs its alerter, DLQ monitor and auto-retry); no series while none does.",
	}, []string{"worker"})
	s.leaderTerm = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "faultline_fleet_leader_term",
		Help: "The fleet leadership's term: it grows by one each time the lease passes to another process.",
	})
	s.relayBacklog = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "faultline_fleet_relay_backlog",
		Help: "Failures and breaker transitions relayed to the fleet's leader and not read by it yet.",
	})
	s.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "faultline_errors_total",
		Help: "Failed operations (a store call, a request), by operation.",
	}, []string{"op"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "faultline_request_duration_seconds",
		Help:    "How long an operation took, by operation.",
		Buckets: prometheus.DefBuckets,
	}, []string{"op"})

	r := prometheus.WrapRegistererWith(prometheus.Labels{
		"namespace": strings.ToValidUTF8(l.Namespace, "\uFFFD"),
		"scenario":  strings.ToValidUTF8(l.Scenario, "\uFFFD"),
	}, s.reg)
	r.MustRegister(s.moves, s.jobs, s.dlqDepth, s.dlqOldest, s.pages, s.notifications, s.breakers,
		s.faultActive, s.faultHits, s.requeues, s.deletes, s.errors, s.latency, s.bucketed, s.budgetBooked,
		s.leader, s.leaderTerm, s.relayBacklog)

	// The closed gauges start at 0, so a dashboard shows every state and
	// severity from the first scrape.
	for _, st := range s.jobState.names() {
		s.jobs.WithLabelValues(st).Set(0)
	}
	for _, sev := range s.severity.names() {
		s.dlqDepth.WithLabelValues(sev).Set(0)
	}
	return s
}

// Registry returns the Set's own registry (to gather it, or to register
// more collectors on it; the constant labels are not added to those).
func (s *Set) Registry() *prometheus.Registry { return s.reg }

// Handler serves the Set's metrics in the Prometheus exposition formats,
// at whatever path it is mounted on.
func (s *Set) Handler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	})
}

// Move counts one disposition event: a job moved to state to
// (disposition.State's name) for reason (a disposition.Reason).
func (s *Set) Move(to, reason string) {
	if s == nil {
		return
	}
	s.moves.WithLabelValues(s.jobState.value(to), s.reason.value(reason)).Inc()
}

// Jobs sets how many jobs are in state (disposition.State's name).
func (s *Set) Jobs(state string, n int) {
	if s == nil {
		return
	}
	s.jobs.WithLabelValues(s.jobState.value(state)).Set(float64(n))
}

// DLQDepth sets how many dead letters of severity (classify.Severity's
// name, as in dlq.Stats.BySeverity) the DLQ holds.
func (s *Set) DLQDepth(severity string, n int) {
	if s == nil {
		return
	}
	s.dlqDepth.WithLabelValues(s.severity.value(severity)).Set(float64(n))
}

// DLQOldestAge sets the age of the oldest failed DLQ entry (0: none).
func (s *Set) DLQOldestAge(d time.Duration) {
	if s == nil {
		return
	}
	s.dlqOldest.Set(max(d, 0).Seconds())
}

// Page counts a page sent to receiver.
func (s *Set) Page(receiver string) {
	if s == nil {
		return
	}
	s.pages.WithLabelValues(s.receiver.value(receiver)).Inc()
}

// Notification counts a notification tried on receiver: accepted, or
// refused (an error answer, a timeout).
func (s *Set) Notification(receiver string, accepted bool) {
	if s == nil {
		return
	}
	res := Refused
	if accepted {
		res = Accepted
	}
	s.notifications.WithLabelValues(s.receiver.value(receiver), res).Inc()
}

// Breaker records that breaker of worker is now in state ("closed",
// "open", "half-open"): its series of that state reads 1, the others 0,
// all changed in one step (a scrape never sees two states at 1).
func (s *Set) Breaker(breaker, worker, state string) {
	if s == nil {
		return
	}
	s.breakers.set(s.breaker.value(breaker), s.worker.value(worker), s.breakerState.value(state))
}

// RetryBudgetBooked records that the current slot of the fleet's shared
// retry budget (system.retry.budget.scope: fleet) holds n retries of
// dependency.
func (s *Set) RetryBudgetBooked(dependency string, n int) {
	if s == nil {
		return
	}
	s.budgetBooked.WithLabelValues(s.dependency.value(dependency)).Set(float64(n))
}

// FleetLeader records the fleet's control status: holder leads (when
// held) under term, and backlog relayed records wait for it. The leader's
// series is the only one: a past leader's is dropped.
func (s *Set) FleetLeader(holder string, held bool, term uint64, backlog int64) {
	if s == nil {
		return
	}
	s.leader.Reset()
	if held {
		s.leader.WithLabelValues(s.worker.value(holder)).Set(1)
	}
	s.leaderTerm.Set(float64(term))
	s.relayBacklog.Set(float64(backlog))
}

// FaultActive records that fault (its scenario name), on target
// (faults.Target's String: "dependency/payments", "worker/w2", "store")
// with model (faults.Model's Name: "timeout", "worker-crash"), is active
// (on) or undone (off).
func (s *Set) FaultActive(fault, target, model string, on bool) {
	if s == nil {
		return
	}
	v := 0.0
	if on {
		v = 1
	}
	s.faultActive.WithLabelValues(s.fault.value(fault), s.target.value(target), s.model.value(model)).Set(v)
}

// FaultHit counts one call, connection or process fault acted on.
func (s *Set) FaultHit(fault string) {
	if s == nil {
		return
	}
	s.faultHits.WithLabelValues(s.fault.value(fault)).Inc()
}

// Requeued counts n DLQ entries requeued (n <= 0 counts nothing).
func (s *Set) Requeued(n int) {
	if s == nil || n <= 0 {
		return
	}
	s.requeues.Add(float64(n))
}

// Deleted counts n DLQ entries deleted or purged (n <= 0 counts nothing).
func (s *Set) Deleted(n int) {
	if s == nil || n <= 0 {
		return
	}
	s.deletes.Add(float64(n))
}

// Error counts one failed operation op (e.g. "list", "requeue").
func (s *Set) Error(op string) {
	if s == nil {
		return
	}
	s.errors.WithLabelValues(s.op.value(op)).Inc()
}

// Latency observes that operation op took d.
func (s *Set) Latency(op string, d time.Duration) {
	if s == nil {
		return
	}
	s.latency.WithLabelValues(s.op.value(op)).Observe(max(d, 0).Seconds())
}

// vocab bounds one label's values: a closed one to its names, an open one
// to MaxLabelValues names seen first.
type vocab struct {
	label    string
	bucketed prometheus.Counter
	fixed    map[string]bool // closed: its names; nil for an open label
	order    []string        // closed: its names in order

	mu   sync.RWMutex
	seen map[string]bool // open: the values taken
}

func (s *Set) closed(label string, names []string) *vocab {
	v := &vocab{label: label, bucketed: s.bucketed.WithLabelValues(label), fixed: map[string]bool{}, order: names}
	for _, n := range names {
		v.fixed[n] = true
	}
	return v
}

func (s *Set) open(label string) *vocab {
	return &vocab{label: label, bucketed: s.bucketed.WithLabelValues(label), seen: map[string]bool{}}
}

func (v *vocab) names() []string { return v.order }

// value returns x if the label takes it, else Other (counted).
func (v *vocab) value(x string) string {
	if v.fixed != nil {
		if v.fixed[x] {
			return x
		}
		if y := strings.ReplaceAll(x, "_", "-"); v.fixed[y] {
			return y
		}
		v.bucketed.Inc()
		return Other
	}
	if x == "" || len(x) > MaxValueLen || !utf8.ValidString(x) {
		v.bucketed.Inc()
		return Other
	}
	v.mu.RLock()
	ok := v.seen[x]
	v.mu.RUnlock()
	if ok {
		return x
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.seen[x] {
		if len(v.seen) >= MaxLabelValues {
			v.bucketed.Inc()
			return Other
		}
		v.seen[x] = true
	}
	return x
}

// jobStates are disposition's states but None, by name.
func jobStates() []string {
	var out []string
	for st := disposition.State(1); !strings.HasPrefix(st.String(), "state("); st++ {
		out = append(out, st.String())
	}
	return out
}

func reasons() []string {
	rs := []disposition.Reason{
		disposition.Enqueued, disposition.Leased, disposition.Acked, disposition.RetryLater,
		disposition.Released, disposition.LeaseExpired, disposition.Due, disposition.Diverted,
		disposition.Drained, disposition.DeadLetter, disposition.HeldBack, disposition.Requeued,
		disposition.Evicted, disposition.Purged,
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

func severities() []string {
	out := []string{classify.SeverityNone.String()}
	for _, s := range classify.Severities {
		out = append(out, s.String())
	}
	return out
}

// breakerStateNames are degrade's states, by name.
var breakerStateNames = []string{degrade.Closed.String(), degrade.Open.String(), degrade.HalfOpen.String()}

func breakerStates() []string { return slices.Clone(breakerStateNames) }

// breakerCollector holds each breaker's state and writes its three (or,
// after an unknown state, four) series from one snapshot.
type breakerCollector struct {
	desc   *prometheus.Desc
	mu     sync.Mutex
	states map[[2]string]string // (breaker, worker) → state
}

func (c *breakerCollector) set(breaker, worker, state string) {
	c.mu.Lock()
	c.states[[2]string{breaker, worker}] = state
	c.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *breakerCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	type row struct{ breaker, worker, state string }
	rows := make([]row, 0, len(c.states))
	for k, st := range c.states {
		rows = append(rows, row{k[0], k[1], st})
	}
	c.mu.Unlock()
	for _, r := range rows {
		for _, st := range breakerStateNames {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, b2f(r.state == st), r.breaker, r.worker, st)
		}
		if r.state == Other {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, r.breaker, r.worker, Other)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
