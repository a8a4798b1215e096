package proxy_test

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/drill/proxy"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

func TestProxy(t *testing.T) {
	RegisterFailHandler(Fail)
	redis.SetLogger(quiet{}) // the pool's dial failures are what the specs cause
	RunSpecs(t, "drill/proxy")
}

// TestMain stops the process's redis-server when the specs are done.
func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopShared()
	os.Exit(code)
}

// quiet discards go-redis's log.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// Named timeouts of the specs.
const (
	// failFast bounds how long a command may take to fail when the proxy
	// is disabled: a refused dial, not a timeout.
	failFast = time.Second
	// settle bounds waiting for something that happens at once on an idle
	// machine.
	settle = 5 * time.Second
)

// upstream returns the address of the process's redis-server (its
// database for this Ginkgo process flushed).
func upstream() string {
	GinkgoHelper()
	redistest.Real()
	s, err := redistest.Shared()
	Expect(err).NotTo(HaveOccurred())
	return s.Addr
}

// client returns a go-redis client through addr that neither retries nor
// pools idle connections for long, closed when the spec ends.
func client(addr string) *redis.Client {
	GinkgoHelper()
	c := redis.NewClient(&redis.Options{
		Addr:        addr,
		DB:          GinkgoParallelProcess() % 16,
		MaxRetries:  -1,
		DialTimeout: 2 * time.Second,
		ReadTimeout: 10 * time.Second,
	})
	DeferCleanup(c.Close)
	return c
}

// timed runs f and returns how long it took.
func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// accepting reports whether some goroutine of the process runs a
// Toxiproxy accept loop.
func accepting() bool {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	s := string(buf[:n])
	return strings.Contains(s, "toxiproxy.(*Proxy).server") || strings.Contains(s, "toxiproxy.(*Proxy).freeBlocker")
}

