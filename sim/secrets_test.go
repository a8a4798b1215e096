package sim_test

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/disposition"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// Specs for what an entry and a page carry (issue 15: entry content, what
// a page carries).
var _ = Describe("Entry content and planted secrets", func() {
	run := func(sc scenarios.Scenario) *reports.Result {
		GinkgoHelper()
		res, err := sim.Run(context.Background(), sc)
		Expect(err).NotTo(HaveOccurred())
		return res
	}

	It("judges a job's DLQ entry by its failure history, naming the job and the rule", func() {
		sc := builtin("requeue-drill")
		sc.Expect = []scenarios.Expectation{
			scenarios.JobFate{JobID: "acct-01", State: disposition.DeadLettered, Severity: classify.Low,
				History: []classify.Class{classify.Transient, classify.Transient, classify.Permanent}},
			scenarios.JobFate{JobID: "acct-02", State: disposition.DeadLettered,
				History: []classify.Class{classify.Transient, classify.Permanent}},
			scenarios.JobFate{JobID: "acct-06", State: disposition.Succeeded, History: []classify.Class{classify.Transient}},
		}
		res := run(sc)
		Expect(len(res.Expectations)).To(BeNumerically(">=", 3)) // then the faults' requireHits checks
		Expect(res.Expectations[0].Verdict).To(Equal(reports.Passed), res.Expectations[0].Actual)
		Expect(res.Expectations[1].Verdict).To(Equal(reports.Failed))
		Expect(res.Expectations[1].Actual).To(ContainSubstring("[transient, transient, permanent]: job acct-02's entry breaks the rule that a DLQ entry keeps every failure of its job"))
		Expect(res.Expectations[2].Verdict).To(Equal(reports.Failed))
		// Requeued and succeeded, its entry (status requeued) still tells
		// the outage's two failures.
		Expect(res.Expectations[2].Actual).To(ContainSubstring("[transient, transient]: job acct-06's entry breaks the rule"))
	})

	It("passes secrets-stay-inside: its planted secrets are masked in every page and report field, and the DLQ keeps the payloads", func() {
		res := run(builtin("secrets-stay-inside"))
		Expect(res.Verdict).To(Equal(reports.Passed))
		Expect(invariant(res, oracle.InvNoSecretLeaves).Verdict).To(Equal(reports.Passed))
	})

	It("names the job and the field when a planted secret leaves the process, never the secret itself", func() {
		sc := builtin("secrets-stay-inside")
		// Text no redaction rule masks, planted as a secret: every page and
		// report field that shows acct-a's error carries it.
		sc.Invariants.Secrets = append(slices.Clone(sc.Invariants.Secrets), "invalid credentials")
		res := run(sc)
		Expect(res.Verdict).To(Equal(reports.Failed))
		Expect(invariant(res, oracle.InvNoSecretLeaves).Verdict).To(Equal(reports.Failed))
		var msgs []string
		for _, v := range res.Violations {
			if v.Invariant == oracle.InvNoSecretLeaves {
				Expect(v.Message).NotTo(ContainSubstring("invalid credentials"))
				msgs = append(msgs, v.Message)
			}
		}
		Expect(msgs).To(ContainElement(And(ContainSubstring("a notification to receiver"), ContainSubstring("invariants.secrets[4] in its Summary, about job acct-a"))))
		Expect(msgs).To(ContainElement(And(ContainSubstring("the report carries the secret invariants.secrets[4] in its field DLQ.Entries["), ContainSubstring("about job acct-a"))))
	})

	It("lists the invariant only for a scenario that plants secrets", func() {
		res := run(builtin("requeue-drill"))
		for _, inv := range res.Invariants {
			Expect(inv.Name).NotTo(Equal(oracle.InvNoSecretLeaves))
		}
	})
})
