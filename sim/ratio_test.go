package sim_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/sim"
)

// The bare event loop is the simulator's yardstick: the same workload as
// busy (Poisson arrivals, 64 worker slots, a 20 ms service time, 30 % of
// attempts failing and retried with full-jitter backoff up to 10 attempts),
// with nothing but a typed binary heap of value events, a FIFO of job
// numbers and the random draws. The simulator does everything it does and
// also keeps a store, a ledger, a classifier, a retry policy, an alerter and
// every invariant; how far it stays from this loop, measured in the same
// process at the same moment, is a figure that does not depend on how fast
// or how loaded the machine is.

// bareKind is what a bare event does.
type bareKind uint8

const (
	bareDone  bareKind = iota // an attempt ends
	bareRetry                 // a failed job's backoff is over
)

// bareEvent is one value in the heap: (at, seq) orders it.
type bareEvent struct {
	at   int64
	seq  uint64
	kind bareKind
	job  int32
}

// bareHeap is a binary min-heap of bareEvent values, by (at, seq).
type bareHeap []bareEvent

func (h bareHeap) less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}

func (h *bareHeap) push(e bareEvent) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *bareHeap) pop() bareEvent {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(s) {
			break
		}
		m := l
		if r := l + 1; r < len(s) && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// bareLoop runs busy(rate, d)'s workload as a bare event loop and returns the
// number of jobs it created (the simulator's Ledger.Created for the same
// scenario, give or take the arrival draws).
func bareLoop(rate float64, d time.Duration) int64 {
	const (
		workers     = 64
		service     = int64(20 * time.Millisecond)
		failP       = 0.3
		maxAttempts = 10
		baseDelay   = int64(100 * time.Millisecond)
		maxDelay    = int64(5 * time.Second)
	)
	until := int64(d - time.Minute)
	end := int64(d)
	arrivals := rand.New(rand.NewPCG(1, 1))
	faultRand := rand.New(rand.NewPCG(1, 2))
	retryRand := rand.New(rand.NewPCG(1, 3))

	var (
		h        = make(bareHeap, 0, 1024)
		seq      uint64
		attempts []uint8 // per job, indexed by job number
		queue    []int32 // FIFO of queued jobs
		head     int
		idle     = workers
		created  int64
		arrT     float64
	)
	nextArrival := func() int64 {
		arrT += arrivals.ExpFloat64() / rate
		return int64(math.Floor(arrT*1000)) * int64(time.Millisecond)
	}
	arrAt := nextArrival()
	now := int64(0)
	for {
		// Dispatch: idle workers take the jobs at the head of the queue.
		for idle > 0 && head < len(queue) {
			j := queue[head]
			head++
			idle--
			attempts[j]++
			seq++
			h.push(bareEvent{at: now + service, seq: seq, kind: bareDone, job: j})
		}
		if head > 4096 && head*2 > len(queue) { // keep the FIFO's memory flat
			queue = append(queue[:0], queue[head:]...)
			head = 0
		}
		arrival := arrAt < until
		if len(h) > 0 && (!arrival || h[0].at <= arrAt) {
			e := h.pop()
			now = e.at
			if now > end {
				break
			}
			switch e.kind {
			case bareDone:
				idle++
				if faultRand.Float64() < failP && attempts[e.job] < maxAttempts {
					n := int64(attempts[e.job]) - 1
					limit := maxDelay
					if n < 32 && baseDelay<<n < maxDelay {
						limit = baseDelay << n
					}
					seq++
					h.push(bareEvent{at: now + int64(retryRand.Uint64N(uint64(limit)+1)), seq: seq, kind: bareRetry, job: e.job})
				}
			case bareRetry:
				queue = append(queue, e.job)
			}
			continue
		}
		if !arrival {
			break
		}
		now = arrAt
		queue = append(queue, int32(len(attempts)))
		attempts = append(attempts, 0)
		created++
		arrAt = nextArrival()
	}
	return created
}

// cpuTime returns the CPU time the process has used, user and system, all
// threads (the garbage collector's included). The ratio is taken in CPU
// time rather than wall time: on a machine loaded by other processes a run
// waits for a core, and the wait falls unevenly on a long simulation and a
// short bare loop, where the CPU each one uses does not count the wait.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ratioTimes is one round of the simulator and the bare loop on the same
// workload: the jobs each made, and the CPU and wall time each took.
type ratioTimes struct {
	simJobs, bareJobs int64
	simCPU, bareCPU   time.Duration
	simWall, bareWall time.Duration
}

// ratioRun runs the simulator on busy(rate, d), then the bare loop.
func ratioRun(rate float64, d time.Duration) (ratioTimes, error) {
	var t ratioTimes
	wall, cpu := time.Now(), cpuTime()
	res, err := sim.Run(context.Background(), busy(rate, d))
	if err != nil {
		return t, err
	}
	if res.Failed() {
		return t, fmt.Errorf("the run failed: %+v %+v", res.Violations, res.Expectations)
	}
	t.simJobs, t.simCPU, t.simWall = res.Ledger.Created, cpuTime()-cpu, time.Since(wall)
	wall, cpu = time.Now(), cpuTime()
	t.bareJobs = bareLoop(rate, d)
	t.bareCPU, t.bareWall = cpuTime()-cpu, time.Since(wall)
	return t, nil
}

// perSec is n jobs in d as jobs per second.
func perSec(n int64, d time.Duration) float64 { return float64(n) / max(d, time.Microsecond).Seconds() }

var _ = Describe("The simulator's speed beside a bare event loop", func() {
	It("has the bare loop create the simulator's number of jobs, to within the arrival draws", func() {
		res, err := sim.Run(context.Background(), busy(1000, 11*time.Second+time.Minute))
		Expect(err).NotTo(HaveOccurred())
		n := bareLoop(1000, 11*time.Second+time.Minute)
		Expect(float64(n)).To(BeNumerically("~", float64(res.Ledger.Created), 0.05*float64(res.Ledger.Created)))
	})
})
