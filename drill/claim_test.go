package drill_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/alicebob/miniredis/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/drill"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// goneProcess starts a process, notes its claim as a drill's, and ends it
// (killed and reaped): the claim of a drill that is gone.
func goneProcess(h drill.Host) drill.Claim {
	GinkgoHelper()
	cmd := exec.Command("sleep", "60")
	Expect(cmd.Start()).To(Succeed())
	c := drill.NewClaim("dlq-basics", h, time.Now())
	alive, st, err := h.Process(cmd.Process.Pid)
	Expect(err).NotTo(HaveOccurred())
	Expect(alive).To(BeTrue())
	c.PID, c.StartTicks = cmd.Process.Pid, st
	Expect(cmd.Process.Kill()).To(Succeed())
	_ = cmd.Wait()
	return c
}

// setClaim writes c as namespace ns's claim, and one key beside it.
func setClaim(ctx context.Context, rdb *redis.Client, ns string, c drill.Claim) {
	GinkgoHelper()
	v, err := drill.EncodeClaim(c)
	Expect(err).NotTo(HaveOccurred())
	Expect(rdb.Set(ctx, redisstore.Prefix(ns)+":drill", v, 0).Err()).To(Succeed())
	Expect(rdb.Set(ctx, redisstore.Prefix(ns)+":queue:default", "job", 0).Err()).To(Succeed())
}

