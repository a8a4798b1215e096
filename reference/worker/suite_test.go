package worker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/queue"
	"github.com/faultline/faultline/reference/redact"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/reference/worker"
)

func TestWorker(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "worker")
}

// t0 is where every virtual clock in these specs starts.
var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// backend is a queue and a DLQ of one namespace.
type backend interface {
	queue.Queue
	dlq.Store
}

// newBackend builds the store the specs run on: the in-memory backend the
// simulator uses.
func newBackend(cfg store.Config) backend {
	GinkgoHelper()
	s, err := memstore.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return s
}

// ledger follows every job through the store's disposition events: where
// each job is, checked at every event (a move must start where the job is,
// so a job can never be in two places), and how many jobs are in each
// state. It is safe for concurrent use.
type ledger struct {
	mu       sync.Mutex
	where    map[string]disposition.State
	count    map[disposition.State]int
	trail    map[string][]disposition.Event
	problems []string
}

func newLedger() *ledger {
	return &ledger{where: map[string]disposition.State{}, count: map[disposition.State]int{}, trail: map[string][]disposition.Event{}}
}

func (l *ledger) observe(e disposition.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trail[e.JobID] = append(l.trail[e.JobID], e)
	if got := l.where[e.JobID]; got != e.From {
		l.problems = append(l.problems, fmt.Sprintf("%s: moved from %s but the ledger has it %s", e, e.From, got))
	}
	if e.From != disposition.None {
		l.count[e.From]--
	}
	l.where[e.JobID] = e.To
	l.count[e.To]++
}

// state returns where job id is.
func (l *ledger) state(id string) disposition.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.where[id]
}

// counts returns how many jobs are in each state.
func (l *ledger) counts() map[disposition.State]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[disposition.State]int{}
	for s, n := range l.count {
		if n != 0 {
			out[s] = n
		}
	}
	return out
}

// events returns job id's trail.
func (l *ledger) events(id string) []disposition.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.trail[id])
}

func (l *ledger) errs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.problems)
}

// errorCall and deadCall record the hooks.
type errorCall struct {
	ID      string
	Verdict classify.Classification
	Err     error
}

type deadCall struct {
	ID    string
	Entry dlq.Entry
}

// world is the pipeline wired as the simulator wires it: a virtual clock,
// the default classifier, a seeded retry policy, a breaker with a fallback
// for the payment gateway, a real alerter paging High failures to "pager"
// and the rest to "chat", and the store.
type world struct {
	ctx     context.Context
	clk     *clock.Virtual
	st      backend
	led     *ledger
	policy  *retry.Policy
	breaker *degrade.Breaker
	fb      *degrade.Fallback
	alerter *alert.Alerter
	pager   *sink.Memory
	chat    *sink.Memory
	core    *worker.Core
	p       *worker.Pipeline

	mu       sync.Mutex
	errors   []errorCall
	deaths   []deadCall
	moves    []disposition.Event // the pipeline's observer
	overflow []store.Overflow
}

type worldConfig struct {
	store   store.Config
	retry   retry.Config
	breaker degrade.BreakerConfig
}

func newWorld(opts ...func(*worldConfig)) *world {
	GinkgoHelper()
	wc := worldConfig{
		retry: retry.Config{Budget: retry.BudgetConfig{Disabled: true}},
		breaker: degrade.BreakerConfig{
			Name: classify.PaymentGateway, ConsecutiveFailures: 3, OpenDuration: 10 * time.Second,
			RampUp: degrade.NoRampUp, HalfOpenProbes: 1, SuccessesToClose: 1,
		},
	}
	for _, o := range opts {
		o(&wc)
	}
	w := &world{ctx: context.Background(), clk: clock.NewVirtual(t0), led: newLedger(), pager: &sink.Memory{}, chat: &sink.Memory{}}
	wc.store.Observer = w.led.observe
	also := wc.store.OnOverflow
	wc.store.OnOverflow = func(o store.Overflow) {
		w.mu.Lock()
		w.overflow = append(w.overflow, o)
		w.mu.Unlock()
		if also != nil {
			also(o)
		}
	}
	w.st = newBackend(wc.store)

	var err error
	w.policy, err = retry.New(wc.retry, rand.New(rand.NewPCG(1, 2)))
	Expect(err).NotTo(HaveOccurred())
	w.breaker, err = degrade.NewBreaker(wc.breaker, w.clk)
	Expect(err).NotTo(HaveOccurred())
	w.fb, err = degrade.NewFallback(w.breaker, w.st, degrade.FallbackConfig{DrainInterval: time.Second}, w.clk)
	Expect(err).NotTo(HaveOccurred())
	w.alerter, err = alert.New(alert.Config{
		Receivers:       []alert.Receiver{{Name: "pager", Sink: w.pager}, {Name: "chat", Sink: w.chat}},
		Routes:          []alert.Route{{Receiver: "pager", Severities: []classify.Severity{classify.High}}},
		DefaultReceiver: "chat",
		Redactor:        redact.Default(),
	}, w.clk, rand.New(rand.NewPCG(3, 4)))
	Expect(err).NotTo(HaveOccurred())
	w.breaker.OnStateChange(w.alerter.BreakerChanged)

	w.core, err = worker.NewCore(worker.Config{
		Classifier: classify.Default(),
		Policy:     w.policy,
		Alerter:    w.alerter,
		Guards:     map[string]worker.Guard{classify.PaymentGateway: {Router: w.fb, Breaker: w.breaker}},
		OnError: func(j job.Job, c classify.Classification, err error) {
			w.mu.Lock()
			w.errors = append(w.errors, errorCall{j.ID, c, err})
			w.mu.Unlock()
		},
	})
	Expect(err).NotTo(HaveOccurred())
	w.p, err = worker.NewPipeline(worker.PipelineConfig{
		Core: w.core, Queue: w.st, DLQ: w.st,
		Observer: func(e disposition.Event) {
			w.mu.Lock()
			w.moves = append(w.moves, e)
			w.mu.Unlock()
		},
		OnDead: func(j job.Job, e dlq.Entry) {
			w.mu.Lock()
			w.deaths = append(w.deaths, deadCall{j.ID, e})
			w.mu.Unlock()
		},
	})
	Expect(err).NotTo(HaveOccurred())
	return w
}

