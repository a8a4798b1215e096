package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gstruct"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// seedFixture is the layout/seed package's Python script that writes a seed
// DLQ the way the tutorial's code does (nine entries, one corrupt).
var seedFixture = filepath.Join("..", "..", "..", "..", "layout", "seed", "testdata", "fixture.py")

// writeSeedFixture runs the fixture with /usr/bin/python3 (Debian's
// python3-redis) against the Redis at addr, database 0.
func writeSeedFixture(addr string) {
	GinkgoHelper()
	host, port, ok := strings.Cut(addr, ":")
	Expect(ok).To(BeTrue(), addr)
	Expect(host).To(Equal("127.0.0.1"), "loopback only")
	out, err := exec.Command("/usr/bin/python3", seedFixture, host, port, "0", "").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s", out)
	Expect(string(out)).To(ContainSubstring("dead_letter 6"))
}

// seedRun runs faultline dlq with args on the Redis at addr.
func seedRun(addr string, args ...string) (stdout, stderr string, code int) {
	GinkgoHelper()
	return run(append(append([]string{"dlq"}, args...), "--redis-url", "redis://"+addr+"/0")...)
}

type seedListDoc struct {
	Entries []struct {
		Ref      string `json:"ref"`
		List     string `json:"list"`
		Position int64  `json:"position"`
		Task     string `json:"task"`
		JobID    string `json:"job_id"`
		NoID     bool   `json:"no_id"`
		Error    string `json:"error"`
		Severity string `json:"severity"`
		Status   string `json:"status"`
		Retries  int    `json:"retries"`
		Corrupt  bool   `json:"corrupt"`
	} `json:"entries"`
	NextCursor string `json:"next_cursor"`
}

