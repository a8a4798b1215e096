package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/fleet"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// dlqT0 is the seeded entries' time base: they failed at dlqT0+N minutes.
var dlqT0 = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// dlqNamespace is the namespace the specs seed (not the default one, so
// that --namespace is exercised).
const dlqNamespace = "ops"

// seedEntry is a dead job of task, failing with class and severity
// minutes after dlqT0.
func seedEntry(id, task string, sev classify.Severity, class classify.Class, minutes int, payload string) dlq.Entry {
	at := dlqT0.Add(time.Duration(minutes) * time.Minute)
	v := classify.Classification{Class: class, Severity: sev, Source: classify.SourceNone, Rule: "spec-rule"}
	return dlq.Entry{
		Job: job.Job{ID: id, Task: task, Queue: task + "s", Payload: []byte(payload), Attempts: 2, EnqueuedAt: at.Add(-time.Minute)},
		History: []dlq.Failure{
			{At: at.Add(-30 * time.Second), Attempt: 1, Error: "first try of " + id + " failed", ErrorType: "*net.OpError", Verdict: v},
			{At: at, Attempt: 2, Error: "http 502 from gateway (" + id + ")", ErrorType: "*failure.HTTPError", Verdict: v},
		},
		FirstFailedAt: at.Add(-30 * time.Second), LastFailedAt: at, Verdict: v, Reason: class.String(),
	}
}

// seedDLQ writes five entries and one corrupt one into the namespace
// dlqNamespace of the Redis at url, and returns the store.
func seedDLQ(url string) *redisstore.Store {
	GinkgoHelper()
	client := redisstore.NewClient(url)
	DeferCleanup(client.Close)
	s, err := redisstore.New(client, store.Config{Namespace: dlqNamespace})
	Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	_, err = s.Add(ctx, seedEntry("ord-1", "charge", classify.High, classify.Critical, 1,
		`{"amount":100,"card":"4242424242424242","api_key":"sk_live_abcdefghijklmnop"}`), time.Now())
	Expect(err).NotTo(HaveOccurred())
	_, err = s.AddBatch(ctx, []dlq.Entry{
		seedEntry("ord-2", "charge", classify.Medium, classify.Transient, 2, `{"amount":200}`),
		seedEntry("ord-3", "charge", classify.Medium, classify.Indeterminate, 3, `{"amount":300}`),
		seedEntry("mail-4", "email", classify.Low, classify.Permanent, 4, `not json`),
		seedEntry("mail-5", "email", classify.Medium, classify.Transient, 5, ``),
	}, time.Now())
	Expect(err).NotTo(HaveOccurred())
	Expect(s.WriteRaw(ctx, "bad-1", []byte(`{"job": {"id": "bad-1", truncated`))).To(Succeed())
	return s
}

// dlqRun runs faultline dlq with args on the Redis at url, in the seeded
// namespace.
func dlqRun(url string, args ...string) (stdout, stderr string, code int) {
	GinkgoHelper()
	return run(append(append([]string{"dlq"}, args...), "--redis-url", url, "--namespace", dlqNamespace)...)
}

// jsonLines parses one JSON object per line.
func jsonLines(out string) []map[string]any {
	GinkgoHelper()
	var rows []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		Expect(json.Unmarshal(sc.Bytes(), &m)).To(Succeed(), sc.Text())
		rows = append(rows, m)
	}
	return rows
}

func ids(rows []map[string]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i], _ = r["id"].(string)
	}
	return out
}

type listDoc struct {
	Entries []struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Corrupt bool   `json:"corrupt"`
	} `json:"entries"`
	NextCursor string `json:"next_cursor"`
}

type requeueDoc struct {
	DryRun  bool           `json:"dry_run"`
	Stated  int            `json:"stated"`
	Would   int            `json:"would_move"`
	Moved   int            `json:"moved"`
	Skipped int            `json:"skipped"`
	Reasons map[string]int `json:"skipped_by_reason"`
}