var _ = Describe("a drill's claim of its namespace", func() {
	var host drill.Host

	BeforeEach(func() {
		var err error
		host, err = drill.LocalHost()
		Expect(err).NotTo(HaveOccurred())
		Expect(host.Process).NotTo(BeNil(), "drills run on Linux, where /proc says which processes run")
	})

	It("names its drill, and reads back as written", func() {
		c := drill.NewClaim("dlq-basics", host, time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
		Expect(c).To(And(
			HaveField("Scenario", "dlq-basics"), HaveField("PID", os.Getpid()), HaveField("Host", host.Name),
			HaveField("BootID", Not(BeEmpty())), HaveField("StartTicks", BeNumerically(">", 0)), HaveField("Version", Not(BeEmpty()))))
		v, err := drill.EncodeClaim(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(v).To(ContainSubstring(`"started":"2026-05-01T10:00:00Z"`))
		back, err := drill.ParseClaim(v)
		Expect(err).NotTo(HaveOccurred())
		Expect(back).To(Equal(c))
		Expect(back.String()).To(ContainSubstring("drill of dlq-basics, pid " + strconv.Itoa(os.Getpid()) + " on host " + host.Name + ", started 2026-05-01T10:00:00Z"))
	})

	It("still reads an older faultline's claim, a plain sentence, and cannot judge it", func() {
		c, err := drill.ParseClaim("faultline drill of worker-crash, pid 4242")
		Expect(err).NotTo(HaveOccurred())
		Expect(c).To(And(HaveField("Scenario", "worker-crash"), HaveField("PID", 4242), HaveField("Legacy", true), HaveField("Host", "")))
		l, _, err := c.Check(host)
		Expect(err).NotTo(HaveOccurred())
		Expect(l).To(Equal(drill.Unknown))
		Expect(drill.ClaimStatus{Namespace: "n", Claim: &c, Liveness: l}.Describe()).To(ContainSubstring("claimed by an older faultline"))
	})

	It("refuses a value that is not a claim", func() {
		for _, v := range []string{"", "hello", `{"pid":1}`, `{"scenario":"s","host":"h"}`, `{"pid":1,"host":"h","extra":1}`, "faultline drill of s, pid x"} {
			_, err := drill.ParseClaim(v)
			Expect(err).To(MatchError(drill.ErrNotAClaim), v)
		}
	})

	It("tells a drill that runs from one that is gone, one whose pid was reused, and one of another host", func() {
		running := drill.NewClaim("s", host, time.Now()) // this process
		l, why, err := running.Check(host)
		Expect(err).NotTo(HaveOccurred())
		Expect(l).To(Equal(drill.Running), why)

		gone := goneProcess(host)
		l, why, err = gone.Check(host)
		Expect(err).NotTo(HaveOccurred())
		Expect(l).To(Equal(drill.Gone))
		Expect(why).To(Equal("no process " + strconv.Itoa(gone.PID) + " runs on this host"))

		reused := running
		reused.StartTicks++ // this pid, but not the process that claimed
		l, why, err = reused.Check(host)
		Expect(err).NotTo(HaveOccurred())
		Expect(l).To(Equal(drill.Gone))
		Expect(why).To(ContainSubstring("the pid was reused"))

		elsewhere := running
		elsewhere.Host = "build-7.example"
		l, why, err = elsewhere.Check(host)
		Expect(err).NotTo(HaveOccurred())
		Expect(l).To(Equal(drill.OtherHost))
		Expect(why).To(ContainSubstring("this is host " + host.Name))

		rebooted := gone
		rebooted.BootID = "00000000-0000-0000-0000-000000000000"
		l, why, err = rebooted.Check(host)
		Expect(err).NotTo(HaveOccurred())
		Expect(l).To(Equal(drill.OtherHost), "a reboot and a namesake machine are not told apart: never deleted unforced")
		Expect(why).To(ContainSubstring("boot id"))
	})

	It("takes a process that died and was not reaped (a zombie) for gone", func() {
		cmd := exec.Command("sleep", "60")
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		c := drill.NewClaim("s", host, time.Now())
		c.PID = cmd.Process.Pid
		Expect(cmd.Process.Kill()).To(Succeed())
		Eventually(func() drill.Liveness {
			l, _, _ := c.Check(host)
			return l
		}).WithTimeout(5 * time.Second).Should(Equal(drill.Gone))
	})

	Describe("cleanup on a real Redis", func() {
		var (
			ctx context.Context
			url string
			rdb *redis.Client
		)
		BeforeEach(func() {
			ctx = context.Background()
			url = redistest.Real()
			rdb = redisstore.NewClient(url)
			DeferCleanup(rdb.Close)
		})

		It("removes only the named namespace's keys (and its canary's), the claim last", func() {
			setClaim(ctx, rdb, "a", goneProcess(host))
			Expect(rdb.Set(ctx, redisstore.Prefix("a-canary")+":queue:canary", "1", 0).Err()).To(Succeed())
			setClaim(ctx, rdb, "ab", goneProcess(host)) // a namespace that starts like it
			Expect(rdb.Set(ctx, "a:other", "x", 0).Err()).To(Succeed())

			res, err := drill.CleanNamespace(ctx, rdb, "a", drill.CleanupOptions{Host: host, DryRun: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(res).To(And(HaveField("Removed", true), HaveField("Keys", 3)))
			Expect(namespaceKeys(url, "a")).To(Equal(2), "a dry run removes nothing")

			res, err = drill.CleanNamespace(ctx, rdb, "a", drill.CleanupOptions{Host: host})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Liveness).To(Equal(drill.Gone))
			Expect(namespaceKeys(url, "a")).To(BeZero())
			Expect(namespaceKeys(url, "a-canary")).To(BeZero())
			Expect(namespaceKeys(url, "ab")).To(Equal(2))
			Expect(rdb.Exists(ctx, "a:other").Val()).To(BeEquivalentTo(1))
		})

		It("refuses a namespace whose drill runs (even forced), and unforced one of another host or with no claim, saying why", func() {
			setClaim(ctx, rdb, "live", drill.NewClaim("s", host, time.Now()))
			far := drill.NewClaim("s", host, time.Now())
			far.Host = "build-7.example"
			setClaim(ctx, rdb, "far", far)
			Expect(rdb.Set(ctx, redisstore.Prefix("bare")+":queue:default", "1", 0).Err()).To(Succeed())

			_, err := drill.CleanNamespace(ctx, rdb, "live", drill.CleanupOptions{Host: host, Force: true})
			Expect(err).To(MatchError(drill.ErrRefused))
			Expect(err.Error()).To(And(ContainSubstring("still running"), ContainSubstring("pid "+strconv.Itoa(os.Getpid())+" on host "+host.Name)))
			_, err = drill.CleanNamespace(ctx, rdb, "far", drill.CleanupOptions{Host: host})
			Expect(err).To(MatchError(drill.ErrRefused))
			Expect(err.Error()).To(And(ContainSubstring("on another host"), ContainSubstring("build-7.example"), ContainSubstring("--force")))
			_, err = drill.CleanNamespace(ctx, rdb, "bare", drill.CleanupOptions{Host: host})
			Expect(err).To(MatchError(drill.ErrRefused))
			Expect(err.Error()).To(ContainSubstring("no drill claim"))
			Expect(namespaceKeys(url, "live")+namespaceKeys(url, "far")+namespaceKeys(url, "bare")).To(Equal(5), "nothing refused is touched")

			for _, ns := range []string{"far", "bare"} {
				_, err = drill.CleanNamespace(ctx, rdb, ns, drill.CleanupOptions{Host: host, Force: true})
				Expect(err).NotTo(HaveOccurred(), ns)
				Expect(namespaceKeys(url, ns)).To(BeZero(), ns)
			}
			Expect(namespaceKeys(url, "live")).To(Equal(2))
		})

		It("--stale removes the namespaces of drills that are gone and keeps the others", func() {
			setClaim(ctx, rdb, "dead", goneProcess(host))
			setClaim(ctx, rdb, "live", drill.NewClaim("s", host, time.Now()))
			far := drill.NewClaim("s", host, time.Now())
			far.Host = "build-7.example"
			setClaim(ctx, rdb, "far", far)
			Expect(rdb.Set(ctx, redisstore.Prefix("old")+":drill", "faultline drill of s, pid 1", 0).Err()).To(Succeed())
			Expect(rdb.Set(ctx, redisstore.Prefix("bare")+":queue:default", "1", 0).Err()).To(Succeed())

			res, err := drill.CleanStale(ctx, rdb, drill.CleanupOptions{Host: host, Force: true}) // never forced
			Expect(err).NotTo(HaveOccurred())
			got := map[string]drill.Liveness{}
			for _, r := range res {
				got[r.Namespace] = r.Liveness
				Expect(r.Removed).To(Equal(r.Liveness == drill.Gone), r.Namespace)
			}
			Expect(got).To(Equal(map[string]drill.Liveness{"dead": drill.Gone, "live": drill.Running, "far": drill.OtherHost, "old": drill.Unknown}))
			Expect(namespaceKeys(url, "dead")).To(BeZero())
			Expect(namespaceKeys(url, "live")).To(Equal(2))
			Expect(namespaceKeys(url, "far")).To(Equal(2))
			Expect(namespaceKeys(url, "old")).To(Equal(1))
			Expect(namespaceKeys(url, "bare")).To(Equal(1), "a namespace with no claim is not --stale's")
		})

		It("refuses a drill of a namespace that holds keys, saying whose they are and printing the command that removes them", func(sctx SpecContext) {
			gone := goneProcess(host)
			setClaim(ctx, rdb, "left", gone)
			opts := options(url, "builtin:dlq-basics")
			opts.Namespace = "left"
			_, _, err := drill.Run(sctx, load("builtin:dlq-basics"), opts)
			Expect(err).To(MatchError(drill.ErrSteadyState))
			Expect(err.Error()).To(And(ContainSubstring(`namespace "left" already holds keys`),
				ContainSubstring("its claim names a drill that is gone: drill of dlq-basics, pid "+strconv.Itoa(gone.PID)),
				ContainSubstring("faultline drill cleanup --namespace left --redis-url "+url)))

			Expect(rdb.Set(ctx, redisstore.Prefix("bare")+":queue:default", "1", 0).Err()).To(Succeed())
			opts.Namespace = "bare"
			_, _, err = drill.Run(sctx, load("builtin:dlq-basics"), opts)
			Expect(err).To(MatchError(drill.ErrSteadyState))
			Expect(err.Error()).To(And(ContainSubstring("no drill claim"), ContainSubstring("faultline drill cleanup --namespace bare --redis-url "+url+" --force")))
			Expect(namespaceKeys(url, "left")).To(Equal(2), "a refused drill touches nothing")
		})
	})
})

// A drill refused at start-up removes what it wrote (issue 28: a CLIENT
// KILL as it claimed left its claim and its canary's keys behind).
var _ = Describe("A refused drill's cleanup", func() {
	var (
		mr  *miniredis.Miniredis
		rdb *redis.Client
		ctx = context.Background()
	)
	BeforeEach(func() {
		mr = miniredis.RunT(GinkgoT())
		rdb = redis.NewClient(&redis.Options{Addr: mr.Addr()})
		DeferCleanup(rdb.Close)
		Expect(rdb.Set(ctx, redisstore.Prefix("ns")+":drill", "mine", 0).Err()).To(Succeed())
		Expect(rdb.Set(ctx, redisstore.Prefix("ns")+":q:x", "1", 0).Err()).To(Succeed())
		Expect(rdb.Set(ctx, redisstore.Prefix("ns-canary")+":layout", "1", 0).Err()).To(Succeed())
	})

	It("removes its namespace and its canary's when its claim's answer was lost but the claim is its own", func() {
		drill.DeleteClaimed(rdb, "ns", "mine", false, true)
		Expect(mr.Keys()).To(BeEmpty())
	})

	It("removes its canary's namespace with its own after a claim that answered", func() {
		drill.DeleteClaimed(rdb, "ns", "mine", true, false)
		Expect(mr.Keys()).To(BeEmpty())
	})

	It("leaves a canary namespace that is another drill's (it holds that drill's claim)", func() {
		Expect(rdb.Set(ctx, redisstore.Prefix("ns-canary")+":drill", "other drill", 0).Err()).To(Succeed())
		drill.DeleteClaimed(rdb, "ns", "mine", true, false)
		Expect(mr.Keys()).To(ConsistOf(redisstore.Prefix("ns-canary")+":drill", redisstore.Prefix("ns-canary")+":layout"))
	})

	It("leaves a namespace another drill claimed", func() {
		drill.DeleteClaimed(rdb, "ns", "not-mine", false, true)
		Expect(mr.Keys()).To(HaveLen(3))
	})
})
