package metrics_test

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/faultline/faultline/metrics"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
)

var labels = metrics.Labels{Namespace: "drill-7", Scenario: "payment-challenge"}

// everyHook calls every hook once.
func everyHook(s *metrics.Set) {
	s.Move("dead-lettered", "dead-lettered")
	s.Jobs("queued", 3)
	s.DLQDepth("high", 2)
	s.DLQOldestAge(90 * time.Second)
	s.Page("oncall")
	s.Notification("slack", true)
	s.Breaker("payments", "w1", "open")
	s.FaultActive("gateway-down", "dependency/payments", "outage", true)
	s.FaultHit("gateway-down")
	s.Requeued(2)
	s.Deleted(1)
	s.Error("list")
	s.Latency("list", 30*time.Millisecond)
	s.RetryBudgetBooked("payments", 7)
	s.FleetLeader("w1/4242", true, 3, 2)
	s.Jobs("no-such-state", 1) // one bucketed value
}

var _ = Describe("Set", func() {
	var (
		set *metrics.Set
		url string
	)
	BeforeEach(func() {
		set = metrics.New(labels)
		url = serve(set).URL()
	})

	DescribeTable("every hook changes what /metrics serves",
		func(hook func(*metrics.Set), name string, lbls map[string]string, want float64) {
			before, _ := value(scrape(url), name, lbls)
			hook(set)
			got, ok := value(scrape(url), name, lbls)
			Expect(ok).To(BeTrue(), "no series %s%v", name, lbls)
			Expect(got).NotTo(Equal(before))
			Expect(got).To(Equal(want))
		},
		Entry("Move", func(s *metrics.Set) { s.Move("scheduled", "retry"); s.Move("scheduled", "retry") },
			"faultline_job_moves_total", map[string]string{"to": "scheduled", "reason": "retry"}, 2.0),
		Entry("Jobs", func(s *metrics.Set) { s.Jobs("in-flight", 7) },
			"faultline_jobs", map[string]string{"state": "in-flight"}, 7.0),
		Entry("DLQDepth", func(s *metrics.Set) { s.DLQDepth("medium", 4) },
			"faultline_dlq_depth", map[string]string{"severity": "medium"}, 4.0),
		Entry("DLQOldestAge", func(s *metrics.Set) { s.DLQOldestAge(1500 * time.Millisecond) },
			"faultline_dlq_oldest_age_seconds", map[string]string{}, 1.5),
		Entry("Page", func(s *metrics.Set) { s.Page("pagerduty") },
			"faultline_pages_total", map[string]string{"receiver": "pagerduty"}, 1.0),
		Entry("Notification accepted", func(s *metrics.Set) { s.Notification("slack", true) },
			"faultline_notifications_total", map[string]string{"receiver": "slack", "result": "accepted"}, 1.0),
		Entry("Notification refused", func(s *metrics.Set) { s.Notification("slack", false) },
			"faultline_notifications_total", map[string]string{"receiver": "slack", "result": "refused"}, 1.0),
		Entry("Breaker", func(s *metrics.Set) { s.Breaker("payments", "w2", "half-open") },
			"faultline_breaker_state", map[string]string{"breaker": "payments", "worker": "w2", "state": "half-open"}, 1.0),
		Entry("FaultActive", func(s *metrics.Set) { s.FaultActive("storm", "dependency/gateway", "timeout", true) },
			"faultline_fault_active", map[string]string{"fault": "storm", "target": "dependency/gateway", "model": "timeout"}, 1.0),
		Entry("FaultHit", func(s *metrics.Set) { s.FaultHit("storm"); s.FaultHit("storm"); s.FaultHit("storm") },
			"faultline_fault_hits_total", map[string]string{"fault": "storm"}, 3.0),
		Entry("Requeued", func(s *metrics.Set) { s.Requeued(5); s.Requeued(0); s.Requeued(-2) },
			"faultline_dlq_requeues_total", map[string]string{}, 5.0),
		Entry("Deleted", func(s *metrics.Set) { s.Deleted(3) },
			"faultline_dlq_deletes_total", map[string]string{}, 3.0),
		Entry("Error", func(s *metrics.Set) { s.Error("requeue") },
			"faultline_errors_total", map[string]string{"op": "requeue"}, 1.0),
		Entry("Latency (sample count)", func(s *metrics.Set) { s.Latency("list", time.Millisecond); s.Latency("list", time.Second) },
			"faultline_request_duration_seconds", map[string]string{"op": "list"}, 2.0),
	)

	It("puts the gauges back when told: a fault undone reads 0, a drained state 0", func() {
		set.FaultActive("storm", "dependency/gateway", "timeout", true)
		set.FaultActive("storm", "dependency/gateway", "timeout", false)
		set.Jobs("queued", 9)
		set.Jobs("queued", 0)
		f := scrape(url)
		Expect(sample(f, "faultline_fault_active", map[string]string{"fault": "storm", "target": "dependency/gateway", "model": "timeout"})).To(BeZero())
		Expect(sample(f, "faultline_jobs", map[string]string{"state": "queued"})).To(BeZero())
	})

	It("shows every job state and every severity from the first scrape, at 0", func() {
		f := scrape(url)
		for st := disposition.Queued; st <= disposition.Held; st++ {
			v, ok := value(f, "faultline_jobs", map[string]string{"state": st.String()})
			Expect(ok).To(BeTrue(), st.String())
			Expect(v).To(BeZero())
		}
		for _, sev := range append([]classify.Severity{classify.SeverityNone}, classify.Severities...) {
			_, ok := value(f, "faultline_dlq_depth", map[string]string{"severity": sev.String()})
			Expect(ok).To(BeTrue(), sev.String())
		}
		Expect(series(f, "faultline_jobs")).To(Equal(7))
	})

	It("puts the constant labels on every series it serves", func() {
		everyHook(set)
		fams := scrape(url)
		Expect(fams).NotTo(BeEmpty())
		for name, f := range fams {
			Expect(name).To(HavePrefix("faultline_"))
			for _, m := range f.GetMetric() {
				Expect(m.GetLabel()).To(ContainElements(
					label("namespace", "drill-7"), label("scenario", "payment-challenge")), name)
			}
		}
	})

	It("serves exactly the metrics of doc.go's table, with its types and labels", func() {
		everyHook(set)
		fams, err := set.Registry().Gather()
		Expect(err).NotTo(HaveOccurred())
		got := map[string]docRow{}
		for _, f := range fams {
			var ls []string
			for _, lp := range f.GetMetric()[0].GetLabel() {
				if n := lp.GetName(); n != "namespace" && n != "scenario" {
					ls = append(ls, n)
				}
			}
			slices.Sort(ls)
			got[f.GetName()] = docRow{strings.ToLower(f.GetType().String()), strings.Join(ls, ",")}
		}
		Expect(got).To(Equal(docTable()))
	})

	It("passes promlint", func() {
		everyHook(set)
		fams, err := set.Registry().Gather()
		Expect(err).NotTo(HaveOccurred())
		problems, err := promlint.NewWithMetricFamilies(fams).Lint()
		Expect(err).NotTo(HaveOccurred())
		Expect(problems).To(BeEmpty())
	})

	It("writes the text exposition a dashboard reads", func() {
		set.Move("succeeded", "succeeded")
		set.Breaker("payments", "w1", "closed")
		set.Breaker("payments", "w1", "open")
		set.Requeued(4)
		Expect(exposition(set, "faultline_breaker_state", "faultline_dlq_requeues_total", "faultline_job_moves_total")).To(Equal(`# HELP faultline_breaker_state 1 for a circuit breaker's current state, 0 for its other states.
# TYPE faultline_breaker_state gauge
faultline_breaker_state{breaker="payments",namespace="drill-7",scenario="payment-challenge",state="closed",worker="w1"} 0
faultline_breaker_state{breaker="payments",namespace="drill-7",scenario="payment-challenge",state="half-open",worker="w1"} 0
faultline_breaker_state{breaker="payments",namespace="drill-7",scenario="payment-challenge",state="open",worker="w1"} 1
# HELP faultline_dlq_requeues_total DLQ entries requeued, by an operator or the auto-retry.
# TYPE faultline_dlq_requeues_total counter
faultline_dlq_requeues_total{namespace="drill-7",scenario="payment-challenge"} 4
# HELP faultline_job_moves_total Disposition events: a job moved to state ` + "`to`" + ` for ` + "`reason`" + `.
# TYPE faultline_job_moves_total counter
faultline_job_moves_total{namespace="drill-7",reason="succeeded",scenario="payment-challenge",to="succeeded"} 1
`))
	})

	Describe("a breaker", func() {
		It("reads 1 in its current state only, per breaker and worker", func() {
			set.Breaker("payments", "w1", degrade.Open.String())
			set.Breaker("payments", "w2", degrade.Closed.String())
			set.Breaker("payments", "w1", degrade.HalfOpen.String())
			f := scrape(url)
			at := func(w, st string) float64 {
				v, ok := value(f, "faultline_breaker_state", map[string]string{"breaker": "payments", "worker": w, "state": st})
				Expect(ok).To(BeTrue())
				return v
			}
			Expect([]float64{at("w1", "closed"), at("w1", "open"), at("w1", "half-open")}).To(Equal([]float64{0, 0, 1}))
			Expect([]float64{at("w2", "closed"), at("w2", "open"), at("w2", "half-open")}).To(Equal([]float64{1, 0, 0}))
			Expect(series(f, "faultline_breaker_state")).To(Equal(6))
		})

		It("in a state it does not know reads other, and drops other once known again", func() {
			set.Breaker("payments", "w1", "ajar")
			f := scrape(url)
			Expect(sample(f, "faultline_breaker_state", map[string]string{"breaker": "payments", "worker": "w1", "state": "other"})).To(Equal(1.0))
			Expect(sample(f, "faultline_breaker_state", map[string]string{"breaker": "payments", "worker": "w1", "state": "open"})).To(BeZero())
			set.Breaker("payments", "w1", "half_open")
			f = scrape(url)
			Expect(sample(f, "faultline_breaker_state", map[string]string{"breaker": "payments", "worker": "w1", "state": "half-open"})).To(Equal(1.0))
			Expect(series(f, "faultline_breaker_state")).To(Equal(3))
		})
	})

	Describe("label values", func() {
		bucketed := func(f map[string]*dto.MetricFamily, l string) float64 {
			v, _ := value(f, "faultline_label_values_bucketed_total", map[string]string{"label": l})
			return v
		}

		It("takes only the project's names on closed labels, reading an underscore as a hyphen", func() {
			set.Jobs("in_flight", 2)
			set.Jobs("job-0042", 1)
			set.Move("teleported", "leased")
			set.Move("queued", "because")
			set.DLQDepth("CRITICAL", 5)
			f := scrape(url)
			Expect(sample(f, "faultline_jobs", map[string]string{"state": "in-flight"})).To(Equal(2.0))
			Expect(sample(f, "faultline_jobs", map[string]string{"state": "other"})).To(Equal(1.0))
			Expect(sample(f, "faultline_job_moves_total", map[string]string{"to": "other", "reason": "leased"})).To(Equal(1.0))
			Expect(sample(f, "faultline_job_moves_total", map[string]string{"to": "queued", "reason": "other"})).To(Equal(1.0))
			Expect(sample(f, "faultline_dlq_depth", map[string]string{"severity": "other"})).To(Equal(5.0))
			Expect(series(f, "faultline_jobs")).To(Equal(8))
			Expect(bucketed(f, "state")).To(Equal(2.0))
			Expect(bucketed(f, "reason")).To(Equal(1.0))
			Expect(bucketed(f, "severity")).To(Equal(1.0))
		})

		It("takes every disposition reason the stores give", func() {
			for _, r := range []disposition.Reason{disposition.Enqueued, disposition.Leased, disposition.Acked,
				disposition.RetryLater, disposition.Released, disposition.LeaseExpired, disposition.Due,
				disposition.Diverted, disposition.Drained, disposition.DeadLetter, disposition.HeldBack,
				disposition.Requeued, disposition.Evicted, disposition.Purged} {
				set.Move("queued", string(r))
			}
			Expect(bucketed(scrape(url), "reason")).To(BeZero())
		})

		It("caps an open label: a job ID per call cannot grow the series past MaxLabelValues+1", func() {
			for i := range 1000 {
				set.Page("job-" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + itoa(i))
				set.Error("op-" + itoa(i))
			}
			set.Page("")
			set.Page(strings.Repeat("r", metrics.MaxValueLen+1))
			f := scrape(url)
			Expect(series(f, "faultline_pages_total")).To(Equal(metrics.MaxLabelValues + 1))
			Expect(series(f, "faultline_errors_total")).To(Equal(metrics.MaxLabelValues + 1))
			Expect(sample(f, "faultline_pages_total", map[string]string{"receiver": "other"})).To(Equal(float64(1000 - metrics.MaxLabelValues + 2)))
			Expect(bucketed(f, "receiver")).To(Equal(float64(1000 - metrics.MaxLabelValues + 2)))
			Expect(bucketed(f, "op")).To(Equal(float64(1000 - metrics.MaxLabelValues)))
		})

		It("keeps a value it took once it is capped", func() {
			set.Page("oncall")
			for i := range 2 * metrics.MaxLabelValues {
				set.Page("r" + itoa(i))
			}
			set.Page("oncall")
			Expect(sample(scrape(url), "faultline_pages_total", map[string]string{"receiver": "oncall"})).To(Equal(2.0))
		})
	})

	It("counts every call of hooks used at once from many goroutines", func() {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 500 {
					set.Move("queued", "enqueued")
					set.Page("r" + itoa(g))
					set.Breaker("b", "w"+itoa(g), []string{"closed", "open", "half-open"}[i%3])
					set.Latency("list", time.Millisecond)
				}
			})
		}
		wg.Wait()
		f := scrape(url)
		Expect(sample(f, "faultline_job_moves_total", map[string]string{"to": "queued", "reason": "enqueued"})).To(Equal(4000.0))
		Expect(sample(f, "faultline_request_duration_seconds", map[string]string{"op": "list"})).To(Equal(4000.0))
		Expect(series(f, "faultline_breaker_state")).To(Equal(24))
	})

	It("registers nothing on Prometheus's default registry", func() {
		everyHook(set)
		fams, err := prometheus.DefaultGatherer.Gather()
		Expect(err).NotTo(HaveOccurred())
		for _, f := range fams {
			Expect(f.GetName()).NotTo(HavePrefix("faultline_"))
		}
	})

	It("keeps two Sets apart (one per drill)", func() {
		other := metrics.New(metrics.Labels{Namespace: "ui", Scenario: ""})
		other.Page("oncall")
		set.Page("oncall")
		set.Page("oncall")
		Expect(sample(scrape(url), "faultline_pages_total", map[string]string{"receiver": "oncall"})).To(Equal(2.0))
		Expect(sample(gathered(other), "faultline_pages_total", map[string]string{"receiver": "oncall"})).To(Equal(1.0))
		Expect(gathered(other)["faultline_pages_total"].GetMetric()[0].GetLabel()).To(ContainElements(label("namespace", "ui"), label("scenario", "")))
	})
})

