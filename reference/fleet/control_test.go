package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/fleet"
	"github.com/faultline/faultline/reference/redact"
)

var t0 = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)

// duty counts its starts and stops.
type duty struct{ running, starts int }

func (d *duty) Start() { d.running++; d.starts++ }
func (d *duty) Stop()  { d.running-- }

// proc is one process of a fleet: its alerter, relay, drain and control.
type proc struct {
	name    string
	sent    *sink.Memory
	alerter *alert.Alerter
	relay   *fleet.Relay
	ctl     *fleet.Control
	el      *fleet.Elector
	duty    *duty
	alive   bool
}

// flakyLeader fails every call while down.
type flakyLeader struct {
	fleet.LeaderStore
	down bool
}

var errDown = errors.New("store down")

func (f *flakyLeader) ClaimLeader(ctx context.Context, role, holder string, now time.Time, ttl time.Duration) (fleet.Lease, error) {
	if f.down {
		return fleet.Lease{}, errDown
	}
	return f.LeaderStore.ClaimLeader(ctx, role, holder, now, ttl)
}

// downLog refuses appends while down.
type downLog struct {
	fleet.Log
	down bool
}

func (d *downLog) AppendAlerts(ctx context.Context, records [][]byte) error {
	if d.down {
		return errDown
	}
	return d.Log.AppendAlerts(ctx, records)
}