var _ = Describe("Proxy", func() {
	var (
		p   *proxy.Proxy
		c   *redis.Client
		ctx context.Context
	)

	BeforeEach(func() {
		ctx = context.Background()
		var err error
		p, err = proxy.New("redis", upstream(), proxy.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close)
		c = client(p.Addr())
	})

	It("listens on loopback and passes commands through", func() {
		Expect(p.Addr()).To(HavePrefix("127.0.0.1:"))
		Expect(c.Ping(ctx).Val()).To(Equal("PONG"))
		Expect(c.Set(ctx, "k", "v", 0).Err()).To(Succeed())
		Expect(c.Get(ctx, "k").Val()).To(Equal("v"))
	})

	It("makes commands fail fast while disabled and lets a new one succeed once enabled", func() {
		Expect(c.Ping(ctx).Err()).To(Succeed())
		Expect(p.Disable()).To(Succeed())

		var err error
		Expect(timed(func() { err = c.Ping(ctx).Err() })).To(BeNumerically("<", failFast))
		Expect(err).To(HaveOccurred())
		_, dialErr := net.DialTimeout("tcp", p.Addr(), failFast)
		Expect(dialErr).To(MatchError(ContainSubstring("refused")))

		Expect(p.Enable()).To(Succeed())
		Expect(c.Ping(ctx).Val()).To(Equal("PONG"))
	})

	It("cuts a blocking command in flight when disabled", func() {
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- c.BLPop(ctx, 8*time.Second, "never-pushed").Err()
		}()
		direct := client(upstream())
		Eventually(func() string { return direct.ClientList(ctx).Val() }).
			WithTimeout(settle).Should(ContainSubstring("cmd=blpop"), "BLPOP reaches Redis")

		start := time.Now()
		Expect(p.Disable()).To(Succeed())
		var err error
		Eventually(done).WithTimeout(failFast).Should(Receive(&err))
		Expect(err).To(HaveOccurred())
		Expect(errors.Is(err, redis.Nil)).To(BeFalse(), "cut, not timed out")
		Expect(time.Since(start)).To(BeNumerically("<", failFast))
	})

	It("adds at least the latency set to every reply, and Clear removes it", func() {
		const d = 300 * time.Millisecond
		Expect(c.Ping(ctx).Err()).To(Succeed()) // a pooled connection made before the toxic
		Expect(p.SetLatency(d, 0)).To(Succeed())
		Expect(timed(func() { Expect(c.Ping(ctx).Err()).To(Succeed()) })).To(BeNumerically(">=", d))
		fresh := client(p.Addr())
		Expect(timed(func() { Expect(fresh.Ping(ctx).Err()).To(Succeed()) })).To(BeNumerically(">=", d))

		Expect(p.Clear()).To(Succeed())
		Expect(timed(func() { Expect(c.Ping(ctx).Err()).To(Succeed()) })).To(BeNumerically("<", d))
	})

	It("replaces a latency set before instead of adding to it", func() {
		Expect(p.SetLatency(2*time.Second, 0)).To(Succeed())
		Expect(p.SetLatency(100*time.Millisecond, 50*time.Millisecond)).To(Succeed())
		Expect(timed(func() { Expect(c.Ping(ctx).Err()).To(Succeed()) })).To(BeNumerically("<", time.Second))
	})

	It("resets connections, and Clear restores them", func() {
		Expect(p.ResetPeer(0)).To(Succeed())
		Expect(c.Ping(ctx).Err()).To(HaveOccurred())
		Expect(c.Set(ctx, "reset", "1", 0).Err()).To(HaveOccurred())
		direct := client(upstream())
		Expect(direct.Exists(ctx, "reset").Val()).To(BeZero(), "the command never reached Redis")

		Expect(p.Clear()).To(Succeed())
		Expect(c.Ping(ctx).Val()).To(Equal("PONG"))
	})

	It("is healthy after Clear from an outage with toxics", func() {
		Expect(p.SetLatency(time.Second, 0)).To(Succeed())
		Expect(p.Disable()).To(Succeed())
		Expect(p.Clear()).To(Succeed())
		Expect(timed(func() { Expect(c.Ping(ctx).Err()).To(Succeed()) })).To(BeNumerically("<", time.Second))
	})

	It("records every change with its time, in order", func() {
		before := time.Now()
		Expect(p.Disable()).To(Succeed())
		Expect(p.Enable()).To(Succeed())
		Expect(p.SetLatency(50*time.Millisecond, 10*time.Millisecond)).To(Succeed())
		Expect(p.ResetPeer(20 * time.Millisecond)).To(Succeed())
		Expect(p.Clear()).To(Succeed())
		tl := p.Timeline()
		var actions []string
		for _, ch := range tl {
			Expect(ch.Time).NotTo(BeTemporally("<", before))
			actions = append(actions, ch.Action)
		}
		Expect(actions).To(Equal([]string{"disable", "enable", "latency", "reset_peer", "clear"}))
		Expect(tl[2]).To(And(HaveField("Latency", 50*time.Millisecond), HaveField("Jitter", 10*time.Millisecond)))
		Expect(tl[3]).To(HaveField("Latency", 20*time.Millisecond))
	})

	It("refuses a latency whose jitter exceeds it", func() {
		Expect(p.SetLatency(10*time.Millisecond, 20*time.Millisecond)).To(MatchError(ContainSubstring("jitter")))
		Expect(p.ResetPeer(-time.Second)).To(HaveOccurred())
	})

	It("leaves no connection open and no goroutine accepting after Close", func() {
		Expect(c.Ping(ctx).Err()).To(Succeed())
		Expect(p.Close()).To(Succeed())
		Expect(p.Close()).To(Succeed(), "closing twice is a no-op")
		Eventually(accepting).WithTimeout(settle).Should(BeFalse())
		_, err := net.DialTimeout("tcp", p.Addr(), failFast)
		Expect(err).To(HaveOccurred())
		Expect(c.Ping(ctx).Err()).To(HaveOccurred())
		Expect(p.Enable()).To(MatchError(proxy.ErrClosed))
		Expect(p.Clear()).To(MatchError(proxy.ErrClosed))
	})
})

var _ = Describe("New", func() {
	It("refuses an upstream off loopback without AllowRemote, before dialling", func() {
		for _, up := range []string{"192.0.2.1:6379", "redis.example.com:6379", "[2001:db8::1]:6379"} {
			_, err := proxy.New("redis", up, proxy.Options{})
			Expect(err).To(MatchError(proxy.ErrRemoteUpstream), up)
		}
	})

	It("takes loopback upstreams in any spelling", func() {
		for _, up := range []string{"127.0.0.1:6379", "127.0.0.2:6379", "localhost:6379", "[::1]:6379"} {
			p, err := proxy.New("redis", up, proxy.Options{})
			Expect(err).NotTo(HaveOccurred(), up)
			Expect(p.Close()).To(Succeed())
		}
	})

	It("takes a remote upstream when allowed, dialling it only for a client", func() {
		p, err := proxy.New("redis", "192.0.2.1:6379", proxy.Options{AllowRemote: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Close()).To(Succeed())
	})

	It("refuses an upstream that is not host:port", func() {
		for _, up := range []string{"127.0.0.1", "127.0.0.1:0", "127.0.0.1:http", "redis://127.0.0.1:6379"} {
			_, err := proxy.New("redis", up, proxy.Options{})
			Expect(err).To(HaveOccurred(), up)
		}
	})
})
