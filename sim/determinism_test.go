package sim_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// childEnv makes the test binary a child that prints one run's JSON.
const childEnv = "FAULTLINE_SIM_CHILD"

// chaotic is the payment challenge with every kind of infrastructure fault
// on top: the widest determinism check.
func chaotic() scenarios.Scenario {
	sc := payments()
	sc.Name = "payment-challenge-chaotic"
	sc.Workers.LeaseTTL = 5 * time.Second
	sc.Faults = append(sc.Faults,
		faults.Fault{Name: "dlq-down", Target: faults.Target{Kind: faults.DLQStore}, Model: faults.StoreOutage{},
			Schedule: faults.Schedule{From: 60 * time.Second, Until: 150 * time.Second}},
		faults.Fault{Name: "pager-429", Target: faults.Target{Kind: faults.AlertSink, Name: "on-call"}, Model: faults.SinkOutage{Code: 429, RetryAfter: 5 * time.Second},
			Schedule: faults.Schedule{From: 175 * time.Second, Until: 240 * time.Second}},
		faults.Fault{Name: "crash-all", Target: faults.Target{Kind: faults.Worker}, Model: faults.WorkerCrash{RestartAfter: 10 * time.Second},
			Schedule: faults.Schedule{From: 150 * time.Second, Until: 151 * time.Second}},
		faults.Fault{Name: "stall-w4", Target: faults.Target{Kind: faults.Worker, Name: "w4"}, Model: faults.WorkerStall{For: 8 * time.Second},
			Schedule: faults.Schedule{From: 200 * time.Second, Until: 201 * time.Second}},
		faults.Fault{Name: "slow-store", Target: faults.Target{Kind: faults.Store}, Model: faults.SlowStore{Latency: 30 * time.Millisecond},
			Schedule: faults.Schedule{Every: &faults.Periodic{Period: time.Minute, Duty: 0.25, Jitter: 5 * time.Second}}},
	)
	return sc
}

// TestDeterminismChild prints the chaotic scenario's JSON when run as the
// child of the determinism spec; otherwise it does nothing.
func TestDeterminismChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		return
	}
	res, err := sim.Run(context.Background(), chaotic())
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Encode(os.Stdout); err != nil {
		t.Fatal(err)
	}
}

func child(gomaxprocs, tz string) []byte {
	GinkgoHelper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeterminismChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1", "GOMAXPROCS="+gomaxprocs, "TZ="+tz)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	Expect(cmd.Run()).To(Succeed(), errb.String())
	// go test prints "PASS" after the test's own output.
	b := out.Bytes()
	i := bytes.LastIndex(b, []byte("}\n"))
	Expect(i).To(BeNumerically(">", 0), out.String())
	return b[:i+2]
}

var _ = Describe("Determinism", func() {
	It("gives byte-identical JSON in separate processes with different GOMAXPROCS and TZ", func() {
		res, err := sim.Run(context.Background(), chaotic())
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Violations).To(BeEmpty())
		Expect(res.Ledger.Held).To(BeNumerically(">", 0))
		Expect(res.Alerts.Rejected).To(BeNumerically(">", 0))
		Expect(res.Ledger.LeaseExpiries).To(BeNumerically(">", 0))
		here, err := res.JSON()
		Expect(err).NotTo(HaveOccurred())

		a := child("1", "America/Los_Angeles")
		b := child("2", "Asia/Kolkata")
		Expect(string(a)).To(Equal(string(here)))
		Expect(string(b)).To(Equal(string(here)))
	})
})

// short is a two-minute slice of the payment challenge, small enough for a
// Redis round trip per move.
func short() scenarios.Scenario {
	sc := payments()
	sc.Name = "payment-challenge-short"
	sc.Duration = 5 * time.Minute
	sc.Workload.Arrivals.Rate = 2
	sc.Workload.Arrivals.Until = 4*time.Minute + 30*time.Second
	sc.Steps[0].At = 4*time.Minute + 45*time.Second
	sc.Expect = sc.Expect[:4]
	return sc
}

func redisStore(url string) sim.Option {
	return sim.WithStore(func(_ context.Context, _ sim.Env, cfg store.Config) (sim.Backend, error) {
		c := redisstore.NewClient(url)
		DeferCleanup(c.Close)
		return redisstore.New(c, cfg)
	})
}

var _ = Describe("Stores", func() {
	var memory []byte
	BeforeEach(func() {
		res, err := sim.Run(context.Background(), short())
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Verdict).To(BeEquivalentTo("passed"), "%+v %+v", res.Violations, res.Expectations)
		Expect(res.Ledger.Retries).To(BeNumerically(">", 0))
		memory, err = res.JSON()
		Expect(err).NotTo(HaveOccurred())
	})

	It("gives the same result on miniredis as in memory", func() {
		m := redistest.Mini(1)
		res, err := sim.Run(context.Background(), short(), redisStore(m.Addr()))
		Expect(err).NotTo(HaveOccurred())
		got, err := res.JSON()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal(string(memory)))
	})

	It("gives the same result on a real redis-server as in memory", func() {
		url := redistest.Real()
		res, err := sim.Run(context.Background(), short(), redisStore(url))
		Expect(err).NotTo(HaveOccurred())
		got, err := res.JSON()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal(string(memory)))
	})
})

var _ = testing.Verbose