func (w *world) now() time.Time { return w.clk.Now() }

func (w *world) enqueue(jobs ...job.Job) {
	GinkgoHelper()
	for _, j := range jobs {
		if j.EnqueuedAt.IsZero() {
			j.EnqueuedAt = w.now()
		}
		Expect(w.st.Enqueue(w.ctx, j, w.now())).To(Succeed())
	}
}

// lease dequeues the head of j's queue, expecting job id.
func (w *world) lease(queueName, id string) (job.Job, queue.Lease) {
	GinkgoHelper()
	j, l, ok, err := w.st.Dequeue(w.ctx, queueName, w.now(), 30*time.Second)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeTrue(), "expected job %s on queue %q", id, queueName)
	Expect(j.ID).To(Equal(id))
	return j, l
}

// attempt leases job id from the default queue and runs one attempt whose
// handler returns err; it returns the outcome (a Divert when the breaker
// refused) and the apply error.
func (w *world) attempt(id string, err error) (worker.Outcome, error) {
	GinkgoHelper()
	j, l := w.lease(job.DefaultQueue, id)
	a, ok, serr := w.p.Start(w.ctx, j, l, w.now())
	if !ok {
		return a.Divert(), serr
	}
	Expect(serr).NotTo(HaveOccurred())
	return w.p.Finish(w.ctx, a, l, err, w.now())
}

// untilDue runs the clock to o's due time and forwards the due retries.
func (w *world) untilDue(o worker.Outcome) {
	GinkgoHelper()
	Expect(o.Action).To(Equal(worker.Retry))
	w.clk.RunUntil(o.At)
	n, err := w.st.ForwardDue(w.ctx, w.now(), 100)
	Expect(err).NotTo(HaveOccurred())
	Expect(n).To(BeNumerically(">=", 1))
}

func (w *world) entry(id string) dlq.Entry {
	GinkgoHelper()
	e, err := w.st.Get(w.ctx, id)
	Expect(err).NotTo(HaveOccurred())
	return e
}

func (w *world) deadIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []string
	for _, d := range w.deaths {
		ids = append(ids, d.ID)
	}
	return ids
}

func (w *world) errorCalls() []errorCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.errors)
}

// pages returns the job-failure alerts delivered to s, as
// "task/class/severity".
func pages(s *sink.Memory) []string {
	var out []string
	for _, n := range s.Sent() {
		for _, a := range n.Alerts {
			if a.Status == alert.Firing {
				out = append(out, a.Labels[alert.LabelAlertName]+" "+a.Labels[alert.LabelTask]+"/"+a.Labels[alert.LabelClass]+"/"+a.Severity.String())
			}
		}
	}
	return out
}

// expectConserved checks the ledger: no move started anywhere but where
// its job was, and the jobs add up to created.
func (w *world) expectConserved(created int) {
	GinkgoHelper()
	Expect(w.led.errs()).To(BeEmpty())
	total := 0
	for _, n := range w.led.counts() {
		total += n
	}
	Expect(total).To(Equal(created), "jobs in the ledger: %v", w.led.counts())
	c, err := w.st.Counts(w.ctx)
	Expect(err).NotTo(HaveOccurred())
	lc := w.led.counts()
	Expect(c).To(Equal(queue.Counts{
		Queued: lc[disposition.Queued], InFlight: lc[disposition.InFlight],
		Scheduled: lc[disposition.Scheduled], Fallback: lc[disposition.Fallback], Held: lc[disposition.Held],
	}), "the store's counts against the ledger's")
}

// newJob returns a job of task on the default queue.
func newJob(id, task, dependency string) job.Job {
	return job.Job{ID: id, Task: task, Dependency: dependency, Payload: []byte(`{"id":"` + id + `"}`)}
}

// paymentJob is a charge through the payment gateway, with an idempotency
// key recorded before it was enqueued when key is true.
func paymentJob(id string, key bool) job.Job {
	j := newJob(id, "payment", classify.PaymentGateway)
	if key {
		j.IdempotencyKey = "idem-" + id
		j.KeyRecordedAt = t0.Add(-time.Minute)
	}
	return j
}

func clockAt(t time.Time) *clock.Virtual { return clock.NewVirtual(t) }