// dlqLane holds the faultline dlq specs on one Redis: start returns the
// URL of an empty database.
func dlqLane(name string, start func() string) {
	Describe("faultline dlq on "+name, func() {
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

		It("stats counts by status, severity, class and task, with the oldest and newest entry", func() {
			out, errOut, code := dlqRun(url, "stats", "--output", "json")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			var st struct {
				Total        int                 `json:"total"`
				Corrupt      int                 `json:"corrupt"`
				ByStatus     map[string]int      `json:"by_status"`
				BySeverity   map[string]int      `json:"by_severity"`
				ByClass      map[string]int      `json:"by_class"`
				ByTask       map[string]int      `json:"by_task"`
				OldestFailed struct{ ID string } `json:"oldest_failed"`
				Newest       struct {
					ID string
					At time.Time
				} `json:"newest_failed"`
			}
			Expect(json.Unmarshal([]byte(out), &st)).To(Succeed(), out)
			Expect(st.Total).To(Equal(6))
			Expect(st.Corrupt).To(Equal(1))
			Expect(st.ByStatus).To(HaveKeyWithValue("failed", 5))
			Expect(st.BySeverity).To(Equal(map[string]int{"high": 1, "medium": 3, "low": 1}))
			Expect(st.ByClass).To(HaveKeyWithValue("transient", 2))
			Expect(st.ByTask).To(Equal(map[string]int{"charge": 3, "email": 2}))
			Expect(st.OldestFailed.ID).To(Equal("ord-1"))
			Expect(st.Newest.ID).To(Equal("mail-5"))
			Expect(st.Newest.At).To(BeTemporally("==", dlqT0.Add(5*time.Minute)))

			out, _, code = dlqRun(url, "stats")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(ContainSubstring(`DLQ of namespace "ops" at ` + strings.TrimPrefix(strings.TrimSuffix(url, "/0"), "redis://")))
			Expect(out).To(MatchRegexp(`entries\s+6 \(corrupt: 1\)`))
			Expect(out).To(MatchRegexp(`by task\s+charge 3, email 2`))
		})

		It("stats shows the standalone workers' leader and the records relayed to it", func() {
			out, _, code := dlqRun(url, "stats")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(MatchRegexp(`leader\s+none: no standalone worker \(faultline worker --scenario\) has claimed it; relay log: 0 waiting`))
			_, err := s.ClaimLeader(ctx, fleet.DefaultRole, "w1/4242", time.Now(), time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.AppendAlerts(ctx, [][]byte{[]byte(`{}`)})).To(Succeed())
			out, _, code = dlqRun(url, "stats")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(MatchRegexp(`leader\s+w1/4242 \(term 1; its lease runs to \S+, renewed while it lives\); relay log: 1 waiting`))
			out, _, code = dlqRun(url, "stats", "--output", "json")
			Expect(code).To(Equal(cli.ExitOK))
			var st struct {
				Leader struct {
					Holder  string `json:"holder"`
					Term    int    `json:"term"`
					Held    bool   `json:"held"`
					Backlog int    `json:"relay_backlog"`
				} `json:"leader"`
			}
			Expect(json.Unmarshal([]byte(out), &st)).To(Succeed(), out)
			Expect(st.Leader.Holder).To(Equal("w1/4242"))
			Expect(st.Leader.Term).To(Equal(1))
			Expect(st.Leader.Held).To(BeTrue())
			Expect(st.Leader.Backlog).To(Equal(1))
		})

		It("lists newest first, filtered, a page at a time, in table, json and jsonl", func() {
			out, errOut, code := dlqRun(url, "list", "--output", "jsonl")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			rows := jsonLines(out)
			Expect(ids(rows)).To(Equal([]string{"mail-5", "mail-4", "ord-3", "ord-2", "ord-1", "bad-1"}))
			Expect(rows[5]).To(HaveKeyWithValue("corrupt", true))
			Expect(rows[0]).To(HaveKeyWithValue("error", "http 502 from gateway (mail-5)"))

			out, _, code = dlqRun(url, "list", "--output", "jsonl", "--severity", "medium", "--task", "charge")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(ids(jsonLines(out))).To(Equal([]string{"ord-3", "ord-2"}))

			out, _, code = dlqRun(url, "list", "-o", "jsonl", "--class", "transient,critical",
				"--since", dlqT0.Add(90*time.Second).Format(time.RFC3339), "--until", dlqT0.Add(5*time.Minute).Format(time.RFC3339))
			Expect(code).To(Equal(cli.ExitOK))
			Expect(ids(jsonLines(out))).To(Equal([]string{"ord-2"}))

			out, _, code = dlqRun(url, "list", "-o", "jsonl", "--error-type", "*failure.HTTPError", "--since", "3650d")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(jsonLines(out)).To(HaveLen(5))

			// Pages: every entry once, in order, the cursor carried over.
			var seen []string
			cursor := ""
			for range 10 {
				args := []string{"list", "--output", "json", "--limit", "2"}
				if cursor != "" {
					args = append(args, "--cursor", cursor)
				}
				out, errOut, code = dlqRun(url, args...)
				Expect(code).To(Equal(cli.ExitOK), errOut)
				var doc listDoc
				Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed(), out)
				for _, e := range doc.Entries {
					seen = append(seen, e.ID)
				}
				if cursor = doc.NextCursor; cursor == "" {
					break
				}
			}
			Expect(seen).To(Equal([]string{"mail-5", "mail-4", "ord-3", "ord-2", "ord-1", "bad-1"}))

			out, _, code = dlqRun(url, "list", "--limit", "3")
			Expect(code).To(Equal(cli.ExitOK))
			lines := strings.Split(strings.TrimSpace(out), "\n")
			Expect(lines).To(HaveLen(5))
			Expect(lines[0]).To(MatchRegexp(`^ID\s+LAST FAILED\s+STATUS\s+SEVERITY\s+CLASS\s+TASK\s+QUEUE\s+ATT\s+ERROR$`))
			Expect(lines[1]).To(MatchRegexp(`^mail-5\s+2026-01-01 09:05:00\s+failed\s+medium\s+transient\s+email\s+emails\s+2\s+http 502`))
			Expect(lines[4]).To(MatchRegexp(`^next page: --cursor \d+:ord-3$`))
		})

		It("fits the table to the terminal's width", func() {
			GinkgoT().Setenv("COLUMNS", "60")
			out, _, code := dlqRun(url, "list")
			Expect(code).To(Equal(cli.ExitOK))
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				Expect(len([]rune(line))).To(BeNumerically("<=", 60), line)
			}
			Expect(out).To(ContainSubstring("…"))
		})

		It("shows an entry whole, secrets masked unless --reveal, and a corrupt one with its bytes", func() {
			out, errOut, code := dlqRun(url, "show", "ord-1")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("entry ord-1: failed"))
			Expect(out).To(ContainSubstring(`"card": "[CARD ****4242]"`))
			Expect(out).NotTo(ContainSubstring("4242424242424242"))
			Expect(out).NotTo(ContainSubstring("sk_live_abcdefghijklmnop"))
			Expect(out).To(ContainSubstring("#1  2026-01-01T09:00:30Z  critical/high/none (rule spec-rule) *net.OpError\n      first try of ord-1 failed"))
			Expect(out).To(ContainSubstring("#2  2026-01-01T09:01:00Z"))
			Expect(out).To(MatchRegexp(`status history \(1\):\n  \S+  - → failed`))

			out, _, code = dlqRun(url, "show", "ord-1", "--reveal", "--output", "json")
			Expect(code).To(Equal(cli.ExitOK))
			var v struct {
				Payload map[string]any `json:"payload"`
				History []struct {
					Error   string `json:"error"`
					Verdict string `json:"verdict"`
				} `json:"history"`
				Changes []struct{ To string } `json:"changes"`
			}
			Expect(json.Unmarshal([]byte(out), &v)).To(Succeed(), out)
			Expect(v.Payload).To(HaveKeyWithValue("card", "4242424242424242"))
			Expect(v.History).To(HaveLen(2))
			Expect(v.History[1].Verdict).To(Equal("critical/high/none"))
			Expect(v.Changes).To(HaveLen(1))

			out, _, code = dlqRun(url, "show", "mail-4")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(ContainSubstring("payload, not JSON (secrets masked; --reveal shows them):\n  not json"))

			out, _, code = dlqRun(url, "show", "bad-1")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(ContainSubstring("entry bad-1: CORRUPT (its stored bytes do not decode:"))
			Expect(out).To(ContainSubstring(`{"job": {"id": "bad-1", truncated`))

			out, _, code = dlqRun(url, "show", "bad-1", "-o", "json")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(ContainSubstring(`"corrupt": true`))
			Expect(out).To(ContainSubstring(`"raw": "{\"job\": {\"id\": \"bad-1\", truncated"`))
		})

		It("requeues by filter: a dry run counts and lists, --yes moves exactly that many, once", func() {
			out, errOut, code := dlqRun(url, "requeue", "--all", "--severity", "medium", "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(MatchRegexp(`dry run: 3 entries would be requeued \(last failure before \S+\); nothing changed`))
			Expect(out).To(ContainSubstring("ord-2"))
			Expect(out).NotTo(ContainSubstring("ord-1 "))
			Expect(status("ord-2")).To(Equal(dlq.Failed))

			_, errOut, code = dlqRun(url, "requeue", "--all", "--severity", "medium")
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(ContainSubstring("refusing to requeue 3 entries"))
			Expect(errOut).To(ContainSubstring("; add --yes"))
			Expect(status("ord-2")).To(Equal(dlq.Failed))

			out, errOut, code = dlqRun(url, "requeue", "--all", "--severity", "medium", "--task", "charge", "--yes", "--output", "json", "--batch", "1", "--by", "alice")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			var sum requeueDoc
			Expect(json.Unmarshal([]byte(out), &sum)).To(Succeed(), out)
			Expect([]int{sum.Stated, sum.Moved, sum.Skipped}).To(Equal([]int{2, 2, 0}), "stated, moved, skipped")
			Expect(status("ord-2")).To(Equal(dlq.Requeued))
			Expect(status("ord-3")).To(Equal(dlq.Requeued))
			Expect(status("mail-5")).To(Equal(dlq.Failed))
			e, err := s.Get(ctx, "ord-2")
			Expect(err).NotTo(HaveOccurred())
			Expect(e.Changes[len(e.Changes)-1].By).To(Equal("alice"))

			out, _, code = dlqRun(url, "requeue", "--all", "--severity", "medium", "--task", "charge", "--yes")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(ContainSubstring("stated 0, moved 0, skipped 0"))
		})

		It("requeues by ID with --to and --reset-attempts, and says what it skipped", func() {
			out, errOut, code := dlqRun(url, "requeue", "ord-1", "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("would requeue ord-1 (failed, charge) to charges"))
			Expect(status("ord-1")).To(Equal(dlq.Failed))

			out, errOut, code = dlqRun(url, "requeue", "ord-1", "ord-2", "--yes", "--to", "retry", "--new-queue", "--reset-attempts")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("stated 2, moved 2, skipped 0"))
			Expect(status("ord-1")).To(Equal(dlq.Requeued))
			j, _, ok, err := s.Dequeue(ctx, "retry", time.Now(), time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue(), "a job on the --to queue")
			Expect(j.Attempts).To(Equal(0))

			out, errOut, code = dlqRun(url, "requeue", "ord-1", "ghost", "--yes")
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(out).To(ContainSubstring("ord-1: already-requeued"))
			Expect(out).To(ContainSubstring("stated 2, moved 0, skipped 2 (already-requeued 1, not-found 1)"))
			Expect(errOut).To(ContainSubstring(`1 of the 2 IDs is not in the DLQ of namespace "ops"`))
		})

		It("deletes, restores, quarantines and purges, recording who acted", func() {
			out, errOut, code := dlqRun(url, "delete", "ord-2", "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("dry run: 1 of 1 would be deleted; nothing changed"))
			Expect(status("ord-2")).To(Equal(dlq.Failed))

			out, errOut, code = dlqRun(url, "delete", "ord-2", "--yes", "--by", "alice")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("stated 1, deleted 1, skipped 0"))
			Expect(status("ord-2")).To(Equal(dlq.Deleted))

			out, errOut, code = dlqRun(url, "restore", "ord-2", "--by", "bob", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("ord-2: restored (failed)"))
			out, _, _ = dlqRun(url, "show", "ord-2")
			Expect(out).To(MatchRegexp(`failed → deleted  by alice\n.*deleted → failed  by bob`))

			_, errOut, code = dlqRun(url, "restore", "ord-2", "--yes")
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(ContainSubstring("not deleted"))

			out, errOut, code = dlqRun(url, "quarantine", "ord-3", "--reason", "crashes the parser", "--by", "carol", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("ord-3: quarantined"))
			e, err := s.Get(ctx, "ord-3")
			Expect(err).NotTo(HaveOccurred())
			Expect(e.Status).To(Equal(dlq.Quarantined))
			Expect(e.Changes[len(e.Changes)-1].Reason).To(Equal("by carol: crashes the parser"))

			out, errOut, code = dlqRun(url, "purge", "--older-than", "1h", "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(MatchRegexp(`dry run: purge would remove 6 entries \(last failure before \S+; 1 corrupt\); nothing changed`))
			out, errOut, code = dlqRun(url, "purge", "--older-than", "1h", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("stated 6, purged 6"))
			st, err := s.Stats(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Total).To(BeZero())
		})

		It("refuses bad input with exit 2 naming the flag, and an unknown ID with a clear message", func() {
			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{"list", "--severity", "loud"}, `--severity: unknown severity "loud" (allowed: low, medium, high)`},
				{[]string{"list", "--class", "weird"}, "--class:"},
				{[]string{"list", "--status", "gone"}, "--status:"},
				{[]string{"list", "--since", "yesterday"}, `--since: expected an RFC 3339 time`},
				{[]string{"list", "--until", "-5m"}, `--until:`},
				{[]string{"list", "--output", "yaml"}, `--output: unknown value "yaml" (allowed: table, json, jsonl)`},
				{[]string{"list", "--cursor", "nonsense"}, `--cursor:`},
				{[]string{"list", "--limit", "0"}, `--limit`},
				{[]string{"stats", "-o", "xml"}, `--output`},
				{[]string{"show", "nope"}, `no DLQ entry with ID "nope" in namespace "ops"`},
				{[]string{"requeue"}, "requeue needs entry IDs, or --all"},
				{[]string{"requeue", "ord-1", "--all"}, "not both"},
				{[]string{"requeue", "--all", "--batch", "0", "--yes"}, "--batch"},
				{[]string{"purge", "--older-than", "soon"}, "--older-than"},
				{[]string{"quarantine", "ord-1"}, "--reason"},
				{[]string{"frobnicate"}, `unknown command "frobnicate" for "faultline dlq"`},
			} {
				_, errOut, code := dlqRun(url, tc.args...)
				Expect(code).To(Equal(cli.ExitInvalid), strings.Join(tc.args, " ")+": "+errOut)
				Expect(errOut).To(ContainSubstring(tc.want), strings.Join(tc.args, " "))
			}
			Expect(status("ord-1")).To(Equal(dlq.Failed))
		})
	})
}

