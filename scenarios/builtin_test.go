package scenarios_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// The seeds every built-in must pass on, as CI runs them.
const firstSeed, lastSeed uint64 = 1, 100

// ScaleTag marks a heavy built-in (ten thousand jobs and more, seconds of
// CPU a run): it runs in a lane of its own, on scaleLastSeed seeds instead
// of lastSeed, and says so in its spec's name. The mutation score runs it
// like any other built-in.
const scaleTag = "scale"

// scaleLastSeed is the last seed a scale built-in is run on (from
// firstSeed).
const scaleLastSeed uint64 = 3

// isScale says whether the built-in b is tagged scale.
func isScale(b scenarios.Builtin) bool { return slices.Contains(b.Tags, scaleTag) }

// requiredBuiltins are the scenarios issue 6 asks the library for.
var requiredBuiltins = []string{
	"dlq-basics", "classification-and-alerting", "graceful-degradation", "manual-reprocessing", "mini-project",
	"payment-challenge", "gateway-timeout-storm", "auth-failure-burst", "flapping-primary", "dlq-store-outage",
	"alert-sink-outage", "dlq-overflow", "poison-message", "retry-storm-on-recovery", "off-peak-auto-retry",
	"worker-crash", "requeue-drill",
}

// loadBuiltinDoc loads the named built-in and returns its scenario.
func loadBuiltinDoc(name string) (scenarios.Scenario, error) {
	l, err := scenarios.LoadBuiltin(name)
	if err != nil {
		return scenarios.Scenario{}, err
	}
	return l.Scenario, nil
}

// mustLoadBuiltin is loadBuiltinDoc for a name that must load.
func mustLoadBuiltin(name string) scenarios.Scenario {
	GinkgoHelper()
	sc, err := loadBuiltinDoc(name)
	Expect(err).NotTo(HaveOccurred())
	return sc
}

// seedFailure is the first seed on which a scenario failed, and why.
type seedFailure struct {
	From, To uint64
	Seed     uint64
	Why      string
}

// passOnSeeds succeeds when the scenario passes on every seed from..to;
// the failure names the first failing seed, its failed expectations and
// its violation.
func passOnSeeds(from, to uint64, opts ...sim.Option) types.GomegaMatcher {
	f := &seedFailure{From: from, To: to}
	return gcustom.MakeMatcher(func(sc scenarios.Scenario) (bool, error) {
		for seed := from; seed <= to; seed++ {
			res, err := sim.Run(context.Background(), sc, append(slices.Clone(opts), sim.WithSeed(seed))...)
			if err != nil {
				return false, fmt.Errorf("seed %d: %w", seed, err)
			}
			if res.Verdict != reports.Passed {
				f.Seed, f.Why = seed, whyFailed(res)
				return false, nil
			}
		}
		return true, nil
	}).WithTemplate("Expected scenario {{.Actual.Name}} to pass on seeds {{.Data.From}}..{{.Data.To}}, but seed {{.Data.Seed}} failed:\n{{.Data.Why}}"+
		"Reproduce: faultline run {{.Actual.Name}} --seed {{.Data.Seed}}", f)
}

// whyFailed lists a result's failed expectations and its violation.
func whyFailed(res *reports.Result) string {
	var b strings.Builder
	for _, e := range res.Expectations {
		if e.Verdict != reports.Passed {
			fmt.Fprintf(&b, "  expectation %q: expected %s, got %s\n", e.Name, e.Expected, e.Actual)
		}
	}
	for _, v := range res.Violations {
		fmt.Fprintf(&b, "  violation %s at +%dms (job %s): %s\n", v.Invariant, v.AtMs, v.JobID, v.Message)
		for _, t := range v.Trail {
			fmt.Fprintf(&b, "      %s\n", t)
		}
	}
	if res.Error != "" {
		fmt.Fprintf(&b, "  error: %s\n", res.Error)
	}
	return b.String()
}

// lenientClassifier is the default classifier with one bug: it calls a
// critical failure (bad credentials) transient, so the job is retried
// instead of paging a person.
type lenientClassifier struct{ inner *classify.Classifier }

var _ worker.Classifier = lenientClassifier{}

func (c lenientClassifier) Classify(err error, scope classify.Scope) classify.Classification {
	v := c.inner.Classify(err, scope)
	if v.Class == classify.Critical {
		v.Class, v.Severity = classify.Transient, classify.Medium
	}
	return v
}

