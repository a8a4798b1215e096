package adapter_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/adapter"
)

// script writes an executable /bin/sh script into dir.
func script(dir, name, body string) {
	GinkgoHelper()
	Expect(os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755)).To(Succeed())
}

var _ = Describe("command adapters", func() {
	var (
		ctx context.Context
		dir string
		env adapter.Env
	)
	BeforeEach(func() {
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		env = adapter.Env{Dir: dir, Expand: expandNS("d4"), Environ: []string{"FAULTLINE_NAMESPACE=d4"}}
	})

	Describe("inject", func() {
		// enqueue.sh appends each job line to $OUT, answers "ok", or an
		// error for a job whose payload says fail, and sleeps before
		// answering a job whose payload says slow.
		BeforeEach(func() {
			script(dir, "enqueue.sh", `echo "started in $(pwd) for $FAULTLINE_NAMESPACE" >&2
while IFS= read -r line; do
  echo "$line" >> "$OUT"
  case "$line" in
    *slow*) sleep 1; echo late ;;
    *fail*) echo "queue refused the job" ;;
    *) echo ok ;;
  esac
done
echo "stdin closed" >&2`)
		})
		newInjector := func(stderr *bytes.Buffer) adapter.Injector {
			GinkgoHelper()
			if stderr != nil {
				env.Stderr = stderr
			}
			in, err := adapter.NewInjector(layout.Inject{Command: &layout.Command{Path: "./enqueue.sh",
				Env: map[string]string{"OUT": "{namespace}.jobs"}}}, env)
			Expect(err).NotTo(HaveOccurred())
			return in
		}
		lines := func() []string {
			GinkgoHelper()
			b, err := os.ReadFile(filepath.Join(dir, "d4.jobs"))
			Expect(err).NotTo(HaveOccurred())
			return strings.Split(strings.TrimSpace(string(b)), "\n")
		}

		It("writes one JSON line per job to a command it starts once, in its folder, with its environment", func() {
			var stderr bytes.Buffer
			in := newInjector(&stderr)
			injectAll(ctx, in, seedJobs)
			Expect(in.Close()).To(Succeed())
			got := lines()
			Expect(got).To(HaveLen(3), "two jobs with the same payload stay two jobs")
			Expect(got[0]).To(MatchJSON(`{"id": "charge-1", "task": "charge", "payload": {"amount": 100}, "idempotency_key": "idem-charge-1"}`))
			Expect(stderr.String()).To(Equal("started in "+dir+" for d4\nstdin closed\n"), "started once, stopped by closing stdin")
		})

		It("fails a job the command answers with anything but ok, and goes on", func() {
			in := newInjector(nil)
			DeferCleanup(in.Close)
			err := in.Inject(ctx, layout.Job{ID: "x1", Task: "t", Payload: "fail"})
			Expect(err).To(MatchError(adapter.ErrCommand))
			Expect(err).To(MatchError(ContainSubstring(`"queue refused the job"`)))
			Expect(err).To(MatchError(ContainSubstring("x1")))
			Expect(in.Inject(ctx, seedJobs[0])).To(Succeed())
		})

		It("gives up on a job whose answer is late, and skips that answer for the next job", func() {
			in := newInjector(nil)
			DeferCleanup(in.Close)
			short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			Expect(in.Inject(short, layout.Job{ID: "s1", Task: "t", Payload: "slow"})).To(MatchError(context.DeadlineExceeded))
			Expect(in.Inject(ctx, seedJobs[1])).To(Succeed(), "the late answer is the timed-out job's, not this one's")
			Expect(lines()).To(HaveLen(2))
		})

		It("reports a command that exits, with its stderr", func() {
			script(dir, "dies.sh", `read -r line; echo "cannot reach the queue" >&2; exit 3`)
			in, err := adapter.NewInjector(layout.Inject{Command: &layout.Command{Path: "dies.sh", Dir: "."}},
				adapter.Env{Dir: dir, Environ: []string{"PATH=" + dir + ":" + os.Getenv("PATH")}})
			Expect(err).NotTo(HaveOccurred())
			err = in.Inject(ctx, seedJobs[0])
			Expect(err).To(MatchError(adapter.ErrCommand))
			Expect(err).To(MatchError(ContainSubstring("exit status 3")))
			Expect(err).To(MatchError(ContainSubstring("cannot reach the queue")))
			Expect(in.Inject(ctx, seedJobs[1])).To(MatchError(adapter.ErrCommand))
			Expect(in.Close()).To(MatchError(ContainSubstring("exit status 3")), "Close reports the exit too")
		})

		It("reports a command that cannot start", func() {
			in, err := adapter.NewInjector(layout.Inject{Command: &layout.Command{Path: "./missing"}}, env)
			Expect(err).NotTo(HaveOccurred())
			err = in.Inject(ctx, seedJobs[0])
			Expect(err).To(MatchError(adapter.ErrCommand))
			Expect(err).To(MatchError(ContainSubstring(filepath.Join(dir, "missing"))))
			Expect(in.Close()).To(Succeed(), "nothing was started")
		})
	})

	Describe("read", func() {
		fields := layout.Fields{ID: "id", Severity: "sev"}

		It("reads each non-empty line the command prints as an entry", func() {
			script(dir, "dlq.sh", `printf '%s\n' '{"id": "a", "sev": "high"}' '' "{\"id\": \"$1\"}" 'garbage'`)
			r, err := adapter.NewReader(layout.DLQ{Command: &layout.Command{Path: "./dlq.sh", Args: []string{"{namespace}-b"}}, Fields: fields}, env)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(r.Close)
			Expect(read(ctx, r)).To(Equal([]layout.Entry{
				{Source: "line 1", JobID: "a", Severity: "high"},
				{Source: "line 3", JobID: "d4-b"},
				{Source: "line 4", Corrupt: "not JSON"},
			}))
		})

		It("fails on a non-zero exit, with the end of its stderr", func() {
			script(dir, "dlq.sh", `echo '{"id": "a"}'; echo "redis: connection refused" >&2; exit 2`)
			r, err := adapter.NewReader(layout.DLQ{Command: &layout.Command{Path: "/bin/sh", Args: []string{"-c", "./dlq.sh"}}, Fields: fields}, env)
			Expect(err).NotTo(HaveOccurred())
			_, err = r.Read(ctx)
			Expect(err).To(MatchError(adapter.ErrCommand))
			Expect(err).To(MatchError(ContainSubstring("exit status 2")))
			Expect(err).To(MatchError(ContainSubstring("redis: connection refused")))
		})

		It("stops a command that outlives the caller's context, children and all", func() {
			script(dir, "dlq.sh", `sleep 30 & wait`)
			r, err := adapter.NewReader(layout.DLQ{Command: &layout.Command{Path: "./dlq.sh"}, Fields: fields}, env)
			Expect(err).NotTo(HaveOccurred())
			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err = r.Read(short)
			Expect(err).To(MatchError(context.DeadlineExceeded))
			Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		})
	})
})