var _ = Describe("a nil Set", func() {
	It("takes every hook and does nothing", func() {
		var s *metrics.Set
		Expect(func() { everyHook(s) }).NotTo(Panic())
	})
})

func label(name, value string) *dto.LabelPair { return &dto.LabelPair{Name: &name, Value: &value} }

func itoa(i int) string { return strconv.Itoa(i) }

// gathered gathers s's registry by name.
func gathered(s *metrics.Set) map[string]*dto.MetricFamily {
	GinkgoHelper()
	fams, err := s.Registry().Gather()
	Expect(err).NotTo(HaveOccurred())
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// exposition writes the named families of s in the text format.
func exposition(s *metrics.Set, names ...string) string {
	GinkgoHelper()
	fams, err := s.Registry().Gather()
	Expect(err).NotTo(HaveOccurred())
	var b strings.Builder
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if slices.Contains(names, f.GetName()) {
			Expect(enc.Encode(f)).To(Succeed())
		}
	}
	return b.String()
}

// docRow is a row of doc.go's table: a metric's type and its labels,
// sorted, but the constant ones.
type docRow struct{ typ, labels string }

// docTable reads doc.go's table: name → (type, labels).
func docTable() map[string]docRow {
	GinkgoHelper()
	b, err := os.ReadFile("doc.go")
	Expect(err).NotTo(HaveOccurred())
	row := regexp.MustCompile(`(?m)^//\t(faultline_\w+)\s+(counter|gauge|histogram)\s+(.+?)\s{2,}`)
	out := map[string]docRow{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		ls := strings.Split(strings.ReplaceAll(m[3], " ", ""), ",")
		if m[3] == "-" {
			ls = nil
		}
		slices.Sort(ls)
		out[m[1]] = docRow{m[2], strings.Join(ls, ",")}
	}
	Expect(out).To(HaveLen(18))
	return out
}
