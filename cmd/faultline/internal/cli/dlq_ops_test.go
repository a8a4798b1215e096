package cli_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// dlqOpsLane holds the specs of the operator extensions (delete by filter,
// error-text search, the audit stream) on one Redis.
func dlqOpsLane(name string, start func() string) {
	Describe("faultline dlq's bulk delete, error-text search and audit on "+name, func() {
		var (
			url string
			s   *redisstore.Store
			ctx = context.Background()
		)
		BeforeEach(func() {
			url = start()
			s = seedDLQ(url)
		})
		status := func(id string) dlq.Status {
			GinkgoHelper()
			e, err := s.Get(ctx, id)
			Expect(err).NotTo(HaveOccurred())
			return e.Status
		}
		audit := func() []dlq.AuditRecord {
			GinkgoHelper()
			page, err := dlq.Auditor(s).AuditLog(ctx, "", 100)
			Expect(err).NotTo(HaveOccurred())
			return page.Records
		}

		It("deletes every failed entry a filter matches: a dry run counts, the prompt states count and filter, the audit records started and done", func() {
			out, errOut, code := dlqRun(url, "delete", "--all", "--task", "charge", "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(MatchRegexp(`dry run: 3 entries would be deleted \(last failure before \S+\); nothing changed`))
			Expect(status("ord-1")).To(Equal(dlq.Failed))

			_, errOut, code = dlqRun(url, "delete", "--all", "--task", "charge")
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(And(ContainSubstring("refusing to delete 3 entries"), ContainSubstring(`matching --task="charge"`)))
			Expect(status("ord-1")).To(Equal(dlq.Failed))

			out, errOut, code = dlqRun(url, "delete", "--all", "--task", "charge", "--severity", "medium", "--yes", "--by", "alice", "--output", "json")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			var sum requeueDoc
			Expect(json.Unmarshal([]byte(out), &sum)).To(Succeed(), out)
			Expect([]int{sum.Stated, sum.Moved, sum.Skipped}).To(Equal([]int{2, 2, 0}), "stated, deleted, skipped")
			Expect(status("ord-2")).To(Equal(dlq.Deleted))
			Expect(status("ord-3")).To(Equal(dlq.Deleted))
			Expect(status("ord-1")).To(Equal(dlq.Failed), "high severity: not matched")
			e, err := s.Get(ctx, "ord-2")
			Expect(err).NotTo(HaveOccurred())
			Expect(e.Changes[len(e.Changes)-1].By).To(Equal("alice"))

			recs := audit()
			Expect(recs).To(HaveLen(2))
			done, started := recs[0], recs[1]
			Expect([]string{started.Phase, done.Phase}).To(Equal([]string{"started", "done"}))
			for _, r := range recs {
				Expect(r.Action).To(Equal("delete"))
				Expect(r.By).To(Equal("alice"))
				Expect(r.Via).To(Equal("cli"))
				Expect(r.Filter).To(Equal(`--severity="medium" --task="charge"`))
				Expect(r.Stated).To(Equal(2))
				Expect(r.CutOff).NotTo(BeZero())
			}
			Expect(done.Moved).To(Equal(2))

			out, errOut, code = dlqRun(url, "restore", "ord-2", "--by", "bob", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("ord-2: restored (failed)"))
			Expect(audit()[0]).To(And(
				HaveField("Action", "restore"), HaveField("By", "bob"), HaveField("IDs", []string{"ord-2"})))
		})

		It("finds entries by the text of their last error, case-insensitively, and requeues exactly those", func() {
			out, errOut, code := dlqRun(url, "list", "--error-text", "GATEWAY (ORD-", "--output", "jsonl")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(ids(jsonLines(out))).To(Equal([]string{"ord-3", "ord-2", "ord-1"}))

			out, errOut, code = dlqRun(url, "requeue", "--all", "--error-text", "gateway (ord-2)", "--yes", "--by", "carol")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("stated 1, moved 1, skipped 0"))
			Expect(status("ord-2")).To(Equal(dlq.Requeued))
			Expect(status("ord-3")).To(Equal(dlq.Failed))
			recs := audit()
			Expect(recs).To(HaveLen(2))
			Expect(recs[0]).To(And(HaveField("Action", "requeue"), HaveField("Phase", "done"), HaveField("Moved", 1),
				HaveField("Filter", `--error-text="gateway (ord-2)"`), HaveField("Note", "one more attempt")))

			out, _, code = dlqRun(url, "list", "--error-text", "no such text", "--output", "jsonl")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(BeEmpty())
		})

		It("refuses an empty filter value, a --to queue the namespace never had, and bad capacity flags, moving nothing", func() {
			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{"requeue", "--all", "--severity", "", "--yes"}, "--severity: an empty value selects nothing"},
				{[]string{"delete", "--all", "--task", " ", "--yes"}, "--task: an empty value selects nothing"},
				{[]string{"requeue", "--all", "--error-text", "", "--yes"}, "--error-text: an empty value"},
				{[]string{"requeue", "ord-1", "--to", "chrages", "--yes"}, `namespace "ops" has no queue "chrages" (it has: `},
				{[]string{"requeue", "ord-1", "--to", "", "--yes"}, "--to"},
				{[]string{"stats", "--overflow", "drop"}, "--overflow: unknown policy"},
				{[]string{"stats", "--capacity", "0"}, "--capacity must be at least 1"},
				{[]string{"purge", "--older-than", "NaNd", "--yes"}, "--older-than"},
				{[]string{"delete", "--all", "--batch", "0", "--yes"}, "--batch"},
			} {
				_, errOut, code := dlqRun(url, tc.args...)
				Expect(code).To(Equal(cli.ExitInvalid), "%v: %s", tc.args, errOut)
				Expect(errOut).To(ContainSubstring(tc.want), "%v", tc.args)
			}
			for _, id := range []string{"ord-1", "ord-2", "ord-3", "mail-4", "mail-5"} {
				Expect(status(id)).To(Equal(dlq.Failed), id)
			}
			_, errOut, code := dlqRun(url, "requeue", "ord-1", "--to", "brand-new", "--new-queue", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(status("ord-1")).To(Equal(dlq.Requeued))
		})

		It("restores several entries at once, saying what it skipped", func() {
			_, errOut, code := dlqRun(url, "delete", "--all", "--task", "charge", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			out, errOut, code := dlqRun(url, "restore", "ord-1", "ord-2", "mail-4", "--by", "gina", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("stated 3, restored 2, skipped 1"))
			Expect(status("ord-1")).To(Equal(dlq.Failed))
			Expect(status("ord-2")).To(Equal(dlq.Failed))
			Expect(status("ord-3")).To(Equal(dlq.Deleted))
			Expect(audit()[0]).To(And(HaveField("Action", "restore"), HaveField("Moved", 2), HaveField("Skipped", 1), HaveField("By", "gina")))
		})

		It("says in an import's dry run, as in the import, that a job of an entry's ID is live, and writes nothing over it", func() {
			file := GinkgoT().TempDir() + "/ops.jsonl"
			_, errOut, code := dlqRun(url, "export", "--output", file)
			Expect(code).To(Equal(cli.ExitOK), errOut)
			dst := storeIn(url, "live")
			Expect(dst.Enqueue(ctx, job.Job{ID: "ord-2", Task: "charge", Queue: "charges"}, time.Now())).To(Succeed())
			out, errOut, code := dlqRunIn(url, "live", "import", file, "--dry-run")
			Expect(code).To(Equal(cli.ExitInvalid), errOut)
			Expect(out).To(ContainSubstring("a job of that ID is queued or in flight: ord-2"))
			out, errOut, code = dlqRunIn(url, "live", "import", file, "--yes")
			Expect(code).To(Equal(cli.ExitInvalid), errOut)
			Expect(out).To(ContainSubstring("imported 5 of 6"))
			_, err := dst.Get(ctx, "ord-2")
			Expect(err).To(MatchError(dlq.ErrNotFound))
		})

		It("records requeues, quarantines and purges by ID in the audit stream, newest first", func() {
			_, errOut, code := dlqRun(url, "requeue", "ord-1", "ghost", "--yes", "--by", "dave")
			Expect(code).To(Equal(cli.ExitInvalid), errOut)
			_, errOut, code = dlqRun(url, "quarantine", "ord-3", "--reason", "poison", "--by", "erin", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			_, errOut, code = dlqRun(url, "purge", "--older-than", "1h", "--yes", "--by", "frank")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			recs := audit()
			Expect(recs).To(HaveLen(4))
			Expect(recs[3]).To(And(HaveField("Action", "requeue"), HaveField("By", "dave"), HaveField("IDs", []string{"ord-1", "ghost"}),
				HaveField("Stated", 2), HaveField("Moved", 1), HaveField("Skipped", 1)))
			Expect(recs[2]).To(And(HaveField("Action", "quarantine"), HaveField("Note", "poison")))
			Expect(recs[1]).To(And(HaveField("Action", "purge"), HaveField("Phase", "started"), HaveField("Stated", 6)))
			Expect(recs[0]).To(And(HaveField("Action", "purge"), HaveField("Phase", "done"), HaveField("Moved", 6), HaveField("By", "frank")))
		})
	})
}

var _ = Describe("faultline dlq operator extensions", func() {
	dlqOpsLane("miniredis", func() string { return "redis://" + redistest.Mini(1).Addr() + "/0" })
	dlqOpsLane("a real redis-server", func() string {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		return "redis://" + srv.Addr + "/0"
	})
})