var _ = Describe("faultline dlq", func() {
	dlqLane("miniredis", func() string { return "redis://" + redistest.Mini(1).Addr() + "/0" })
	dlqLane("a real redis-server", func() string {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		return "redis://" + srv.Addr + "/0"
	})

	It("says in one line, exit 4, that Redis cannot be reached, naming the address and never the password", func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := l.Addr().String()
		Expect(l.Close()).To(Succeed())
		_, errOut, code := run("dlq", "stats", "--redis-url", "redis://:hunter2@"+addr+"/0")
		Expect(code).To(Equal(cli.ExitUnavailable))
		Expect(errOut).To(ContainSubstring("Redis at " + addr + " could not be reached"))
		Expect(errOut).NotTo(ContainSubstring("hunter2"))
		Expect(strings.Count(strings.TrimSpace(errOut), "\n")).To(BeZero(), errOut)
	})

	It("takes its Redis from FAULTLINE_REDIS_URL and states the default namespace in --help", func() {
		m := redistest.Mini(1)
		GinkgoT().Setenv("FAULTLINE_REDIS_URL", "redis://"+m.Addr()+"/0")
		out, errOut, code := run("dlq", "stats")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		Expect(out).To(ContainSubstring(`DLQ of namespace "default" at ` + m.Addr()))

		out, _, code = run("dlq", "--help")
		Expect(code).To(Equal(cli.ExitOK))
		Expect(out).To(ContainSubstring(`--namespace string   the store's namespace (faultline demo --backend redis uses "demo") (default "default")`))
		Expect(out).To(ContainSubstring("default $FAULTLINE_REDIS_URL, else redis://127.0.0.1:6379/0"))
	})
})
