package cli_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// stdinTerminal makes the process's stdin a terminal (the slave side of a
// new pseudo-terminal) until the spec ends, so that edit opens $EDITOR and a
// move asks for confirmation; it returns the master side, where a spec
// types the answers.
func stdinTerminal() *os.File {
	GinkgoHelper()
	if runtime.GOOS != "linux" {
		Skip("the terminal specs open a pseudo-terminal the Linux way (/dev/ptmx)")
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

func dlqEditLane(name string, start func() string) {
	Describe("faultline dlq edit on "+name, func() {
		var (
			url string
			s   *redisstore.Store
			ctx = context.Background()
		)
		BeforeEach(func() {
			url = start()
			s = seedDLQ(url)
			stdinFrom("") // not a terminal: no editor is ever opened
		})

		get := func(id string) dlq.Entry {
			GinkgoHelper()
			e, err := s.Get(ctx, id)
			Expect(err).NotTo(HaveOccurred())
			return e
		}

		It("sets fields of the payload and records the edit, with who made it, in the history", func() {
			out, errOut, code := dlqRun(url, "edit", "ord-2", "--set", "amount=250", "--set", "customer.name=Ann Lee",
				"--set", `tags=["retry","manual"]`, "--dry-run")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("dry run: the payload of ord-2 would become:\n  {\n    \"amount\": 250,"))
			Expect(out).To(ContainSubstring("nothing changed"))
			Expect(string(get("ord-2").Job.Payload)).To(Equal(`{"amount":200}`))

			out, errOut, code = dlqRun(url, "edit", "ord-2", "--set", "amount=250", "--set", "customer.name=Ann Lee",
				"--set", `tags=["retry","manual"]`, "--by", "alice", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(MatchRegexp(`^ord-2: payload edited: 14 bytes \(sha256 [0-9a-f]{12}\) -> \d+ bytes \(sha256 [0-9a-f]{12}\), by alice\n`))
			e := get("ord-2")
			Expect(string(e.Job.Payload)).To(Equal(`{"amount":250,"customer":{"name":"Ann Lee"},"tags":["retry","manual"]}`))
			Expect(e.Status).To(Equal(dlq.Failed))
			last := e.Changes[len(e.Changes)-1]
			Expect(last.By).To(Equal("alice"))
			Expect(last.From).To(Equal(dlq.Failed))
			Expect(last.To).To(Equal(dlq.Failed))

			out, _, code = dlqRun(url, "show", "ord-2")
			Expect(code).To(Equal(cli.ExitOK))
			Expect(out).To(MatchRegexp(`failed → failed  by alice  \(payload edited: 14 bytes`))

			// The edited job is what a requeue sends.
			_, errOut, code = dlqRun(url, "requeue", "ord-2", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			j, _, ok, err := s.Dequeue(ctx, "charges", time.Now(), time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			Expect(string(j.Payload)).To(ContainSubstring(`"amount":250`))
		})

		It("takes a whole payload from a file or stdin, and refuses invalid JSON", func() {
			_, errOut, code := dlqRun(url, "edit", "ord-3", "--payload-file", writeFile("p.json", `{"amount": 301}`+"\n"), "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(string(get("ord-3").Job.Payload)).To(Equal(`{"amount": 301}`))

			_, errOut, code = dlqRun(url, "edit", "ord-3", "--payload-file", writeFile("bad.json", `{"amount": 301`))
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(ContainSubstring("not valid JSON"))
			Expect(errOut).To(ContainSubstring("nothing changed"))
			Expect(string(get("ord-3").Job.Payload)).To(Equal(`{"amount": 301}`))

			stdinFrom(`{"amount": 302}`)
			_, errOut, code = dlqRun(url, "edit", "ord-3", "--payload-file", "-", "--by", "bob", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			e := get("ord-3")
			Expect(string(e.Job.Payload)).To(Equal(`{"amount": 302}`))
			Expect(e.Changes).To(HaveLen(3))
			Expect(e.Changes[2].By).To(Equal("bob"))

			out, errOut, code := dlqRun(url, "edit", "ord-3", "--set", "amount=302", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("ord-3: the payload is unchanged (as JSON); nothing written"))
			Expect(get("ord-3").Changes).To(HaveLen(3))
		})

		It("opens $EDITOR on a terminal, stores what was saved, and refuses it when it is not JSON", func() {
			stdinTerminal()
			GinkgoT().Setenv("VISUAL", "")
			GinkgoT().Setenv("EDITOR", "sed -i s/200/275/")
			out, errOut, code := dlqRun(url, "edit", "ord-2", "--by", "carol")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("by carol"))
			e := get("ord-2")
			Expect(string(e.Job.Payload)).To(Equal(`{"amount":275}`), "saved, and stored compact")
			Expect(e.Changes[len(e.Changes)-1].By).To(Equal("carol"))

			GinkgoT().Setenv("EDITOR", "sed -i s/275/oops/")
			_, errOut, code = dlqRun(url, "edit", "ord-2")
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(ContainSubstring("edit ord-2: the edited payload is not valid JSON"))
			Expect(string(get("ord-2").Job.Payload)).To(Equal(`{"amount":275}`))

			GinkgoT().Setenv("EDITOR", "true")
			out, errOut, code = dlqRun(url, "edit", "ord-2")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			Expect(out).To(ContainSubstring("unchanged"))
		})

		It("refuses an unknown ID, an entry that cannot be edited, and bad input, with exit 2, changing nothing", func() {
			_, errOut, code := dlqRun(url, "requeue", "ord-1", "--yes")
			Expect(code).To(Equal(cli.ExitOK), errOut)
			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{"edit", "ghost", "--set", "a=1"}, `no DLQ entry with ID "ghost" in namespace "ops"`},
				{[]string{"edit", "ord-1", "--set", "a=1"}, "requeued: its job is back in a queue"},
				{[]string{"edit", "bad-1", "--set", "a=1"}, "the entry is corrupt"},
				{[]string{"edit", "mail-4", "--set", "a=1"}, "the entry's payload is not JSON"},
				{[]string{"edit", "ord-2"}, "edit needs --set PATH=VALUE or --payload-file FILE: stdin is not a terminal"},
				{[]string{"edit", "ord-2", "--set", "a=1", "--payload-file", "x.json"}, "not both"},
				{[]string{"edit", "ord-2", "--set", "novalue"}, "expected PATH=VALUE"},
				{[]string{"edit", "ord-2", "--set", "amount.cents=1"}, "amount is a number, not an object or array"},
				{[]string{"edit", "ord-2", "--set", "a..b=1"}, "an empty step in the path"},
				{[]string{"edit"}, "edit takes one entry ID"},
			} {
				_, errOut, code := dlqRun(url, tc.args...)
				Expect(code).To(Equal(cli.ExitInvalid), strings.Join(tc.args, " ")+": "+errOut)
				Expect(errOut).To(ContainSubstring(tc.want), strings.Join(tc.args, " "))
			}
			Expect(string(get("ord-2").Job.Payload)).To(Equal(`{"amount":200}`))
			Expect(get("ord-2").Changes).To(HaveLen(1))
		})
	})
}

var _ = Describe("faultline dlq edit", func() {
	dlqEditLane("miniredis", func() string { return "redis://" + redistest.Mini(1).Addr() + "/0" })
	dlqEditLane("a real redis-server", func() string {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		return "redis://" + srv.Addr + "/0"
	})
})
