package cli_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// stagingNamespace is where the transfer specs import to.
const stagingNamespace = "staging"

// dlqRunIn runs faultline dlq with args on the Redis at url, in namespace
// ns.
func dlqRunIn(url, ns string, args ...string) (stdout, stderr string, code int) {
	GinkgoHelper()
	return run(append(append([]string{"dlq"}, args...), "--redis-url", url, "--namespace", ns)...)
}

// stdinFrom makes the process's stdin read content until the spec ends.
func stdinFrom(content string) {
	GinkgoHelper()
	f, err := os.Open(writeFile("stdin", content))
	Expect(err).NotTo(HaveOccurred())
	old := os.Stdin
	os.Stdin = f
	DeferCleanup(func() {
		os.Stdin = old
		_ = f.Close()
	})
}

// storeIn opens the store of namespace ns on the Redis at url.
func storeIn(url, ns string) *redisstore.Store {
	GinkgoHelper()
	client := redisstore.NewClient(url)
	DeferCleanup(client.Close)
	s, err := redisstore.New(client, store.Config{Namespace: ns})
	Expect(err).NotTo(HaveOccurred())
	return s
}

// allEntries lists every entry of s, newest first.
func allEntries(s *redisstore.Store) []dlq.Entry {
	GinkgoHelper()
	var out []dlq.Entry
	cursor := ""
	for {
		p, err := s.List(context.Background(), dlq.Filter{}, cursor, 100)
		Expect(err).NotTo(HaveOccurred())
		out = append(out, p.Entries...)
		if cursor = p.Next; cursor == "" {
			return out
		}
	}
}

