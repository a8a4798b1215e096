package cli_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// A bulk move states its count, then moves: a dead letter that arrives in
// between, its last failure before the cut-off, is moved too (issue 28:
// "stated 158, moved 159"). The report says so.
var _ = Describe("a bulk move that meets entries arriving between its count and its move", func() {
	var (
		url string
		s   *redisstore.Store
		ctx = context.Background()
	)
	BeforeEach(func() {
		url = "redis://" + redistest.Mini(1).Addr() + "/0"
		s = seedDLQ(url)
		// Between the count and the move, a worker dead-letters ord-9:
		// its last failure (dlqT0+9m) is before the cut-off (now), and it
		// matches the filter.
		DeferCleanup(cli.SetAfterBulkCount(func() {
			defer GinkgoRecover()
			_, err := s.Add(ctx, seedEntry("ord-9", "charge", classify.Medium, classify.Transient, 9, `{"amount":900}`), time.Now())
			Expect(err).NotTo(HaveOccurred())
		}))
	})
	audit := func() []dlq.AuditRecord {
		GinkgoHelper()
		page, err := s.AuditLog(ctx, "", 10)
		Expect(err).NotTo(HaveOccurred())
		return page.Records
	}

	It("requeue --all says it moved more than it stated, and why", func() {
		out, errOut, code := dlqRun(url, "requeue", "--all", "--task", "charge", "--yes")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		Expect(out).To(MatchRegexp(`^stated 3, moved 4 \(1 more than stated: entries came to match the filter while the move ran: dead letters written meanwhile with a last failure before the cut-off, or entries restored\), skipped 0; cut-off \S+\n$`))
		e, err := s.Get(ctx, "ord-9")
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Status).To(Equal(dlq.Requeued))
		done := audit()[0]
		Expect(done).To(And(HaveField("Phase", "done"), HaveField("Stated", 3), HaveField("Moved", 4), HaveField("Skipped", 0)))
		Expect(done.Note).To(ContainSubstring("1 more than stated"))
	})

	It("requeue --all --output json counts them apart", func() {
		out, errOut, code := dlqRun(url, "requeue", "--all", "--task", "charge", "--yes", "--output", "json")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		var sum struct {
			Stated, Moved, Skipped int
			More                   int `json:"more_than_stated"`
		}
		Expect(json.Unmarshal([]byte(out), &sum)).To(Succeed(), out)
		Expect([]int{sum.Stated, sum.Moved, sum.Skipped, sum.More}).To(Equal([]int{3, 4, 0, 1}), "stated, moved, skipped, more than stated")
	})

	It("delete --all says it too", func() {
		out, errOut, code := dlqRun(url, "delete", "--all", "--task", "charge", "--yes")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		Expect(out).To(MatchRegexp(`^stated 3, deleted 4 \(1 more than stated: entries came to match the filter while the move ran: `))
	})
})
