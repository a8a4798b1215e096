package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// The specs of one rule for every faultline dlq command that changes data
// (issue 28): it takes --yes; without it, it asks on a terminal, and with
// no terminal it exits 2, its message ending "add --yes", changing
// nothing. Dry runs need no --yes.
var _ = Describe("faultline dlq's confirmation of every command that changes data", func() {
	var (
		url  string
		s    *redisstore.Store
		file string
		ctx  = context.Background()
	)
	BeforeEach(func() {
		url = "redis://" + redistest.Mini(1).Addr() + "/0"
		s = seedDLQ(url)
		Expect(s.Delete(ctx, "mail-4", "seed", time.Now())).To(Succeed())
		file = filepath.Join(GinkgoT().TempDir(), "ops.jsonl")
		_, errOut, code := dlqRun(url, "export", "--output", file)
		Expect(code).To(Equal(cli.ExitOK), errOut)
		// Data of a faultline before layout versions: upgrade has work.
		c := redisstore.NewClient(url)
		DeferCleanup(c.Close)
		Expect(c.Del(ctx, redisstore.LayoutKey(dlqNamespace)).Err()).To(Succeed())
	})
	status := func(id string) dlq.Status {
		GinkgoHelper()
		e, err := s.Get(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		return e.Status
	}
	unchanged := func() {
		GinkgoHelper()
		for id, want := range map[string]dlq.Status{"ord-1": dlq.Failed, "ord-2": dlq.Failed, "ord-3": dlq.Failed, "mail-4": dlq.Deleted, "mail-5": dlq.Failed} {
			Expect(status(id)).To(Equal(want), id)
		}
		e, err := s.Get(ctx, "ord-2")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(e.Job.Payload)).To(Equal(`{"amount":200}`))
		page, err := s.AuditLog(ctx, "", 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(page.Records).To(BeEmpty(), "no action recorded")
		v, err := s.LayoutVersion(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(v).To(BeZero(), "not upgraded")
		Expect(allEntries(storeIn(url, stagingNamespace))).To(BeEmpty(), "nothing imported")
	}
	// in runs faultline dlq with args in namespace ops, or staging for an
	// import.
	in := func(args ...string) (stdout, stderr string, code int) {
		GinkgoHelper()
		if args[0] == "import" {
			return dlqRunIn(url, stagingNamespace, args...)
		}
		return dlqRun(url, args...)
	}
	// Each command with what it needs to get as far as changing data.
	commands := func() [][]string {
		return [][]string{
			{"requeue", "ord-1"},
			{"requeue", "--all", "--task", "charge"},
			{"delete", "ord-2"},
			{"delete", "--all", "--task", "charge"},
			{"restore", "mail-4"},
			{"quarantine", "ord-3", "--reason", "poison"},
			{"purge", "--older-than", "1h"},
			{"edit", "ord-2", "--set", "amount=250"},
			{"import", file},
			{"upgrade"},
		}
	}

	It("refuses each one without --yes when stdin is not a terminal: exit 2, the message ending \"add --yes\", nothing changed", func() {
		stdinFrom("")
		for _, args := range commands() {
			out, errOut, code := in(args...)
			Expect(code).To(Equal(cli.ExitInvalid), "%v: %s", args, errOut)
			Expect(errOut).To(HaveSuffix("add --yes\n"), "%v", args)
			Expect(errOut).To(ContainSubstring("stdin is not a terminal, so nothing was asked and nothing changed"), "%v", args)
			Expect(errOut).NotTo(ContainSubstring("unknown flag"), "%v", args)
			Expect(out).To(BeEmpty(), "%v", args)
		}
		unchanged()
	})

	It("takes --yes in each one", func() {
		stdinFrom("")
		for _, args := range [][]string{
			{"restore", "mail-4"},
			{"quarantine", "ord-3", "--reason", "poison"},
			{"edit", "ord-2", "--set", "amount=250"},
			{"import", file},
			{"upgrade"},
			{"delete", "ord-2"},
			{"requeue", "ord-1"},
			{"requeue", "--all", "--task", "charge"},
			{"delete", "--all", "--task", "email"},
		} {
			_, errOut, code := in(append(args, "--yes")...)
			Expect(code).To(Equal(cli.ExitOK), "%v: %s", args, errOut)
		}
		Expect(status("ord-1")).To(Equal(dlq.Requeued))
		Expect(status("ord-2")).To(Equal(dlq.Deleted))
		Expect(status("ord-3")).To(Equal(dlq.Quarantined))
		Expect(status("mail-4")).To(Equal(dlq.Deleted), "restored, then deleted by filter")
		Expect(allEntries(storeIn(url, stagingNamespace))).To(HaveLen(6), "imported")
		v, err := s.LayoutVersion(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(v).To(Equal(redisstore.LayoutVersion), "upgraded")
		_, errOut, code := in("purge", "--older-than", "1h", "--yes")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		Expect(allEntries(s)).To(BeEmpty(), "purged")
		out, _, code := dlqRun(url, "audit", "--output", "jsonl", "--limit", "100")
		Expect(code).To(Equal(cli.ExitOK))
		var actions []string
		for _, r := range jsonLines(out) {
			actions = append(actions, r["action"].(string))
		}
		Expect(actions).To(ContainElements("restore", "quarantine", "edit", "upgrade", "delete", "requeue", "purge"))
	})

	It("asks on a terminal, stating what it will do: y goes ahead, anything else changes nothing and exits 0", func() {
		tty := stdinTerminal()
		answer := func(s string) {
			GinkgoHelper()
			_, err := tty.WriteString(s + "\n")
			Expect(err).NotTo(HaveOccurred())
		}
		for _, tc := range []struct {
			args   []string
			prompt string
		}{
			{[]string{"restore", "mail-4"}, `restore 1 entry in namespace "ops" at `},
			{[]string{"quarantine", "ord-3", "--reason", "poison"}, `quarantine ord-3 in namespace "ops" at `},
			{[]string{"edit", "ord-2", "--set", "amount=250"}, `write the new payload of ord-2 (14 bytes, was 14) in namespace "ops" at `},
			{[]string{"import", file}, `import 6 entries into namespace "staging" at `},
			{[]string{"upgrade"}, `upgrade namespace "ops" at `},
		} {
			answer("n")
			out, errOut, code := in(tc.args...)
			Expect(code).To(Equal(cli.ExitOK), "%v: %s", tc.args, errOut)
			Expect(errOut).To(ContainSubstring(tc.prompt), "%v", tc.args)
			Expect(errOut).To(ContainSubstring("? [y/N] "), "%v", tc.args)
			Expect(errOut).To(ContainSubstring("nothing changed"), "%v", tc.args)
			Expect(out).To(BeEmpty(), "%v", tc.args)
		}
		unchanged()

		for _, tc := range [][]string{
			{"restore", "mail-4"}, {"quarantine", "ord-3", "--reason", "poison"}, {"edit", "ord-2", "--set", "amount=250"},
			{"import", file}, {"upgrade"},
		} {
			answer("y")
			_, errOut, code := in(tc...)
			Expect(code).To(Equal(cli.ExitOK), "%v: %s", tc, errOut)
		}
		Expect(status("mail-4")).To(Equal(dlq.Failed))
		Expect(status("ord-3")).To(Equal(dlq.Quarantined))
		e, err := s.Get(ctx, "ord-2")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(e.Job.Payload)).To(Equal(`{"amount":250}`))
		Expect(allEntries(storeIn(url, stagingNamespace))).To(HaveLen(6))
	})

	It("needs no --yes for a dry run", func() {
		stdinFrom("")
		for _, args := range [][]string{
			{"requeue", "--all", "--dry-run"}, {"delete", "ord-2", "--dry-run"}, {"purge", "--older-than", "1h", "--dry-run"},
			{"edit", "ord-2", "--set", "amount=250", "--dry-run"}, {"import", file, "--dry-run"},
			{"upgrade", "--dry-run"},
		} {
			_, errOut, code := in(args...)
			Expect(code).To(Equal(cli.ExitOK), "%v: %s", args, errOut)
			Expect(errOut).NotTo(ContainSubstring("--yes"), strings.Join(args, " "))
		}
		unchanged()
	})
})
