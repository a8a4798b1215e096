package cli_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// dlqNamespaceLane holds the specs of a --namespace that holds nothing (a
// typo) on one Redis: start returns its address.
func dlqNamespaceLane(name string, start func() string) {
	Describe("a faultline dlq read of a namespace that holds nothing, on "+name, func() {
		var (
			addr, url string
			ctx       = context.Background()
		)
		BeforeEach(func() {
			addr = start()
			url = "redis://" + addr + "/0"
			seedDLQ(url)
			// staging: an empty DLQ, but the namespace exists (an audit
			// record, the layout key).
			_, err := storeIn(url, stagingNamespace).Audit(ctx, dlq.AuditRecord{At: time.Now(), By: "spec", Via: "cli", Action: "requeue"})
			Expect(err).NotTo(HaveOccurred())
		})

		It("says so on stderr, naming the namespaces that hold faultline keys there, and still exits as for an empty DLQ", func() {
			note := fmt.Sprintf(`namespace "opz" holds nothing at %s; namespaces here: ops, staging`, addr)
			for _, args := range [][]string{{"stats"}, {"stats", "-o", "json"}, {"list"}, {"list", "-o", "jsonl"}, {"audit"}, {"export"}} {
				out, errOut, code := dlqRunIn(url, "opz", args...)
				Expect(code).To(Equal(cli.ExitOK), "%v: %s", args, errOut)
				Expect(errOut).To(ContainSubstring(note), "%v", args)
				Expect(out).NotTo(ContainSubstring("holds nothing"), "%v: the note is on stderr only", args)
			}
			_, errOut, code := dlqRunIn(url, "opz", "show", "ord-1")
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(ContainSubstring(note))
			Expect(errOut).To(ContainSubstring(`no DLQ entry with ID "ord-1" in namespace "opz"`))

			By("a namespace that exists, its DLQ empty or not: no note")
			for _, ns := range []string{dlqNamespace, stagingNamespace} {
				for _, args := range [][]string{{"stats"}, {"list"}, {"audit"}} {
					_, errOut, code := dlqRunIn(url, ns, args...)
					Expect(code).To(Equal(cli.ExitOK), "%s %v: %s", ns, args, errOut)
					Expect(errOut).To(BeEmpty(), "%s %v", ns, args)
				}
			}
		})

		It("counts a namespace holding only keys other than the DLQ's (a fleet's breaker) as holding something, and says when none holds any", func() {
			c := redisstore.NewClient(url)
			DeferCleanup(c.Close)
			Expect(c.HSet(ctx, redisstore.Prefix("fleet-only")+":breaker:pay", "st", "closed").Err()).To(Succeed())
			_, errOut, code := dlqRunIn(url, "fleet-only", "stats")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(errOut).To(BeEmpty())
			_, errOut, _ = dlqRunIn(url, "opz", "stats")
			Expect(errOut).To(ContainSubstring("namespaces here: fleet-only, ops, staging"))

			Expect(c.FlushDB(ctx).Err()).To(Succeed())
			Expect(c.Set(ctx, "app:unrelated", "1", 0).Err()).To(Succeed())
			_, errOut, code = dlqRunIn(url, "opz", "list")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(errOut).To(ContainSubstring(fmt.Sprintf(`namespace "opz" holds nothing at %s; no namespace holds faultline keys here (a wrong --redis-url or database?)`, addr)))
		})
	})
}

var _ = Describe("faultline dlq and a namespace that holds nothing", func() {
	dlqNamespaceLane("miniredis", func() string { return redistest.Mini(1).Addr() })
	dlqNamespaceLane("a real redis-server", func() string {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		return srv.Addr
	})
	// miniredis answers a SCAN with every key at once: the bound is seen on
	// a real Redis only.
	It("scans a bounded number of keys on a real Redis, and says when it stopped before the end", func() {
		ctx := context.Background()
		srv := startRedis()
		DeferCleanup(srv.Stop)
		url := "redis://" + srv.Addr + "/0"
		seedDLQ(url)
		c := redisstore.NewClient(url)
		DeferCleanup(c.Close)
		pipe := c.Pipeline()
		for i := range 500 {
			pipe.Set(ctx, fmt.Sprintf("app:key:%d", i), "x", 0)
		}
		_, err := pipe.Exec(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cli.SetNamespaceScan(2, 10))
		_, errOut, code := dlqRunIn(url, "opz", "stats")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		Expect(errOut).To(MatchRegexp(`namespace "opz" holds nothing at \S+ that faultline dlq reads \(no DLQ, queue or audit key\); namespaces here \(from a partial scan, about 20 of 5\d\d keys\): `))
		Expect(strings.Count(errOut, "\n")).To(Equal(1), "one line")
	})
})
