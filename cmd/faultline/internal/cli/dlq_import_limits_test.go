package cli_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// dlqImportLimitsLane holds the specs of an import meeting a limit — a
// full DLQ, a line over the line limit — on one Redis.
func dlqImportLimitsLane(name string, start func() string) {
	Describe("faultline dlq import at its limits on "+name, func() {
		var (
			url, file string
			ctx       = context.Background()
		)
		BeforeEach(func() {
			url = start()
			seedDLQ(url)
			file = filepath.Join(GinkgoT().TempDir(), "ops.jsonl")
			_, errOut, code := dlqRun(url, "export", "--output", file)
			Expect(code).To(Equal(cli.ExitOK), errOut)
		})
		audit := func(ns string) []dlq.AuditRecord {
			GinkgoHelper()
			page, err := storeIn(url, ns).AuditLog(ctx, "", 10)
			Expect(err).NotTo(HaveOccurred())
			return page.Records
		}

		It("stops at a full DLQ with exit 1, saying how many were imported and the capacity, and audits what it did", func() {
			// Five entries and a corrupt one (its bytes do not count
			// against the capacity) into a DLQ of capacity 3.
			out, errOut, code := dlqRunIn(url, stagingNamespace, "import", file, "--capacity", "3", "--yes")
			Expect(code).To(Equal(cli.ExitFailed), errOut)
			Expect(errOut).To(ContainSubstring(`faultline: import: the DLQ of namespace "staging" is full (capacity 3, the --capacity given; overflow reject): 4 of 6 entries imported, 2 refused`))
			Expect(errOut).To(ContainSubstring("make room (requeue, delete, purge) or raise the capacity, then rerun the import: entries imported already count as present"))
			Expect(errOut).NotTo(ContainSubstring("internal"))
			Expect(out).To(ContainSubstring(`imported 4 of 6 entries (1 corrupt) into namespace "staging"`))
			Expect(allEntries(storeIn(url, stagingNamespace))).To(HaveLen(4))
			recs := audit(stagingNamespace)
			Expect(recs).To(HaveLen(2))
			Expect(recs[0]).To(And(HaveField("Action", "import"), HaveField("Phase", "failed"), HaveField("Stated", 6), HaveField("Moved", 4)))
			Expect(recs[0].Note).To(ContainSubstring("is full (capacity 3"))

			By("a rerun with room finishes it")
			out, errOut, code = dlqRunIn(url, stagingNamespace, "import", file, "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("imported 2 of 6 entries (0 corrupt) into namespace \"staging\" at"))
			Expect(out).To(ContainSubstring("already present 4"))
		})

		It("refuses a line over the line limit before writing anything, naming the line and the limit, with exit 2", func() {
			b, err := os.ReadFile(file)
			Expect(err).NotTo(HaveOccurred())
			lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
			big, err := json.Marshal(map[string]any{"corrupt": true, "id": "big-1", "raw": base64.StdEncoding.EncodeToString([]byte(strings.Repeat("A", 48<<10)))})
			Expect(err).NotTo(HaveOccurred())
			withBig := lines[0] + string(big) + "\n" + strings.Join(lines[1:], "")
			f := writeFile("big.jsonl", withBig)

			for _, args := range [][]string{{"import", f, "--max-line-bytes", "4096", "--yes"}, {"import", f, "--max-line-bytes", "4096", "--dry-run"}} {
				out, errOut, code := dlqRunIn(url, stagingNamespace, args...)
				Expect(code).To(Equal(cli.ExitInvalid), "%v: %s", args, errOut)
				Expect(errOut).To(ContainSubstring(fmt.Sprintf("import: 1 malformed line, nothing imported: line 2: %d bytes, over the limit of 4096 bytes a line (--max-line-bytes)", len(big))))
				Expect(out).To(BeEmpty())
			}
			Expect(allEntries(storeIn(url, stagingNamespace))).To(BeEmpty(), "nothing written")
			Expect(audit(stagingNamespace)).To(BeEmpty(), "nothing started")

			By("within the limit, the same file imports whole")
			out, errOut, code := dlqRunIn(url, stagingNamespace, "import", f, "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("imported 7 of 7 entries (2 corrupt)"))
		})

		It("refuses a line over the default limit of 16 MiB without reading it into memory", func() {
			f := filepath.Join(GinkgoT().TempDir(), "huge.jsonl")
			w, err := os.Create(f)
			Expect(err).NotTo(HaveOccurred())
			bw := bufio.NewWriter(w)
			_, _ = bw.WriteString(`{"corrupt":true,"id":"huge-1","raw":"`)
			chunk := strings.Repeat("QUFB", 1<<12)
			for range (16<<20)/len(chunk) + 1 {
				_, _ = bw.WriteString(chunk)
			}
			_, _ = bw.WriteString("\"}\n")
			Expect(bw.Flush()).To(Succeed())
			Expect(w.Close()).To(Succeed())
			st, err := os.Stat(f)
			Expect(err).NotTo(HaveOccurred())

			_, errOut, code := dlqRunIn(url, stagingNamespace, "import", f, "--yes")
			Expect(code).To(Equal(cli.ExitInvalid), errOut)
			Expect(errOut).To(ContainSubstring(fmt.Sprintf("line 1: %d bytes, over the limit of 16777216 bytes a line (--max-line-bytes)", st.Size()-1)))
			Expect(allEntries(storeIn(url, stagingNamespace))).To(BeEmpty())

			for _, v := range []string{"0", "100", "1073741824"} {
				_, errOut, code := dlqRunIn(url, stagingNamespace, "import", f, "--yes", "--max-line-bytes", v)
				Expect(code).To(Equal(cli.ExitInvalid), errOut)
				Expect(errOut).To(ContainSubstring("--max-line-bytes must be between 1024 and 67108864 (64 MiB), got " + v))
			}
		})
	})
}

var _ = Describe("faultline dlq import at its limits", func() {
	dlqImportLimitsLane("miniredis", func() string { return "redis://" + redistest.Mini(1).Addr() + "/0" })
	dlqImportLimitsLane("a real redis-server", func() string {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		return "redis://" + srv.Addr + "/0"
	})
})
