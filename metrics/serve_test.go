package metrics_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/metrics"
)

var _ = Describe("Serve", func() {
	const stopTimeout = 10 * time.Second

	DescribeTable("refuses an address off loopback unless allowed, before listening",
		func(addr string) {
			srv, err := metrics.Serve(context.Background(), addr, http.NotFoundHandler(), false)
			Expect(err).To(MatchError(metrics.ErrNotLoopback))
			Expect(srv).To(BeNil())
			Expect(metrics.CheckListenAddr(addr, true)).To(Succeed())
		},
		Entry("every interface, by an empty host", ":0"),
		Entry("every interface, IPv4", "0.0.0.0:0"),
		Entry("every interface, IPv6", "[::]:0"),
		Entry("a private address", "10.1.2.3:9090"),
		Entry("a host name (never resolved)", "metrics.example.com:9090"),
	)

	It("takes loopback addresses by IP or as localhost", func() {
		for _, a := range []string{"127.0.0.1:9090", "127.3.2.1:0", "[::1]:9090", "localhost:0"} {
			Expect(metrics.CheckListenAddr(a, false)).To(Succeed(), a)
		}
		Expect(metrics.CheckListenAddr("127.0.0.1", false)).To(MatchError(ContainSubstring("missing port")))
	})

	It("serves the handler on a free loopback port until its context is done, then stops", func() {
		set := metrics.New(metrics.Labels{Namespace: "ns", Scenario: "s"})
		set.Page("oncall")
		ctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		srv, err := metrics.Serve(ctx, "127.0.0.1:0", set.Handler(), false)
		Expect(err).NotTo(HaveOccurred())
		Expect(srv.Addr()).To(HavePrefix("127.0.0.1:"))
		Expect(srv.Addr()).NotTo(HaveSuffix(":0"))
		Expect(srv.URL()).To(Equal("http://" + srv.Addr() + "/metrics"))
		Expect(sample(scrape(srv.URL()), "faultline_pages_total", map[string]string{"receiver": "oncall"})).To(Equal(1.0))
		Consistently(srv.Done(), 50*time.Millisecond).ShouldNot(BeClosed())

		cancel()
		Eventually(srv.Done(), stopTimeout).Should(BeClosed())
		Expect(srv.Wait()).To(Succeed())
		_, err = net.DialTimeout("tcp", srv.Addr(), time.Second)
		Expect(err).To(HaveOccurred(), "the port still accepts after shutdown")
	})

	It("lets a scrape in progress finish when its context is done", func() {
		entered, release := make(chan struct{}), make(chan struct{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-release
			_, _ = io.WriteString(w, "done")
		})
		ctx, cancel := context.WithCancel(context.Background())
		srv, err := metrics.Serve(ctx, "127.0.0.1:0", h, false)
		Expect(err).NotTo(HaveOccurred())
		body := make(chan string, 1)
		go func() {
			defer GinkgoRecover()
			resp, err := http.Get("http://" + srv.Addr() + "/")
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body <- string(b)
		}()
		Eventually(entered, stopTimeout).Should(BeClosed())
		cancel()
		Consistently(srv.Done(), 50*time.Millisecond).ShouldNot(BeClosed())
		close(release)
		Eventually(body, stopTimeout).Should(Receive(Equal("done")))
		Eventually(srv.Done(), stopTimeout).Should(BeClosed())
		Expect(srv.Wait()).To(Succeed())
	})

	It("says why it cannot listen, wrapping the cause", func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(ln.Close)
		_, err = metrics.Serve(context.Background(), ln.Addr().String(), http.NotFoundHandler(), false)
		Expect(err).To(MatchError(ContainSubstring("metrics listen on " + ln.Addr().String())))
		var opErr *net.OpError
		Expect(errors.As(err, &opErr)).To(BeTrue())
	})

	It("does not listen when its context is already done", func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := metrics.Serve(ctx, "127.0.0.1:0", http.NotFoundHandler(), false)
		Expect(err).To(MatchError(context.Canceled))
	})

	It("writes a series with an empty scenario as the UI's (scenario=\"\")", func() {
		set := metrics.New(metrics.Labels{Namespace: "ui"})
		set.Requeued(1)
		srv := serve(set)
		resp, err := http.Get(srv.URL())
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Split(string(b), "\n")).To(ContainElement(`faultline_dlq_requeues_total{namespace="ui",scenario=""} 1`))
	})
})