var _ = Describe("The built-in library", func() {
	var names []string
	BeforeEach(func() {
		names = nil
		for _, b := range scenarios.Builtins() {
			names = append(names, b.Name)
		}
	})

	It("lists every file of the library, sorted by name, each saying what it proves", func() {
		files, err := fs.Glob(scenarios.BuiltinFS(), "builtin/*.yaml")
		Expect(err).NotTo(HaveOccurred())
		var fileNames []string
		for _, f := range files {
			fileNames = append(fileNames, strings.TrimSuffix(path.Base(f), ".yaml"))
		}
		Expect(names).To(Equal(fileNames))
		Expect(slices.IsSorted(names)).To(BeTrue())
		for _, b := range scenarios.Builtins() {
			Expect(b.Path).To(Equal("builtin/"+b.Name+".yaml"), b.Name)
			Expect(b.Description).NotTo(BeEmpty(), b.Name)
			Expect(b.Description).NotTo(ContainSubstring("\n"), "%s: `faultline list` prints it on one line", b.Name)
			Expect(b.Tags).NotTo(BeEmpty(), b.Name)
		}
	})

	It("holds every scenario issue 6 asks for", func() {
		Expect(names).To(ContainElements(requiredBuiltins))
	})

	It("names each scenario after its file", func() {
		for _, b := range scenarios.Builtins() {
			sc := mustLoadBuiltin(b.Name)
			Expect(sc.Name).To(Equal(b.Name))
			Expect(sc.Description).To(Equal(b.Description))
		}
	})

	It("refuses an unknown name, listing the built-ins and suggesting the closest", func() {
		_, err := scenarios.LoadBuiltin("payment-challange")
		Expect(err).To(MatchError(scenarios.ErrUnknownBuiltin))
		var unknown *scenarios.UnknownBuiltinError
		Expect(errors.As(err, &unknown)).To(BeTrue())
		Expect(unknown.Suggestion).To(Equal("payment-challenge"))
		Expect(unknown.Known).To(Equal(names))
		Expect(err.Error()).To(HavePrefix(`unknown built-in scenario "payment-challange"; did you mean "payment-challenge"?`))
		Expect(err.Error()).To(ContainSubstring("worker-crash"))

		_, err = scenarios.LoadBuiltin("overflow")
		Expect(errors.As(err, &unknown)).To(BeTrue())
		Expect(unknown.Suggestion).To(Equal("dlq-overflow"), "a part of a name suggests the name")

		_, err = scenarios.LoadBuiltin("worker-crash.yaml")
		Expect(errors.As(err, &unknown)).To(BeTrue())
		Expect(unknown.Suggestion).To(Equal("worker-crash"))

		_, err = scenarios.LoadBuiltin("quantum-entanglement")
		Expect(errors.As(err, &unknown)).To(BeTrue())
		Expect(unknown.Suggestion).To(BeEmpty())
		Expect(err.Error()).NotTo(ContainSubstring("did you mean"))
	})

	Describe(fmt.Sprintf("on every seed from %d to %d", firstSeed, lastSeed), func() {
		for _, b := range scenarios.Builtins() {
			if isScale(b) {
				continue // the scale lane below runs it, on fewer seeds
			}
			It(b.Name+" passes, with expectations that can fail", func() {
				sc := mustLoadBuiltin(b.Name)
				Expect(len(sc.Expect)).To(BeNumerically(">=", 3), "a built-in asserts at least three things")
				Expect(sc.Expect).To(ContainElement(scenarios.Count{Metric: scenarios.Lost, Op: scenarios.Exactly, N: 0}), "every built-in checks that no job is lost")
				Expect(sc).To(passOnSeeds(firstSeed, lastSeed))
			})
		}
	})

	// A scale built-in takes seconds a run: on 100 seeds it would take
	// minutes of CI, so its lane runs a few, and its spec's name says so.
	Describe(fmt.Sprintf("tagged %s, on seeds %d to %d only", scaleTag, firstSeed, scaleLastSeed), func() {
		It("holds at least one scale built-in, past 10,000 dead letters", func() {
			Expect(slices.ContainsFunc(scenarios.Builtins(), isScale)).To(BeTrue())
			sc := mustLoadBuiltin("dlq-past-ten-thousand")
			Expect(sc.Expect).To(ContainElement(scenarios.Count{Metric: scenarios.DeadLettered, Op: scenarios.Exactly, N: 10050}))
			Expect(sc.System.DLQ.Capacity).To(BeNumerically(">=", 20000))
		})
		for _, b := range scenarios.Builtins() {
			if !isScale(b) {
				continue
			}
			It(fmt.Sprintf("%s passes on seeds %d..%d (a scale built-in: not the %d seeds), with expectations that can fail", b.Name, firstSeed, scaleLastSeed, lastSeed), func() {
				sc := mustLoadBuiltin(b.Name)
				Expect(len(sc.Expect)).To(BeNumerically(">=", 3), "a built-in asserts at least three things")
				Expect(sc.Expect).To(ContainElement(scenarios.Count{Metric: scenarios.Lost, Op: scenarios.Exactly, N: 0}), "every built-in checks that no job is lost")
				Expect(sc).To(passOnSeeds(firstSeed, scaleLastSeed))
			})
		}
	})

	// Each built-in guards against a mistake: with the mistake made, it
	// fails, so the library is not vacuous.
	DescribeTable("fails when the failure handling it checks is broken",
		func(name string, breakIt func(sc *scenarios.Scenario) []sim.Option, want string) {
			sc := mustLoadBuiltin(name)
			opts := breakIt(&sc)
			for seed := uint64(1); seed <= 5; seed++ {
				res, err := sim.Run(context.Background(), sc, append(slices.Clone(opts), sim.WithSeed(seed))...)
				Expect(err).NotTo(HaveOccurred())
				Expect(res.Verdict).To(Equal(reports.Failed), "seed %d", seed)
				Expect(whyFailed(res)).To(ContainSubstring(want), "seed %d", seed)
			}
		},
		Entry("payment-challenge, with a classifier that calls auth failures transient", "payment-challenge",
			func(*scenarios.Scenario) []sim.Option {
				return []sim.Option{sim.WithClassifier(func(sim.Env) (worker.Classifier, error) {
					return lenientClassifier{classify.Default()}, nil
				})}
			}, oracle.InvNoRetryOfFinal),
		Entry("auth-failure-burst, with a classifier that calls auth failures transient", "auth-failure-burst",
			func(*scenarios.Scenario) []sim.Option {
				return []sim.Option{sim.WithClassifier(func(sim.Env) (worker.Classifier, error) {
					return lenientClassifier{classify.Default()}, nil
				})}
			}, oracle.InvNoRetryOfFinal),
		Entry("worker-crash, with charges sent without an idempotency key", "worker-crash",
			func(sc *scenarios.Scenario) []sim.Option {
				sc.Workload.Tasks[0].IdempotencyKey = false
				return nil
			}, oracle.InvNoDoubleCharge),
		Entry("flapping-primary, with a breaker without hysteresis", "flapping-primary",
			func(sc *scenarios.Scenario) []sim.Option {
				sc.System.Breakers[0].Config.BackoffFactor = 1
				return nil
			}, "breaker primary changes state at most"),
		Entry("retry-storm-on-recovery, without the retry budget", "retry-storm-on-recovery",
			func(sc *scenarios.Scenario) []sim.Option {
				sc.System.Retry.Budget.Disabled = true
				return nil
			}, `"dead-letters with class transient = 0"`),
		Entry("dlq-overflow, without the DLQ monitor", "dlq-overflow",
			func(sc *scenarios.Scenario) []sim.Option {
				sc.System.Monitor = nil
				return nil
			}, `"pages with receiver on-call ≥ 1"`),
		Entry("poison-message, with an auto-retry that never gives up", "poison-message",
			func(sc *scenarios.Scenario) []sim.Option {
				sc.System.AutoRetry.MaxAutoRetries = 1000
				return nil
			}, `"dead-letters with task render-invoice = 3"`),
		Entry("graceful-degradation, without the breaker", "graceful-degradation",
			func(sc *scenarios.Scenario) []sim.Option {
				sc.System.Breakers = nil
				sc.Expect = slices.DeleteFunc(sc.Expect, func(e scenarios.Expectation) bool {
					switch e.(type) {
					case scenarios.BreakerOpened, scenarios.BreakerClosedBy:
						return true
					}
					return false
				})
				return nil
			}, `"dead-letters = 0"`),
	)
})
