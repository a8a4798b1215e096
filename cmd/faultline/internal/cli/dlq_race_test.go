package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// The race specs: faultline dlq requeue --all against itself, against
// workers dead-lettering meanwhile, and killed midway. Each seeds n
// failed entries of one task on one queue and checks, through the store's
// API, that every job ends either back on its queue exactly once (its entry
// Requeued) or in the DLQ as failed (its job nowhere in the queue): never
// both, never neither, never requeued twice.

// raceN is how many entries a race spec seeds on a real Redis (the
// issue's 10,000). The miniredis lane seeds raceMiniN: its sorted sets
// sort on every range read, so 10,000 entries cost it minutes, and the
// scripts' logic is the same at any size.
const (
	raceN     = 10_000
	raceMiniN = 2_000
)

// raceNamespace is the store namespace the race specs use.
const raceNamespace = "race"

// raceQueue is the queue every seeded job came from.
const raceQueue = "charges"

// raceT0 is the seeded entries' time base: entry i failed at raceT0+i ms,
// long before any cut-off a run takes.
var raceT0 = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// raceID is the job ID of seeded entry i.
func raceID(i int) string { return fmt.Sprintf("job-%05d", i) }

// raceEntry is a dead job id that last failed at at.
func raceEntry(id string, at time.Time) dlq.Entry {
	v := classify.Classification{Class: classify.Transient, Severity: classify.Medium, Source: classify.Dependency, Rule: "race"}
	return dlq.Entry{
		Job:           job.Job{ID: id, Task: "charge", Queue: raceQueue, Payload: []byte(`{"amount":1}`), Attempts: 3, EnqueuedAt: at.Add(-time.Second)},
		History:       []dlq.Failure{{At: at, Attempt: 3, Error: "http 502 from gateway", ErrorType: "*failure.HTTPError", Verdict: v}},
		FirstFailedAt: at, LastFailedAt: at, Verdict: v, Reason: "retries exhausted",
	}
}

// raceStore opens the race namespace of the Redis at url, with batch as its
// bulk step.
func raceStore(url string, batch int) *redisstore.Store {
	GinkgoHelper()
	client := redisstore.NewClient(url)
	DeferCleanup(client.Close)
	s, err := redisstore.New(client, store.Config{Namespace: raceNamespace, BatchSize: batch})
	Expect(err).NotTo(HaveOccurred())
	return s
}

// raceSeed writes n failed entries raceID(0..n-1), 1,000 per script, and
// returns their IDs.
func raceSeed(url string, n int) []string {
	GinkgoHelper()
	s := raceStore(url, 1000)
	ids := make([]string, n)
	entries := make([]dlq.Entry, n)
	for i := range n {
		ids[i] = raceID(i)
		entries[i] = raceEntry(ids[i], raceT0.Add(time.Duration(i)*time.Millisecond))
	}
	_, err := s.AddBatch(context.Background(), entries, time.Now())
	Expect(err).NotTo(HaveOccurred())
	st, err := s.Stats(context.Background())
	Expect(err).NotTo(HaveOccurred())
	Expect(st.ByStatus).To(HaveKeyWithValue("failed", n))
	return ids
}

// raceSummary is what requeue --all --output json prints.
type raceSummary struct {
	Stated  int            `json:"stated"`
	Moved   int            `json:"moved"`
	Skipped int            `json:"skipped"`
	Reasons map[string]int `json:"skipped_by_reason"`
	Cutoff  time.Time      `json:"cutoff"`
	Batches int            `json:"batches"`
}

// raceArgs is a requeue --all --yes of the race namespace at url, by
// operator, with --batch batch, printing its summary as JSON.
func raceArgs(url, operator string, batch int) []string {
	return []string{"dlq", "requeue", "--all", "--yes", "--output", "json", "--batch", strconv.Itoa(batch),
		"--redis-url", url, "--namespace", raceNamespace, "--by", operator}
}

// raceRun runs a requeue --all in-process and returns its summary; safe to
// call from several goroutines at once (each run has its own command tree
// and writers). It reports rather than asserts, for use off the spec's
// goroutine.
func raceRun(url, operator string, batch int) (raceSummary, error) {
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), raceArgs(url, operator, batch), &out, &errOut)
	var sum raceSummary
	if code != cli.ExitOK {
		return sum, fmt.Errorf("%s: exit %d: %s", operator, code, errOut.String())
	}
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		return sum, fmt.Errorf("%s: summary %q: %w", operator, out.String(), err)
	}
	return sum, nil
}

// raceAudit is where every job is at the end of a spec, read through the
// store's API: the entries, and the jobs taken off the queue.
type raceAudit struct {
	// entries are every entry of the DLQ, by job ID.
	entries map[string]dlq.Entry
	// onQueue counts each job ID the queue handed out when drained.
	onQueue map[string]int
	// listed is how many IDs the queue's lists held before the drain
	// (Counts.Queued: a job pushed twice counts twice there, while a drain
	// hands it out once and skips the second copy as a stray).
	listed int
	// inFlight is how many jobs were leased before the drain.
	inFlight int
}

