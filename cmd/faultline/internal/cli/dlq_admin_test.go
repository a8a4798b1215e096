package cli_test

import (
	"context"
	"encoding/json"
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

// dlqAdminLane holds the specs of faultline dlq audit and upgrade on one
// Redis: start returns the URL of an empty database.
func dlqAdminLane(name string, start func() string) {
	Describe("faultline dlq audit and upgrade on "+name, func() {
		var (
			url string
			s   *redisstore.Store
			ctx = context.Background()
		)
		BeforeEach(func() {
			url = start()
			s = seedDLQ(url)
		})

		layoutKey := redisstore.LayoutKey(dlqNamespace)
		// raw gives GET, DEL and SET on the Redis under the CLI.
		raw := func() (get func(string) string, del func(...string), set func(string, string)) {
			GinkgoHelper()
			c := redisstore.NewClient(url)
			DeferCleanup(c.Close)
			return func(k string) string { return c.Get(ctx, k).Val() },
				func(k ...string) { Expect(c.Del(ctx, k...).Err()).To(Succeed()) },
				func(k, v string) { Expect(c.Set(ctx, k, v, 0).Err()).To(Succeed()) }
		}

		It("audit lists the records newest first, a page at a time, in table, json and jsonl", func() {
			at := dlqT0.Add(time.Hour)
			for i, r := range []dlq.AuditRecord{
				{At: at, By: "alice", Via: "cli", Action: "requeue", Phase: "started", Filter: "--task charge", CutOff: at, Stated: 3},
				{At: at.Add(time.Second), By: "alice", Via: "cli", Action: "requeue", Phase: "done", Filter: "--task charge", CutOff: at, Stated: 3, Moved: 2, Skipped: 1},
				{At: at.Add(2 * time.Second), By: "bob", Via: "ui", Action: "quarantine", IDs: []string{"ord-1"}, Stated: 1, Moved: 1, Note: "poison"},
			} {
				_, err := s.Audit(ctx, r)
				Expect(err).NotTo(HaveOccurred(), "record %d", i)
			}

			out, errOut, code := dlqRun(url, "audit", "--output", "jsonl")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			rows := jsonLines(out)
			Expect(rows).To(HaveLen(3))
			Expect(rows[0]).To(And(HaveKeyWithValue("action", "quarantine"), HaveKeyWithValue("by", "bob"), HaveKeyWithValue("via", "ui"),
				HaveKeyWithValue("note", "poison"), HaveKeyWithValue("ids", []any{"ord-1"})))
			Expect(rows[1]).To(And(HaveKeyWithValue("phase", "done"), HaveKeyWithValue("moved", 2.0), HaveKeyWithValue("skipped", 1.0)))
			Expect(rows[2]).To(HaveKeyWithValue("phase", "started"))
			Expect(rows[2]).NotTo(HaveKey("payload"))

			GinkgoT().Setenv("COLUMNS", "200")
			out, _, code = dlqRun(url, "audit")
			Expect(code).To(Equal(cli.ExitOK))
			lines := strings.Split(strings.TrimSpace(out), "\n")
			Expect(lines).To(HaveLen(4))
			Expect(lines[0]).To(MatchRegexp(`^AT\s+BY\s+VIA\s+ACTION\s+PHASE\s+COUNTS\s+FILTER/IDS$`))
			Expect(lines[1]).To(MatchRegexp(`^2026-01-01 10:00:02\s+bob\s+ui\s+quarantine\s+-\s+stated 1, moved 1\s+ord-1 \(poison\)$`))
			Expect(lines[2]).To(MatchRegexp(`alice\s+cli\s+requeue\s+done\s+stated 3, moved 2, skipped 1\s+--task charge before 2026-01-01T10:00:00Z$`))
			// A narrow terminal cuts the last column.
			GinkgoT().Setenv("COLUMNS", "100")
			out, _, _ = dlqRun(url, "audit")
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				Expect(len([]rune(l))).To(BeNumerically("<=", 100), l)
			}
			Expect(out).To(ContainSubstring("…"))

			// Pages: every record once, in order, the cursor carried over.
			var seen []string
			cursor := ""
			for range 5 {
				args := []string{"audit", "--output", "json", "--limit", "2"}
				if cursor != "" {
					args = append(args, "--cursor", cursor)
				}
				out, errOut, code = dlqRun(url, args...)
				Expect(code).To(Equal(cli.ExitOK), errOut)
				var doc struct {
					Records []struct {
						Action, Phase string
					} `json:"records"`
					NextCursor string `json:"next_cursor"`
				}
				Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed(), out)
				for _, r := range doc.Records {
					seen = append(seen, r.Action+"/"+r.Phase)
				}
				if cursor = doc.NextCursor; cursor == "" {
					break
				}
			}
			Expect(seen).To(Equal([]string{"quarantine/", "requeue/done", "requeue/started"}))

			_, errOut, code = dlqRun(url, "audit", "--output", "jsonl", "--limit", "1")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(errOut).To(MatchRegexp(`next page: --cursor \d+-\d+`))

			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{"audit", "--limit", "0"}, "--limit must be between 1 and 10000"},
				{[]string{"audit", "--cursor", "1767225600000:ord-1"}, "is not a cursor faultline dlq audit printed"},
				{[]string{"audit", "--output", "yaml"}, "--output"},
			} {
				_, errOut, code := dlqRun(url, tc.args...)
				Expect(code).To(Equal(cli.ExitInvalid), strings.Join(tc.args, " ")+": "+errOut)
				Expect(errOut).To(ContainSubstring(tc.want))
			}
		})

		It("audit says so when there are no records", func() {
			out, errOut, code := dlqRun(url, "audit")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring(`no audit records in namespace "ops"`))
		})

		It("upgrade re-indexes data of before layout versions, dry run first, stamps the layout and audits it", func() {
			get, del, _ := raw()
			Expect(get(layoutKey)).To(Equal(fmt.Sprint(redisstore.LayoutVersion)), "the seeding store stamped the empty namespace")
			out, errOut, code := dlqRun(url, "upgrade")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring(`is at layout version 1 already: nothing to upgrade`))

			// Data of a faultline before versions, one entry's meta lost.
			prefix := redisstore.Prefix(dlqNamespace)
			del(layoutKey, prefix+":dlq:m:ord-2")

			out, errOut, code = dlqRun(url, "upgrade", "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring(`upgrade of namespace "ops" at`))
			Expect(out).To(MatchRegexp(`layout 0 -> 1\n\s+entries checked\s+6\n\s+re-indexed\s+1 \(would be\)\n\s+corrupt, kept\s+1\n`))
			Expect(out).To(ContainSubstring("dry run: nothing changed"))
			Expect(get(layoutKey)).To(BeEmpty())

			out, errOut, code = dlqRun(url, "upgrade", "--output", "json", "--by", "carol", "--batch", "2", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			var rep struct {
				From, To, Checked, Fixed, Corrupt int
				Stamped                           bool
			}
			Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed(), out)
			Expect(rep).To(Equal(struct {
				From, To, Checked, Fixed, Corrupt int
				Stamped                           bool
			}{0, 1, 6, 1, 1, true}))
			Expect(get(layoutKey)).To(Equal("1"))
			e, err := s.Get(ctx, "ord-2")
			Expect(err).NotTo(HaveOccurred())
			Expect(e.Status).To(Equal(dlq.Failed))
			out, _, code = dlqRun(url, "list", "--output", "jsonl", "--task", "charge")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(ids(jsonLines(out))).To(Equal([]string{"ord-3", "ord-2", "ord-1"}))

			out, _, code = dlqRun(url, "audit", "--output", "jsonl")
			Expect(code).To(Equal(cli.ExitOK))
			rows := jsonLines(out)
			Expect(rows).NotTo(BeEmpty())
			Expect(rows[0]).To(And(HaveKeyWithValue("action", "upgrade"), HaveKeyWithValue("by", "carol"), HaveKeyWithValue("via", "cli"),
				HaveKeyWithValue("stated", 6.0), HaveKeyWithValue("moved", 1.0)))
			Expect(rows[0]["note"]).To(ContainSubstring("layout 0 -> 1"))
		})

		It("refuses a namespace of a newer layout in every command, exit 2, naming both versions", func() {
			_, _, set := raw()
			set(layoutKey, "9")
			for _, args := range [][]string{{"stats"}, {"list"}, {"audit"}, {"upgrade"}, {"upgrade", "--dry-run"}, {"requeue", "ord-1", "--yes"}} {
				out, errOut, code := dlqRun(url, args...)
				Expect(code).To(Equal(cli.ExitInvalid), strings.Join(args, " ")+": "+errOut)
				Expect(errOut).To(ContainSubstring(`namespace "ops" has Redis layout version 9, newer than this faultline's layout version 1: use a newer faultline`))
				Expect(errOut).NotTo(ContainSubstring("Try:"))
				Expect(out).To(BeEmpty())
			}
			e, err := s.Get(ctx, "ord-1")
			Expect(err).NotTo(HaveOccurred())
			Expect(e.Status).To(Equal(dlq.Failed), "nothing was requeued")
		})
	})
}

var _ = Describe("faultline dlq audit and upgrade", func() {
	dlqAdminLane("miniredis", func() string { return "redis://" + redistest.Mini(1).Addr() + "/0" })
	dlqAdminLane("a real redis-server", func() string {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		return "redis://" + srv.Addr + "/0"
	})
})