// seedLane holds the --layout seed specs on one Redis: start returns the
// address of an empty database 0.
func seedLane(name string, start func() string) {
	Describe("faultline dlq --layout seed on "+name, func() {
		var (
			addr string
			rdb  *redis.Client
			ctx  = context.Background()
		)
		BeforeEach(func() {
			addr = start()
			rdb = redisstore.NewClient(addr)
			DeferCleanup(rdb.Close)
			writeSeedFixture(addr)
		})

		list := func(args ...string) seedListDoc {
			GinkgoHelper()
			out, errOut, code := seedRun(addr, append([]string{"list", "--layout", "seed", "-o", "json"}, args...)...)
			Expect(code).To(Equal(cli.ExitOK), errOut)
			var doc seedListDoc
			Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed(), out)
			return doc
		}
		refOf := func(doc seedListDoc, list string, pos int64) string {
			GinkgoHelper()
			for _, e := range doc.Entries {
				if e.List == list && e.Position == pos {
					return e.Ref
				}
			}
			Fail("no entry " + list + "@" + strconv.FormatInt(pos, 10) + " listed")
			return ""
		}

		It("lists every entry, newest first per list, a corrupt one as CORRUPT, a page at a time", func() {
			doc := list()
			Expect(doc.Entries).To(HaveLen(9))
			Expect(doc.NextCursor).To(BeEmpty())
			e := doc.Entries[2]
			Expect([]any{e.List, e.Position, e.Corrupt, e.Status}).To(Equal([]any{"dead_letter", int64(3), true, "corrupt"}))
			Expect(doc.Entries[3]).To(gstruct.MatchFields(gstruct.IgnoreExtras, gstruct.Fields{"Task": Equal("charge"), "JobID": Equal("job-7"),
				"Error": Equal("card declined"), "Status": Equal("failed"), "Retries": Equal(1)}))
			Expect(doc.Entries[8]).To(gstruct.MatchFields(gstruct.IgnoreExtras, gstruct.Fields{"List": Equal("dlq:high"), "Severity": Equal("high"), "Task": Equal("auth")}))
			Expect(doc.Entries[0]).To(gstruct.MatchFields(gstruct.IgnoreExtras, gstruct.Fields{"Task": Equal("report"), "JobID": BeEmpty(),
				"NoID": BeTrue(), "Corrupt": BeFalse(), "Status": Equal("failed")}), "a job without an ID is a valid entry, named by its ref")
			Expect(doc.Entries[3].NoID).To(BeFalse(), "job-7 has its ID")
			Expect(doc.Entries[0].Ref).To(MatchRegexp(`^dead_letter@5#[0-9a-f]{12}$`))

			var seen []string
			cursor := ""
			for range 20 {
				args := []string{"--limit", "4"}
				if cursor != "" {
					args = append(args, "--cursor", cursor)
				}
				p := list(args...)
				for _, e := range p.Entries {
					seen = append(seen, e.Ref)
				}
				if cursor = p.NextCursor; cursor == "" {
					break
				}
			}
			all := make([]string, len(doc.Entries))
			for i, e := range doc.Entries {
				all[i] = e.Ref
			}
			Expect(seen).To(Equal(all))

			Expect(list("--severity", "medium,high").Entries).To(HaveLen(2))
			Expect(list("--error-text", "TIMEOUT").Entries).To(HaveLen(4))

			out, _, code := seedRun(addr, "list", "--layout", "seed")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(MatchRegexp(`(?m)^REF\s+STATUS\s+SEVERITY\s+TASK\s+JOB\s+RETRIES\s+ERROR$`))
			Expect(out).To(MatchRegexp(`(?m)^dead_letter@3#[0-9a-f]{12}\s+CORRUPT\s+.*corrupt: not JSON`))
		})

		It("shows an entry whole, and a corrupt one with its raw bytes", func() {
			doc := list()
			out, errOut, code := seedRun(addr, "show", refOf(doc, "dead_letter", 2), "--layout", "seed")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("job ID        job-7"))
			Expect(out).To(ContainSubstring(`"amount": 70`))

			out, errOut, code = seedRun(addr, "show", "dead_letter@3", "--layout", "seed")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("CORRUPT (not JSON)"))
			Expect(out).To(ContainSubstring(`{"job": {"task": "payment", "amo`))

			_, errOut, code = seedRun(addr, "show", "dead_letter@99", "--layout", "seed")
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(ContainSubstring("no entry at dead_letter@99"))
		})

		It("requeues one of two byte-identical entries once: the same ref again is already reprocessing, the twin untouched", func() {
			doc := list()
			twin := refOf(doc, "dead_letter", 5)
			out, errOut, code := seedRun(addr, "requeue", twin, "--layout", "seed", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("stated 1, moved 1, skipped 0"))
			out, errOut, code = seedRun(addr, "requeue", twin, "--layout", "seed", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("stated 1, moved 0, skipped 1 (already-reprocessing 1)"))
			Expect(rdb.LLen(ctx, "default").Val()).To(Equal(int64(1)))
			Expect(rdb.LIndex(ctx, "dead_letter", -5).Val()).To(ContainSubstring(`"status": "failed"`), "the twin at position 4")

			out, errOut, code = seedRun(addr, "show", twin, "--layout", "seed")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("entry dead_letter@5#"))
			Expect(out).To(ContainSubstring(": reprocessing"))
			Expect(errOut).To(ContainSubstring("is now reprocessing (its status changed since it was listed)"))
		})

		It("shows an entry by its ref after a trim moved it, and says so", func() {
			for i := range 9 { // dlq:low: the fixture's one and nine more, full at ten
				Expect(rdb.LPush(ctx, "dlq:low", fmt.Sprintf(`{"job": {"task": "low-%d"}, "error": "e", "type": "ValueError", "severity": "LOW", "retries": 1, "timestamp": "t"}`, i)).Err()).To(Succeed())
			}
			doc := list("--severity", "low")
			ref := refOf(doc, "dlq:low", 4)
			for i := range 2 { // the tutorial's push and LTRIM of a full list
				Expect(rdb.LPush(ctx, "dlq:low", fmt.Sprintf(`{"job": {"task": "late-%d"}}`, i)).Err()).To(Succeed())
				Expect(rdb.LTrim(ctx, "dlq:low", 0, 9).Err()).To(Succeed())
			}
			out, errOut, code := seedRun(addr, "show", ref, "--layout", "seed", "-o", "json")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			var v struct {
				Ref       string `json:"ref"`
				Position  int64  `json:"position"`
				Task      string `json:"task"`
				Changed   bool   `json:"changed_since_listed"`
				MovedFrom string `json:"moved_from"`
			}
			Expect(json.Unmarshal([]byte(out), &v)).To(Succeed(), out)
			Expect(v.Position).To(BeEquivalentTo(2))
			Expect(v.Task).To(Equal("low-3"))
			Expect(v.Changed).To(BeFalse())
			Expect(v.MovedFrom).To(Equal(ref))
			Expect(v.Ref).To(HavePrefix("dlq:low@2#"))
			Expect(errOut).To(ContainSubstring("has moved to " + v.Ref))

			out, errOut, code = seedRun(addr, "requeue", ref, "--layout", "seed", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("stated 1, moved 1, skipped 0"))
			Expect(rdb.LRange(ctx, "default", 0, -1).Val()).To(Equal([]string{`{"task": "low-3"}`}))
		})

		It("requeues --all only what the prompt counted: an entry dead-lettered while it is open is left", func() {
			ptmx := seedPromptTerminal()
			prompt := &promptWatch{seen: make(chan struct{})}
			var out bytes.Buffer
			done := make(chan int, 1)
			go func() {
				defer GinkgoRecover()
				done <- cli.Main(ctx, []string{"dlq", "requeue", "--all", "--layout", "seed", "--error-text", "timeout",
					"--redis-url", "redis://" + addr + "/0"}, &out, prompt)
			}()
			Eventually(prompt.seen).WithTimeout(10 * time.Second).Should(BeClosed())
			Expect(prompt.String()).To(ContainSubstring("requeue 4 entries (of 4 matching, among the 9 entries there now)"))
			Expect(rdb.LPush(ctx, "dead_letter", `{"job": {"task": "late"}, "error": "Gateway timeout", "retries": 3, "status": "failed"}`).Err()).To(Succeed())
			_, err := ptmx.Write([]byte("y\n"))
			Expect(err).NotTo(HaveOccurred())
			Eventually(done).WithTimeout(10 * time.Second).Should(Receive(Equal(cli.ExitOK)))
			Expect(out.String()).To(ContainSubstring("stated 4, moved 4, skipped 0"))
			Expect(rdb.LRange(ctx, "default", 0, -1).Val()).NotTo(ContainElement(ContainSubstring("late")))
			Expect(rdb.LIndex(ctx, "dead_letter", 0).Val()).To(ContainSubstring(`"status": "failed"`))

			out2, _, code := seedRun(addr, "requeue", "--all", "--layout", "seed", "--error-text", "timeout", "--yes")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out2).To(ContainSubstring("stated 5, moved 1, skipped 4 (already-reprocessing 4)"), "the next run takes it")
		})

		It("requeues by ref onto the work list and marks the entry reprocessing, once; a changed entry is refused", func() {
			doc := list()
			ref := refOf(doc, "dead_letter", 0)
			out, errOut, code := seedRun(addr, "requeue", ref, "--layout", "seed", "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("would requeue " + ref + " (failed, payment) onto default"))
			Expect(rdb.LLen(ctx, "default").Val()).To(BeZero())

			out, errOut, code = seedRun(addr, "requeue", ref, refOf(doc, "dead_letter", 3), "--layout", "seed", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring(ref + ": requeued"))
			Expect(out).To(ContainSubstring("stated 2, moved 1, skipped 1 (not-requeueable 1)"))
			Expect(rdb.LRange(ctx, "default", 0, -1).Val()).To(Equal([]string{`{"task": "payment", "amount": 100}`}))
			Expect(rdb.LIndex(ctx, "dead_letter", -1).Val()).To(ContainSubstring(`"status": "reprocessing"`))

			out, _, code = seedRun(addr, "requeue", ref, "--layout", "seed", "--yes")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(ContainSubstring("stated 1, moved 0, skipped 1 (already-reprocessing 1)"))
			Expect(rdb.LLen(ctx, "default").Val()).To(Equal(int64(1)))

			// The entry at position 1 changes after it was listed.
			changed := refOf(doc, "dead_letter", 1)
			Expect(rdb.LSet(ctx, "dead_letter", -2, `{"job": {"task": "other"}, "error": "x", "status": "failed"}`).Err()).To(Succeed())
			out, _, code = seedRun(addr, "requeue", changed, "--layout", "seed", "--yes", "--to", "retry")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(ContainSubstring("stated 1, moved 0, skipped 1 (changed-since-listed 1)"))
			Expect(rdb.LLen(ctx, "retry").Val()).To(BeZero())

			_, errOut, code = seedRun(addr, "requeue", "dead_letter@1", "--layout", "seed", "--yes")
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(ContainSubstring("no #DIGEST"))
		})

		It("requeues every entry a filter selects: a dry run counts, --yes moves each once", func() {
			out, errOut, code := seedRun(addr, "requeue", "--all", "--layout", "seed", "--error-text", "timeout", "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("dry run: 4 entries would be requeued; nothing changed"))
			Expect(rdb.LLen(ctx, "default").Val()).To(BeZero())

			_, errOut, code = seedRun(addr, "requeue", "--all", "--layout", "seed")
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(ContainSubstring("; add --yes"))

			out, errOut, code = seedRun(addr, "requeue", "--all", "--layout", "seed", "--error-text", "timeout", "--yes", "-o", "json", "--batch", "1")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			var sum requeueDoc
			Expect(json.Unmarshal([]byte(out), &sum)).To(Succeed(), out)
			Expect([]int{sum.Stated, sum.Moved, sum.Skipped}).To(Equal([]int{4, 4, 0}), "stated, moved, skipped")
			Expect(rdb.LLen(ctx, "default").Val()).To(Equal(int64(4)))

			out, _, code = seedRun(addr, "requeue", "--all", "--layout", "seed", "--yes")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(ContainSubstring("stated 9, moved 4, skipped 5 (already-reprocessing 4, not-requeueable 1)"))
			Expect(rdb.LLen(ctx, "default").Val()).To(Equal(int64(8)))
		})

		It("refuses to migrate without --yes when stdin is not a terminal: exit 2, ending \"add --yes\", nothing migrated", func() {
			stdinFrom("")
			out, errOut, code := seedRun(addr, "migrate", "--from-layout", "seed", "--namespace", dlqNamespace)
			Expect(code).To(Equal(cli.ExitInvalid), errOut)
			Expect(errOut).To(HaveSuffix("add --yes\n"))
			Expect(errOut).To(ContainSubstring(`refusing to migrate the seed DLQ at ` + addr + ` into namespace "ops"`))
			Expect(out).To(BeEmpty())
			Expect(rdb.Exists(ctx, redisstore.Prefix(dlqNamespace)+":dlq:entries", redisstore.AuditStreamKey(dlqNamespace)).Val()).To(BeZero(), "nothing migrated, nothing audited")

			out, errOut, code = seedRun(addr, "migrate", "--from-layout", "seed", "--namespace", dlqNamespace, "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring(`migrated 9 entries`))
		})

		It("migrates into faultline's layout, losing nothing, and a rerun migrates nothing new", func() {
			out, errOut, code := seedRun(addr, "migrate", "--from-layout", "seed", "--namespace", dlqNamespace, "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring(`dry run: 9 entries of the seed DLQ at ` + addr + ` would be migrated into namespace "ops" (1 corrupt`))

			out, errOut, code = seedRun(addr, "migrate", "--from-layout", "seed", "--namespace", dlqNamespace, "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring(`migrated 9 entries of the seed DLQ at ` + addr + ` into namespace "ops" (new 8, merged 0, corrupt kept with their bytes 1)`))
			Expect(out).To(ContainSubstring("already migrated 0, left 0, seen 9"))

			out, errOut, code = seedRun(addr, "list", "--namespace", dlqNamespace, "-o", "jsonl")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			rows := jsonLines(out)
			Expect(rows).To(HaveLen(9))
			Expect(ids(rows)).To(ContainElement("job-7"))
			Expect(rows).To(ContainElement(HaveKeyWithValue("corrupt", true)))

			out, errOut, code = seedRun(addr, "migrate", "--from-layout", "seed", "--namespace", dlqNamespace, "-o", "json", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			var v struct {
				Migrated int `json:"migrated"`
				Already  int `json:"already_migrated"`
			}
			Expect(json.Unmarshal([]byte(out), &v)).To(Succeed(), out)
			Expect([]int{v.Migrated, v.Already}).To(Equal([]int{0, 9}), "migrated, already")
			Expect(rdb.LLen(ctx, "dead_letter").Val()).To(Equal(int64(6)), "the seed lists are left as they were")

			By("the same lists into another namespace: migrated whole, its own marker")
			out, errOut, code = seedRun(addr, "migrate", "--from-layout", "seed", "--namespace", "other", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring(`migrated 9 entries of the seed DLQ at ` + addr + ` into namespace "other"`))
			Expect(out).To(ContainSubstring("already migrated 0, left 0, seen 9"))
			out, errOut, code = seedRun(addr, "list", "--namespace", "other", "-o", "jsonl")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(jsonLines(out)).To(HaveLen(9))
			out, errOut, code = seedRun(addr, "migrate", "--from-layout", "seed", "--namespace", "other", "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("dry run: 0 entries"))
			Expect(out).To(ContainSubstring("9 already migrated"))
		})

		It("records every seed requeue in the audit stream of --namespace: by ref with the refs, --all started and done", func() {
			doc := list()
			ref := refOf(doc, "dead_letter", 0)
			_, errOut, code := seedRun(addr, "requeue", ref, "--layout", "seed", "--namespace", dlqNamespace, "--yes", "--by", "alice")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			_, errOut, code = seedRun(addr, "requeue", "--all", "--layout", "seed", "--severity", "high", "--namespace", dlqNamespace, "--yes", "--by", "bob")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			_, errOut, code = seedRun(addr, "requeue", "--all", "--layout", "seed", "--namespace", dlqNamespace, "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)

			out, errOut, code := seedRun(addr, "audit", "--namespace", dlqNamespace, "-o", "jsonl")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			rows := jsonLines(out)
			Expect(rows).To(HaveLen(3), "a dry run records nothing")
			Expect(rows[2]).To(And(HaveKeyWithValue("action", "requeue"), HaveKeyWithValue("by", "alice"), HaveKeyWithValue("via", "cli"),
				HaveKeyWithValue("ids", []any{ref}), HaveKeyWithValue("stated", 1.0), HaveKeyWithValue("moved", 1.0),
				HaveKeyWithValue("note", ContainSubstring("the seed DLQ at "+addr))))
			Expect(rows[1]).To(And(HaveKeyWithValue("phase", "started"), HaveKeyWithValue("by", "bob"), HaveKeyWithValue("stated", 1.0),
				HaveKeyWithValue("filter", "--layout seed --severity high")))
			Expect(rows[0]).To(And(HaveKeyWithValue("phase", "done"), HaveKeyWithValue("moved", 1.0)))
		})

		It("says which list requeue --all skipped whole because its cut-off was trimmed away while the prompt was open", func() {
			ptmx := seedPromptTerminal()
			prompt := &promptWatch{seen: make(chan struct{})}
			var out bytes.Buffer
			done := make(chan int, 1)
			go func() {
				defer GinkgoRecover()
				done <- cli.Main(ctx, []string{"dlq", "requeue", "--all", "--layout", "seed", "--severity", "high,medium",
					"--redis-url", "redis://" + addr + "/0"}, &out, prompt)
			}()
			Eventually(prompt.seen).WithTimeout(10 * time.Second).Should(BeClosed())
			Expect(prompt.String()).To(ContainSubstring("requeue 2 entries"))
			for i := range 3 { // the tutorial: dead letters into a full dlq:high of one
				Expect(rdb.LPush(ctx, "dlq:high", fmt.Sprintf(`{"job": {"task": "n%d"}, "error": "e", "type": "ValueError", "severity": "HIGH", "retries": 1, "timestamp": "x"}`, i)).Err()).To(Succeed())
				Expect(rdb.LTrim(ctx, "dlq:high", 0, 0).Err()).To(Succeed())
			}
			_, err := ptmx.Write([]byte("y\n"))
			Expect(err).NotTo(HaveOccurred())
			Eventually(done).WithTimeout(10 * time.Second).Should(Receive(Equal(cli.ExitOK)))
			Expect(out.String()).To(ContainSubstring("stated 2, moved 1, skipped 1 (cut-off-not-found in dlq:high 1)"))
			Expect(prompt.String()).To(ContainSubstring("warning: dlq:high skipped whole"))
			Expect(rdb.LRange(ctx, "default", 0, -1).Val()).To(ConsistOf(ContainSubstring("email")))
		})

		It("documents in migrate --help what it cannot tell apart: byte-identical entries under a trim", func() {
			out, _, code := seedRun(addr, "migrate", "--help")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(ContainSubstring("Limit: byte-identical entries of one list are told apart only by their order"))
			Expect(out).To(ContainSubstring("a rerun counts\nthe new ones as already migrated"))
		})

		It("refuses a bad --layout and the filters the seed layout cannot apply, exit 2 naming them", func() {
			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{"list", "--layout", "naive"}, `--layout: unknown value "naive" (allowed: faultline, seed)`},
				{[]string{"stats", "--layout", "naive"}, `--layout: unknown value "naive" (allowed: faultline, seed)`},
				{[]string{"stats", "--layout", "seed"}, "works on faultline's layout only"},
				{[]string{"list", "--layout", "seed", "--task", "x", "--since", "2h"}, "--task, --since: not available with --layout seed"},
				{[]string{"list", "--layout", "seed", "--status", "requeued"}, `--status: unknown status "requeued" of the seed layout (allowed: failed, reprocessing, deleted)`},
				{[]string{"list", "--layout", "seed", "--cursor", "zz"}, "--cursor"},
				{[]string{"list", "--prefix", "app:"}, "--prefix names the seed layout's keys"},
				{[]string{"show", "nolist@1", "--layout", "seed"}, `no list "nolist" in the seed layout`},
				{[]string{"requeue", "--all", "--layout", "seed", "--reset-attempts", "--yes"}, "--reset-attempts"},
				{[]string{"migrate", "--from-layout", "naive"}, `--from-layout: unknown value "naive" (allowed: seed)`},
			} {
				_, errOut, code := seedRun(addr, tc.args...)
				Expect(code).To(Equal(cli.ExitInvalid), strings.Join(tc.args, " ")+": "+errOut)
				Expect(errOut).To(ContainSubstring(tc.want), strings.Join(tc.args, " "))
			}
			Expect(rdb.LLen(ctx, "default").Val()).To(BeZero())
		})
	})
}

var _ = Describe("faultline dlq --layout seed", func() {
	seedLane("miniredis", func() string { return redistest.Mini(1).Addr() })
	seedLane("a real redis-server", func() string {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		return srv.Addr
	})
})

// seedPromptTerminal makes the process's stdin a terminal (the slave side of
// a new pseudo-terminal) until the spec ends, so that a confirmation is
// asked, and returns the master side, where the spec types the answer. (As
// dlq_edit_test.go's stdinTerminal, which keeps the master to itself.)
func seedPromptTerminal() *os.File {
	GinkgoHelper()
	if runtime.GOOS != "linux" {
		Skip("the prompt spec opens a pseudo-terminal the Linux way (/dev/ptmx)")
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(ptmx.Close)
	var unlock int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock)))
	Expect(errno).To(BeZero(), "unlock the pseudo-terminal")
	var n uint32
	_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n)))
	Expect(errno).To(BeZero(), "number of the pseudo-terminal")
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	Expect(err).NotTo(HaveOccurred())
	old := os.Stdin
	os.Stdin = tty
	DeferCleanup(func() {
		os.Stdin = old
		_ = tty.Close()
	})
	return ptmx
}

// promptWatch is a stderr that closes seen when a confirmation prompt
// ("[y/N] ") has been written to it.
type promptWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	seen chan struct{}
	once sync.Once
}

func (p *promptWatch) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, err := p.buf.Write(b)
	if strings.Contains(p.buf.String(), "[y/N] ") {
		p.once.Do(func() { close(p.seen) })
	}
	return n, err
}

func (p *promptWatch) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}