var _ = Describe("a fleet's control", func() {
	var (
		clk   *clock.Virtual
		store *fleet.MemoryLeader
		log   *fleet.MemoryLog
		procs []*proc
		ctx   = context.Background()
	)
	const ttl = 3 * time.Second
	groupWait := time.Second
	newProc := func(name string, ls fleet.LeaderStore) *proc {
		GinkgoHelper()
		p := &proc{name: name, sent: &sink.Memory{}, duty: &duty{}, alive: true}
		var err error
		p.alerter, err = alert.New(alert.Config{
			Receivers:       []alert.Receiver{{Name: "pager", Sink: p.sent}},
			DefaultReceiver: "pager",
			Timing:          alert.Timing{GroupWait: groupWait},
			Redactor:        redact.Default(),
		}, clk, rand.New(rand.NewPCG(1, 2)))
		Expect(err).NotTo(HaveOccurred())
		p.el, err = fleet.NewElector(fleet.ElectorConfig{Store: ls, Clock: clk, Holder: name, TTL: ttl})
		Expect(err).NotTo(HaveOccurred())
		p.relay, err = fleet.NewRelay(fleet.RelayConfig{Log: log, Process: name, Fingerprint: p.alerter.Fingerprint, Clock: clk})
		Expect(err).NotTo(HaveOccurred())
		drain, err := fleet.NewDrain(fleet.DrainConfig{Log: log, Elector: p.el, To: p.alerter, Clock: clk, Hold: p.alerter.MaxGroupWait() + 2*time.Second})
		Expect(err).NotTo(HaveOccurred())
		p.ctl, err = fleet.NewControl(fleet.ControlConfig{Elector: p.el, Relay: p.relay, Drain: drain,
			Duties: []fleet.Duty{p.duty}, Clock: clk})
		Expect(err).NotTo(HaveOccurred())
		return p
	}
	BeforeEach(func() {
		groupWait = time.Second
		clk = clock.NewVirtual(t0)
		store = fleet.NewMemoryLeader()
		log = fleet.NewMemoryLog(store)
		procs = nil
		for i := range 3 {
			procs = append(procs, newProc(fmt.Sprintf("w%d", i+1), store))
		}
	})
	// tick ticks every live process, then lets the clock run one interval.
	tick := func() {
		GinkgoHelper()
		for _, p := range procs {
			if p.alive {
				_ = p.ctl.Tick(ctx)
			}
		}
		clk.Advance(time.Second)
	}
	fail := func(p *proc, job string) string {
		return p.relay.JobFailed(alert.Failure{JobID: job, Task: "charge", Dependency: "gateway", Class: classify.Transient,
			Severity: classify.High, Source: classify.Dependency, Attempts: 1, Err: "503"})
	}
	leaders := func() []string {
		var out []string
		for _, p := range procs {
			if _, ok := p.el.Leading(); ok && p.alive {
				out = append(out, p.name)
			}
		}
		return out
	}
	// pages counts what the live processes' alerters sent (a dead one's
	// timers still run on the shared virtual clock: what it would have
	// sent after its death is not counted).
	pages := func() (n int, by []string) {
		for _, p := range procs {
			if s := len(p.sent.Sent()); s > 0 && p.alive {
				n += s
				by = append(by, p.name)
			}
		}
		return n, by
	}

	It("pages an incident once, from the leader, whichever processes saw its failures", func() {
		tick()
		Expect(leaders()).To(Equal([]string{"w1"}))
		for i, p := range procs {
			fp := fail(p, fmt.Sprintf("job-%d", i))
			Expect(fp).To(Equal(procs[0].alerter.Fingerprint(alert.Failure{Task: "charge", Dependency: "gateway", Class: classify.Transient})),
				"the relay stamps the leader's fingerprint")
		}
		for range 4 {
			tick()
		}
		n, by := pages()
		Expect(n).To(Equal(1), "one page for the incident")
		Expect(by).To(Equal([]string{"w1"}))
		st := procs[0].alerter.Stats()
		Expect(st.Occurrences).To(BeEquivalentTo(3), "the leader's alerter heard the three processes' failures")
		Expect(st.Raised).To(BeEquivalentTo(1))
		Expect(log.Len()).To(BeZero(), "the leader acknowledged what it heard")
		Expect(procs[0].duty.running).To(Equal(1))
		Expect(procs[1].duty.starts+procs[2].duty.starts).To(BeZero(), "only the leader runs the duties")
	})

	It("passes the duties and the relay to another process when the leader dies, keeping what was relayed meanwhile", func() {
		tick()
		Expect(leaders()).To(Equal([]string{"w1"}))
		procs[0].alive = false // SIGKILL: no resignation
		fail(procs[1], "job-a")
		tick()
		Expect(leaders()).To(BeEmpty(), "w1's lease has not run out: nobody leads")
		Expect(log.Len()).To(Equal(1), "the failure waits in the log")
		for range 3 {
			tick()
		}
		Expect(leaders()).To(HaveLen(1), "a successor within the TTL (%s) and a tick", ttl)
		Expect(leaders()[0]).NotTo(Equal("w1"))
		tick()
		tick()
		n, by := pages()
		Expect(n).To(Equal(1), "the failure relayed while nobody led is paged by the successor")
		Expect(by).NotTo(ContainElement("w1"))
		running := 0
		for _, p := range procs[1:] {
			running += p.duty.running
		}
		Expect(running).To(Equal(1), "the successor runs the duties")
	})

	It("leaves to its successor what a leader heard and died before paging, and what it heard twice is heard once", func() {
		groupWait = 5 * time.Second
		procs = nil
		for i := range 3 {
			procs = append(procs, newProc(fmt.Sprintf("w%d", i+1), store))
		}
		tick()
		Expect(leaders()).To(Equal([]string{"w1"}))
		fail(procs[1], "job-a")
		tick() // w2 relays it
		tick() // w1 hears it: its alerter would page 5s later
		Expect(procs[0].alerter.Stats().Occurrences).To(BeEquivalentTo(1))
		Expect(log.Len()).To(Equal(1), "held in the log until it can have been paged")
		procs[0].alive = false // SIGKILL before the page
		for range 8 {
			tick()
		}
		n, by := pages()
		Expect(n).To(Equal(1), "the successor heard it from the log and paged it")
		Expect(by).NotTo(ContainElement("w1"))
		for range 10 {
			tick()
		}
		Expect(log.Len()).To(BeZero(), "acknowledged once the successor could have paged it")

		// A batch relayed twice (its answer lost) is heard once.
		succ := procs[1]
		if _, ok := succ.el.Leading(); !ok {
			succ = procs[2]
		}
		before := succ.alerter.Stats().Occurrences
		rec, err := json.Marshal(fleet.Record{Process: "w9", Seq: 1, At: clk.Now(), Failure: &alert.Failure{JobID: "job-b", Task: "charge", Dependency: "gateway", Class: classify.Transient, Severity: classify.High}})
		Expect(err).NotTo(HaveOccurred())
		Expect(log.AppendAlerts(ctx, [][]byte{rec, rec})).To(Succeed())
		tick()
		Expect(succ.alerter.Stats().Occurrences - before).To(BeEquivalentTo(1))
	})

	It("hands over within a tick when the leader resigns (a graceful stop)", func() {
		tick()
		Expect(procs[0].el.Resign(ctx)).To(Succeed())
		procs[0].alive = false
		tick()
		Expect(leaders()).To(HaveLen(1))
		l := procs[1].el.Lease()
		Expect(l.Term).To(BeEquivalentTo(2))
	})

	It("stops leading when its lease runs out while the store cannot be reached, and stops its duties", func() {
		fl := &flakyLeader{LeaderStore: store}
		procs = []*proc{newProc("solo", fl)}
		tick()
		Expect(leaders()).To(Equal([]string{"solo"}))
		Expect(procs[0].duty.running).To(Equal(1))
		fl.down = true
		tick()
		Expect(leaders()).To(Equal([]string{"solo"}), "its lease still holds by its clock")
		for range 3 {
			tick()
		}
		Expect(leaders()).To(BeEmpty())
		Expect(procs[0].duty.running).To(BeZero(), "its duties stopped with the lease")
		fl.down = false
		tick()
		Expect(leaders()).To(Equal([]string{"solo"}))
		Expect(procs[0].duty.running).To(Equal(1))
		Expect(procs[0].duty.starts).To(Equal(2))
	})

	It("relays breaker transitions to the leader's alerter", func() {
		tick()
		procs[2].relay.BreakerChanged(degrade.Transition{Breaker: "gateway", From: degrade.Closed, To: degrade.Open, At: clk.Now(), Reason: "failure-rate"})
		for range 3 {
			tick()
		}
		n, by := pages()
		Expect(n).To(Equal(1))
		Expect(by).To(Equal([]string{"w1"}))
		Expect(procs[0].sent.Sent()[0].Alerts[0].Labels[alert.LabelAlertName]).To(Equal(alert.NameBreakerOpen))
	})

	It("reports a corrupt record without stopping", func() {
		tick()
		Expect(log.AppendAlerts(ctx, [][]byte{[]byte("not json")})).To(Succeed())
		fail(procs[1], "job-b")
		for range 6 {
			tick()
		}
		n, _ := pages()
		Expect(n).To(Equal(1), "the failure after the corrupt record is heard")
		Expect(log.Len()).To(BeZero())
		Expect(procs[1].relay.Stats()).To(Equal(fleet.RelayStats{Relayed: 1}))
	})

	It("keeps a relay's records, in order, while the log cannot be reached, and relays them once it can", func() {
		down := &downLog{Log: log, down: true}
		r, err := fleet.NewRelay(fleet.RelayConfig{Log: down, Process: "w7", Clock: clk})
		Expect(err).NotTo(HaveOccurred())
		for _, id := range []string{"a", "b"} {
			r.JobFailed(alert.Failure{JobID: id, Task: "charge", Class: classify.Transient})
			Expect(r.Flush(ctx)).To(MatchError(ContainSubstring("store down")))
		}
		Expect(r.Stats()).To(Equal(fleet.RelayStats{Pending: 2, Errors: 2}))
		down.down = false
		Expect(r.Flush(ctx)).To(Succeed())
		Expect(r.Stats()).To(Equal(fleet.RelayStats{Relayed: 2, Errors: 2}))
		es, err := log.ReadAlerts(ctx, "", 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(es).To(HaveLen(2))
		Expect(string(es[0].Data)).To(ContainSubstring(`"JobID":"a"`))
		Expect(string(es[1].Data)).To(ContainSubstring(`"JobID":"b"`))
	})
})