// auditRace drains the race queue and reads every entry. Call it once the
// writers have stopped.
func auditRace(s *redisstore.Store) raceAudit {
	GinkgoHelper()
	ctx := context.Background()
	c, err := s.Counts(ctx)
	Expect(err).NotTo(HaveOccurred())
	a := raceAudit{entries: map[string]dlq.Entry{}, onQueue: map[string]int{}, listed: c.Queued, inFlight: c.InFlight}
	for {
		j, _, ok, err := s.Dequeue(ctx, raceQueue, time.Now(), time.Hour)
		Expect(err).NotTo(HaveOccurred())
		if !ok {
			break
		}
		a.onQueue[j.ID]++
	}
	left, err := s.Counts(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(left.Queued).To(BeZero(), "jobs left on queues other than %q after the drain", raceQueue)
	page, err := s.List(ctx, dlq.Filter{}, "", 0)
	Expect(err).NotTo(HaveOccurred())
	Expect(page.Next).To(BeEmpty())
	for _, e := range page.Entries {
		if _, twice := a.entries[e.Job.ID]; twice {
			Fail(e.Job.ID + ": listed twice")
		}
		a.entries[e.Job.ID] = e
	}
	return a
}

// violations lists every job of ids not in exactly one place: Requeued with
// its job handed out by the queue once, or Failed with its job not on the
// queue; and every job requeued more than once. It also flags a queue that
// held more IDs than it handed out (a job pushed twice) and jobs on the
// queue that no entry names.
func (a *raceAudit) violations(ids []string) []string {
	var out []string
	if a.inFlight != 0 {
		out = append(out, fmt.Sprintf("%d jobs in flight before the drain (no worker should hold one)", a.inFlight))
	}
	handed := 0
	for id, n := range a.onQueue {
		handed += n
		if n > 1 {
			out = append(out, fmt.Sprintf("%s: handed out %d times by the queue", id, n))
		}
		if _, ok := a.entries[id]; !ok {
			out = append(out, id+": on the queue but no DLQ entry names it")
		}
	}
	if a.listed != handed {
		out = append(out, fmt.Sprintf("the queue's lists held %d IDs but handed out %d jobs (a job pushed twice?)", a.listed, handed))
	}
	for _, id := range ids {
		e, ok := a.entries[id]
		q := a.onQueue[id]
		switch {
		case !ok && q == 0:
			out = append(out, id+": lost (no entry, not on the queue)")
		case !ok:
			out = append(out, id+": on the queue, its entry gone")
		case e.Status == dlq.Requeued && q == 0:
			out = append(out, id+": entry requeued but its job is not on the queue (lost)")
		case e.Status == dlq.Failed && q > 0:
			out = append(out, id+": entry still failed and its job on the queue (both)")
		case e.Status != dlq.Requeued && e.Status != dlq.Failed:
			out = append(out, fmt.Sprintf("%s: status %s", id, e.Status))
		}
		if ok && e.Requeues > 1 {
			out = append(out, fmt.Sprintf("%s: requeued %d times", id, e.Requeues))
		}
	}
	sort.Strings(out)
	return out
}

// expectEachOnce fails the spec with the first violations, if any.
func expectEachOnce(a raceAudit, ids []string) {
	GinkgoHelper()
	v := a.violations(ids)
	Expect(v).To(BeEmpty(), "%d violations, the first: %v", len(v), v[:min(len(v), 20)])
}

// count returns how many entries satisfy pred.
func (a *raceAudit) count(pred func(e *dlq.Entry) bool) int {
	n := 0
	for _, e := range a.entries {
		if pred(&e) {
			n++
		}
	}
	return n
}

// raceLane holds the race specs on one Redis, each on n entries (the
// SIGKILL spec on 1.2n): start returns the URL of an empty database.
func raceLane(name string, n int, start func() string) {
	Describe("faultline dlq requeue --all under races, on "+name, func() {
		var url string
		BeforeEach(func() { url = start() })

		It(fmt.Sprintf("two operators requeueing the same %d entries at once requeue each exactly once", n), func() {
			ids := raceSeed(url, n)
			var sums [2]raceSummary
			var errs [2]error
			var wg sync.WaitGroup
			for k, op := range []string{"op-a", "op-b"} {
				wg.Go(func() { sums[k], errs[k] = raceRun(url, op, 50) })
			}
			wg.Wait()
			Expect(errors.Join(errs[:]...)).NotTo(HaveOccurred())
			GinkgoWriter.Printf("op-a %+v\nop-b %+v\n", sums[0], sums[1])
			Expect(sums[0].Moved+sums[1].Moved).To(Equal(n), "moved by the two runs together")

			a := auditRace(raceStore(url, 100))
			expectEachOnce(a, ids)
			Expect(a.entries).To(HaveLen(n))
			Expect(a.onQueue).To(HaveLen(n))
			Expect(a.count(func(e *dlq.Entry) bool { return e.Status == dlq.Requeued && e.Requeues == 1 })).To(Equal(n))
			// Each run's moves are the entries whose requeue it recorded.
			for k, op := range []string{"op-a", "op-b"} {
				by := a.count(func(e *dlq.Entry) bool { return e.Changes[len(e.Changes)-1].By == op })
				Expect(by).To(Equal(sums[k].Moved), "entries requeued by %s", op)
			}
		})

		It("a requeue --all while workers dead-letter new and requeued jobs loses nothing and requeues nothing twice", func() {
			ids := raceSeed(url, n)
			s := raceStore(url, 100)
			ctx := context.Background()
			// The worker: between every two reads of the queue it
			// dead-letters a fresh job; every requeued job it takes off the
			// queue dies again at once (a lease, then DeadLetter).
			var (
				stop             atomic.Bool
				fresh, again     []string
				workerErr        error
				workerDone       = make(chan struct{})
				runDone          = make(chan struct{})
				sum              raceSummary
				runErr           error
				freshN, redeathN int
			)
			go func() {
				defer GinkgoRecover()
				defer close(workerDone)
				for i := 0; !stop.Load(); i++ {
					id := fmt.Sprintf("new-%05d", i)
					if _, err := s.Add(ctx, raceEntry(id, time.Now()), time.Now()); err != nil {
						workerErr = fmt.Errorf("add %s: %w", id, err)
						return
					}
					fresh = append(fresh, id)
					j, l, ok, err := s.Dequeue(ctx, raceQueue, time.Now(), time.Minute)
					if err != nil {
						workerErr = err
						return
					}
					if !ok {
						continue
					}
					now := time.Now()
					e := raceEntry(j.ID, now)
					e.Job = j
					e.Job.Attempts++
					e.History[0].Attempt = e.Job.Attempts
					if _, err := s.DeadLetter(ctx, l, e, now); err != nil {
						workerErr = fmt.Errorf("dead-letter %s again: %w", j.ID, err)
						return
					}
					again = append(again, j.ID)
				}
			}()
			go func() {
				defer close(runDone)
				sum, runErr = raceRun(url, "op", 50)
			}()
			<-runDone
			stop.Store(true)
			<-workerDone
			Expect(runErr).NotTo(HaveOccurred())
			Expect(workerErr).NotTo(HaveOccurred())
			freshN, redeathN = len(fresh), len(again)
			GinkgoWriter.Printf("run %+v; worker: %d fresh, %d died again\n", sum, freshN, redeathN)
			Expect(freshN).To(BeNumerically(">", 0), "the worker dead-lettered fresh jobs during the run")
			Expect(redeathN).To(BeNumerically(">", 0), "requeued jobs died again during the run")
			Expect(sum.Cutoff).NotTo(BeZero())

			a := auditRace(s)
			all := append(slices.Clone(ids), fresh...)
			expectEachOnce(a, all)
			Expect(a.entries).To(HaveLen(len(all)))
			// Every seeded entry was requeued by the run, exactly once (those
			// that died again are failed again, with that one requeue).
			for _, id := range ids {
				Expect(a.entries[id].Requeues).To(Equal(1), id)
			}
			// Entries that died at or after the cut-off were not requeued by
			// this run: every requeued entry failed before it, and every job
			// that died again is failed, not requeued a second time.
			Expect(a.count(func(e *dlq.Entry) bool {
				return e.Status == dlq.Requeued && !e.LastFailedAt.Before(sum.Cutoff)
			})).To(BeZero(), "entries requeued although they failed at or after the cut-off %s", sum.Cutoff)
			for _, id := range again {
				e := a.entries[id]
				Expect(e.Status).To(Equal(dlq.Failed), id)
				Expect(e.LastFailedAt).NotTo(BeTemporally("<", sum.Cutoff), id)
				Expect(e.History).To(HaveLen(2), id)
			}
			Expect(a.count(func(e *dlq.Entry) bool { return e.Requeues == 1 })).To(Equal(sum.Moved), "entries requeued, against the run's count")
		})

		It("a requeue --all killed with SIGKILL midway leaves each entry requeued or still failed, never both, never neither", func() {
			n := n * 6 / 5
			ids := raceSeed(url, n)
			s := raceStore(url, 100)
			ctx := context.Background()
			cmd := exec.Command(raceBinary(), raceArgs(url, "op", 5)...)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			Expect(cmd.Start()).To(Succeed())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			// Kill it once a quarter of the jobs are back on the queue.
			var before int
			Eventually(func(g Gomega) int {
				select {
				case err := <-exited:
					StopTrying(fmt.Sprintf("the CLI ended before it was killed (%v): %s%s", err, out.String(), errOut.String())).Now()
				default:
				}
				c, err := s.Counts(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				before = c.Queued
				return before
			}).WithTimeout(30*time.Second).WithPolling(2*time.Millisecond).Should(BeNumerically(">=", n/4), "jobs requeued before the kill")
			Expect(cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
			err := <-exited
			var ee *exec.ExitError
			Expect(errors.As(err, &ee)).To(BeTrue(), "the CLI killed: %v", err)
			Expect(ee.Sys().(syscall.WaitStatus).Signal()).To(Equal(syscall.SIGKILL))

			c, err := s.Counts(ctx)
			Expect(err).NotTo(HaveOccurred())
			GinkgoWriter.Printf("killed with %d jobs on the queue, %d after\n", before, c.Queued)
			Expect(c.Queued).To(BeNumerically("<", n), "the kill came before the end of the run")

			a := auditRace(s)
			expectEachOnce(a, ids)
			requeued := a.count(func(e *dlq.Entry) bool { return e.Status == dlq.Requeued })
			Expect(requeued).To(Equal(len(a.onQueue)))
			Expect(requeued).To(BeNumerically(">=", before))

			// A rerun (the drain left the requeued jobs leased) takes
			// exactly the entries the killed run left failed, none twice.
			stillFailed := n - requeued
			sum, err := raceRun(url, "op-2", 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(sum.Moved).To(Equal(stillFailed), "the rerun moved the entries the killed run left")
			a2 := raceAuditAfterDrain(s)
			for _, id := range ids {
				e := a2.entries[id]
				Expect(e.Status).To(Equal(dlq.Requeued), id)
				Expect(e.Requeues).To(Equal(1), id)
				Expect(a2.onQueue[id]+a.onQueue[id]).To(Equal(1), "%s handed out once in all", id)
			}
		})
	})
}

// raceAuditAfterDrain is auditRace for a second look after a first drain:
// the jobs the first drain leased stay in flight, so only the queue and the
// entries are read.
func raceAuditAfterDrain(s *redisstore.Store) raceAudit {
	GinkgoHelper()
	ctx := context.Background()
	c, err := s.Counts(ctx)
	Expect(err).NotTo(HaveOccurred())
	a := raceAudit{entries: map[string]dlq.Entry{}, onQueue: map[string]int{}, listed: c.Queued}
	for {
		j, _, ok, err := s.Dequeue(ctx, raceQueue, time.Now(), time.Hour)
		Expect(err).NotTo(HaveOccurred())
		if !ok {
			break
		}
		a.onQueue[j.ID]++
	}
	handed := 0
	for _, k := range a.onQueue {
		handed += k
	}
	Expect(handed).To(Equal(a.listed), "IDs on the queue's lists against jobs handed out")
	page, err := s.List(ctx, dlq.Filter{}, "", 0)
	Expect(err).NotTo(HaveOccurred())
	for _, e := range page.Entries {
		a.entries[e.Job.ID] = e
	}
	return a
}

// The faultline binary the SIGKILL specs and the benchmarks run, built once
// per test process. Under go test it goes beside the test binary, in the go
// command's work directory, which the go command removes at the end; a
// test binary run by hand leaves it in a temporary directory.
var raceBin struct {
	once sync.Once
	path string
	err  error
}

// faultlineBinary returns the path of the faultline binary, building it on
// first use.
func faultlineBinary() (string, error) {
	raceBin.once.Do(func() {
		parent := ""
		if exe, err := os.Executable(); err == nil && strings.Contains(exe, "go-build") {
			parent = filepath.Dir(exe)
		}
		dir, err := os.MkdirTemp(parent, "faultline-dlq-bin-")
		if err != nil {
			raceBin.err = err
			return
		}
		bin := filepath.Join(dir, "faultline")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/faultline/faultline/cmd/faultline").CombinedOutput()
		if err != nil {
			raceBin.err = fmt.Errorf("build the faultline binary: %w\n%s", err, out)
			_ = os.RemoveAll(dir)
			return
		}
		raceBin.path = bin
	})
	return raceBin.path, raceBin.err
}

// raceBinary is faultlineBinary for a spec.
func raceBinary() string {
	GinkgoHelper()
	bin, err := faultlineBinary()
	Expect(err).NotTo(HaveOccurred())
	return bin
}

var _ = Describe("faultline dlq races", func() {
	raceLane("miniredis", raceMiniN, func() string { return "redis://" + redistest.Mini(1).Addr() + "/0" })
	raceLane("a real redis-server", raceN, func() string {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		return "redis://" + srv.Addr + "/0"
	})
})