func dlqTransferLane(name string, start func() string) {
	Describe("faultline dlq export and import on "+name, func() {
		var (
			url string
			src *redisstore.Store
			ctx = context.Background()
		)
		BeforeEach(func() {
			url = start()
			src = seedDLQ(url)
			// Statuses other than failed, and a history longer than one
			// change, travel too.
			o, err := src.Requeue(ctx, "ord-2", dlq.RequeueOptions{Budget: dlq.OneMoreAttempt, By: "alice"}, time.Now())
			Expect(err).NotTo(HaveOccurred())
			Expect(o).To(Equal(dlq.OutcomeRequeued))
			Expect(src.Delete(ctx, "mail-4", "bob", time.Now())).To(Succeed())
		})

		It("round-trips every entry into another namespace, corrupt ones kept corrupt, and a rerun finds them present", func() {
			file := filepath.Join(GinkgoT().TempDir(), "dlq.jsonl")
			_, errOut, code := dlqRun(url, "export", "--output", file)
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(errOut).To(ContainSubstring(`exported 6 entries (1 corrupt) from namespace "ops"`))
			b, err := os.ReadFile(file)
			Expect(err).NotTo(HaveOccurred())
			lines := jsonLines(string(b))
			Expect(ids(lines[:5])).To(Equal([]string{"", "", "", "", ""}), "entry lines have no top-level id: they are dlq.Encode's bytes")
			Expect(lines[5]).To(HaveKeyWithValue("corrupt", true))
			Expect(lines[5]).To(HaveKeyWithValue("id", "bad-1"))
			Expect(lines[5]).To(HaveKeyWithValue("raw", base64.StdEncoding.EncodeToString([]byte(`{"job": {"id": "bad-1", truncated`))))
			Expect(string(b)).To(ContainSubstring(base64.StdEncoding.EncodeToString(
				[]byte(`{"amount":100,"card":"4242424242424242","api_key":"sk_live_abcdefghijklmnop"}`))), "an export is unmasked")

			out, errOut, code := dlqRunIn(url, stagingNamespace, "import", file, "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring(`would import 6 of 6 entries (1 corrupt) into namespace "staging"`))
			Expect(allEntries(storeIn(url, stagingNamespace))).To(BeEmpty())

			out, errOut, code = dlqRunIn(url, stagingNamespace, "import", file, "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring(`imported 6 of 6 entries (1 corrupt) into namespace "staging"`))
			dst := storeIn(url, stagingNamespace)
			Expect(allEntries(dst)).To(Equal(allEntries(src)))
			bad, err := dst.Get(ctx, "bad-1")
			Expect(err).NotTo(HaveOccurred())
			Expect(bad.Corrupt).To(BeTrue())
			Expect(string(bad.Raw)).To(Equal(`{"job": {"id": "bad-1", truncated`))
			e, err := dst.Get(ctx, "ord-2")
			Expect(err).NotTo(HaveOccurred())
			Expect(e.Status).To(Equal(dlq.Requeued))
			Expect(e.Changes[len(e.Changes)-1].By).To(Equal("alice"))
			srcStats, err := src.Stats(ctx)
			Expect(err).NotTo(HaveOccurred())
			dstStats, err := dst.Stats(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(dstStats.ByStatus).To(Equal(srcStats.ByStatus))
			Expect(dstStats.Corrupt).To(Equal(1))

			// A rerun (an interrupted import finished): all present, from stdin.
			stdinFrom(string(b))
			out, errOut, code = dlqRunIn(url, stagingNamespace, "import", "-", "--output", "json", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			var sum struct {
				Stated, Imported, Duplicates int
				Present                      int `json:"already_present"`
			}
			Expect(json.Unmarshal([]byte(out), &sum)).To(Succeed(), out)
			Expect([]int{sum.Stated, sum.Imported, sum.Present, sum.Duplicates}).To(Equal([]int{6, 0, 6, 0}), "stated, imported, present, duplicates")

			// Filters select what is exported; corrupt entries only go
			// with no filter.
			out, errOut, code = dlqRun(url, "export", "--task", "charge")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(jsonLines(out)).To(HaveLen(3))
			Expect(errOut).To(ContainSubstring("exported 3 entries (0 corrupt)"))
		})

		It("refuses IDs already in the DLQ with other contents, reports them, and imports the rest", func() {
			file := filepath.Join(GinkgoT().TempDir(), "dlq.jsonl")
			_, errOut, code := dlqRun(url, "export", "-o", file)
			Expect(code).To(Equal(cli.ExitOK), errOut)
			extra, err := dlq.Encode(func() dlq.Entry {
				e := seedEntry("new-9", "charge", classify.High, classify.Critical, 9, `{"amount":900}`)
				e.Version, e.Status = dlq.EncodingVersion, dlq.Failed
				e.FirstFailedAt, e.LastFailedAt = dlqT0, dlqT0.Add(9*time.Minute)
				return e
			}())
			Expect(err).NotTo(HaveOccurred())
			f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
			Expect(err).NotTo(HaveOccurred())
			_, err = f.Write(append(extra, '\n'))
			Expect(err).NotTo(HaveOccurred())
			Expect(f.Close()).To(Succeed())
			// ord-1 changes after the export: the file's is another entry.
			Expect(src.Quarantine(ctx, "ord-1", "poison", time.Now())).To(Succeed())

			out, errOut, code := dlqRun(url, "import", file, "--yes")
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(out).To(ContainSubstring("imported 1 of 7 entries (0 corrupt)"))
			Expect(out).To(ContainSubstring("already present 5; refused duplicates 1"))
			Expect(out).To(ContainSubstring("duplicates (ID already in the DLQ with other contents): ord-1\n"))
			Expect(errOut).To(ContainSubstring(`1 entry was not imported: its ID is in the DLQ of namespace "ops" with other contents`))
			e, err := src.Get(ctx, "ord-1")
			Expect(err).NotTo(HaveOccurred())
			Expect(e.Status).To(Equal(dlq.Quarantined), "the entry in the DLQ is left alone")
			e, err = src.Get(ctx, "new-9")
			Expect(err).NotTo(HaveOccurred())
			Expect(e.Status).To(Equal(dlq.Failed))
		})

		It("refuses a malformed file with exit 2 naming its lines, writing nothing", func() {
			file := filepath.Join(GinkgoT().TempDir(), "dlq.jsonl")
			_, errOut, code := dlqRun(url, "export", "-o", file)
			Expect(code).To(Equal(cli.ExitOK), errOut)
			b, err := os.ReadFile(file)
			Expect(err).NotTo(HaveOccurred())
			good := strings.SplitAfter(string(b), "\n")
			bad := good[0] + "not json at all\n" + good[1] + "\n" + `{"job":{"task":"x"}}` + "\n" + good[0] + `{"corrupt":true,"id":"x"}` + "\n"
			_, errOut, code = dlqRunIn(url, stagingNamespace, "import", writeFile("bad.jsonl", bad))
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(ContainSubstring("import: 4 malformed lines, nothing imported: line 2: not a JSON object"))
			Expect(errOut).To(ContainSubstring(`line 5: not a DLQ entry: no "job" with an "id"`))
			Expect(errOut).To(MatchRegexp(`line 6: entry "mail-5" again \(first on line 1\)`))
			Expect(errOut).To(ContainSubstring(`line 7: a corrupt entry without its "raw" bytes`))
			Expect(allEntries(storeIn(url, stagingNamespace))).To(BeEmpty())

			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{"export", "--output", "json"}, "--output names the file to write"},
				{[]string{"export", "--output", file}, "the file exists; export does not overwrite"},
				{[]string{"export", "--severity", "loud"}, "--severity"},
				{[]string{"export", "-o", filepath.Join(file, "sub", "x.jsonl")}, "no such directory"},
				{[]string{"import"}, "import takes one file"},
				{[]string{"import", filepath.Join(GinkgoT().TempDir(), "missing.jsonl")}, "no such file"},
			} {
				_, errOut, code := dlqRun(url, tc.args...)
				Expect(code).To(Equal(cli.ExitInvalid), strings.Join(tc.args, " ")+": "+errOut)
				Expect(errOut).To(ContainSubstring(tc.want), strings.Join(tc.args, " "))
			}
		})
	})
}

var _ = Describe("faultline dlq export and import", func() {
	dlqTransferLane("miniredis", func() string { return "redis://" + redistest.Mini(1).Addr() + "/0" })
	dlqTransferLane("a real redis-server", func() string {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		return "redis://" + srv.Addr + "/0"
	})
})
