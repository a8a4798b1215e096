package job_test

import (
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/job"
)

func TestJob(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Job Suite")
}

var _ = Describe("Validate", func() {
	ok := func() job.Job { return job.Job{ID: "j1", Task: "charge", Payload: []byte(`{"amount":100}`)} }

	It("accepts a well-formed job and names the default queue", func() {
		j := ok()
		Expect(job.Validate(&j, 0)).To(Succeed())
		Expect(j.QueueName()).To(Equal(job.DefaultQueue))
		j.Queue = "payments"
		Expect(j.QueueName()).To(Equal("payments"))
	})

	DescribeTable("refuses what no store should write, naming the field",
		func(mutate func(*job.Job), max int, want string) {
			j := ok()
			mutate(&j)
			err := job.Validate(&j, max)
			Expect(err).To(MatchError(job.ErrInvalid))
			Expect(err.Error()).To(Equal(want))
		},
		Entry("no ID", func(j *job.Job) { j.ID = "" }, 0, "invalid job: ID: is required"),
		Entry("a long ID", func(j *job.Job) { j.ID = strings.Repeat("x", 257) }, 0, "invalid job: ID: is 257 bytes; at most 256"),
		Entry("a control character", func(j *job.Job) { j.ID = "a\nb" }, 0, "invalid job: ID: contains control characters"),
		Entry("no task", func(j *job.Job) { j.Task = "" }, 0, "invalid job: Task: is required"),
		Entry("a payload over the limit", func(j *job.Job) { j.Payload = make([]byte, 11) }, 10, "invalid job: Payload: is 11 bytes; at most 10"),
		Entry("a payload over the 1 MiB default", func(j *job.Job) { j.Payload = make([]byte, job.DefaultMaxPayload+1) }, 0, "invalid job: Payload: is 1048577 bytes; at most 1048576"),
		Entry("negative attempts", func(j *job.Job) { j.Attempts = -1 }, 0, "invalid job: Attempts: is negative"),
	)

	It("tells control characters from any other text, UTF-8 or not", func() {
		for _, id := range []string{"jöb-1", "支払い-2", "emoji-🙂", "\xff\xfe-invalid-utf8", "tab\u00a0nbsp", "\u0085-C1-next-line"} {
			j := ok()
			j.ID = id
			Expect(job.Validate(&j, 0)).To(Succeed(), "%q", id)
		}
		for _, id := range []string{"\x00", "a\tb", "del\x7f", "\x1f-unit", "jöb\r"} {
			j := ok()
			j.Queue = id
			Expect(job.Validate(&j, 0)).To(MatchError("invalid job: Task/Queue: contains control characters"), "%q", id)
		}
	})

	It("refuses a nil job", func() {
		Expect(job.Validate(nil, 0)).To(MatchError("invalid job: job: is nil"))
	})
})
