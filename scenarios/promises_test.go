package scenarios_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/scenarios"
)

// The promise table, docs/promises.md: every promise of the reference with
// the built-ins and the checks that assert it, and the mutants that break
// it. These specs keep it true as the library and the reference change.
const (
	promisesFile = "../docs/promises.md"
	// mutantRegistry is read as text: the mutant package is internal to
	// reference/, and its names are all the table needs.
	mutantRegistry = "../reference/internal/mutant/registry.go"
)

// promiseRow is one row of the table.
type promiseRow struct {
	id, promise, pkg string
	scenarios        []string
	assertedBy       string
	mutants          []string
}

// ledgerInvariants are the invariants a row may name: the ledger's.
var ledgerInvariants = []string{
	oracle.InvConservation, oracle.InvLegalMove, oracle.InvNoMoveAfterDone, oracle.InvOneDLQEntry, oracle.InvNoRetryOfFinal,
	oracle.InvAttempts, oracle.InvNoDoubleCharge, oracle.InvCriticalPaged, oracle.InvOnePage, oracle.InvBreakerLegal,
	oracle.InvNoRerunAfterDead, oracle.InvNoSecretLeaves, oracle.InvOutcomeIsMove, oracle.InvNoLeaseLeftExpired,
}

var (
	promiseRowRE = regexp.MustCompile("^\\| ([A-Z]{2}[0-9]+) \\| (.+?) \\| ([a-z/]+) \\| (.*?) \\| (.*?) \\| (.*?) \\|$")
	backticked   = regexp.MustCompile("`([^`]+)`")
	expectRE     = regexp.MustCompile("expect `(\\{[^`]+\\})`")
	invariantRE  = regexp.MustCompile("invariant `([^`]+)`")
	registeredRE = regexp.MustCompile(`Name: "([^"]+)"`)
)

// promiseRows reads the table.
func promiseRows() []promiseRow {
	GinkgoHelper()
	b, err := os.ReadFile(promisesFile)
	Expect(err).NotTo(HaveOccurred())
	var rows []promiseRow
	for _, line := range strings.Split(string(b), "\n") {
		m := promiseRowRE.FindStringSubmatch(line)
		if m == nil {
			Expect(line).NotTo(MatchRegexp(`^\| [A-Z]{2}[0-9]+ \|`), "a row of %s this spec cannot read", promisesFile)
			continue
		}
		r := promiseRow{id: m[1], promise: m[2], pkg: m[3], assertedBy: m[5]}
		for _, s := range backticked.FindAllStringSubmatch(m[4], -1) {
			r.scenarios = append(r.scenarios, s[1])
		}
		for _, s := range backticked.FindAllStringSubmatch(m[6], -1) {
			r.mutants = append(r.mutants, s[1])
		}
		rows = append(rows, r)
	}
	return rows
}

// builtinExpects returns each built-in's expectations, as its file writes
// them.
func builtinExpects() map[string][]scenarios.Expect {
	GinkgoHelper()
	out := map[string][]scenarios.Expect{}
	for _, b := range scenarios.Builtins() {
		l, err := scenarios.LoadBuiltin(b.Name)
		Expect(err).NotTo(HaveOccurred())
		out[b.Name] = l.Document.Expect
	}
	return out
}

var _ = Describe("the promise table, docs/promises.md", func() {
	var (
		rows    []promiseRow
		expects map[string][]scenarios.Expect
	)
	BeforeEach(func() {
		rows = promiseRows()
		expects = builtinExpects()
	})

	It("has a row per promise of every package of the reference, each ID once", func() {
		Expect(len(rows)).To(BeNumerically(">=", 40))
		ids := map[string]bool{}
		pkgs := map[string]bool{}
		for _, r := range rows {
			Expect(ids).NotTo(HaveKey(r.id), "%s is used twice", r.id)
			ids[r.id] = true
			pkgs[r.pkg] = true
		}
		for _, p := range []string{"classify", "retry", "degrade", "alert", "dlq", "queue", "worker", "redact"} {
			Expect(pkgs).To(HaveKey(p), "no promise of package %s", p)
		}
	})

	It("names only built-ins, and every built-in has a row", func() {
		named := map[string]bool{}
		for _, r := range rows {
			for _, s := range r.scenarios {
				Expect(expects).To(HaveKey(s), "%s names scenario %s, which is not a built-in", r.id, s)
				named[s] = true
			}
		}
		for name := range expects {
			Expect(named).To(HaveKey(name), "built-in %s has no row in %s", name, promisesFile)
		}
	})

	It("asserts each promise with an expectation of one of its scenarios or a ledger invariant, or shows it as a gap", func() {
		for _, r := range rows {
			invs := invariantRE.FindAllStringSubmatch(r.assertedBy, -1)
			exps := expectRE.FindAllStringSubmatch(r.assertedBy, -1)
			if len(r.scenarios) == 0 {
				Expect(r.assertedBy).To(HavePrefix("gap: needs "), "%s names no scenario, so it is a gap: say what it needs", r.id)
				Expect(invs).To(BeEmpty(), "%s is a gap, yet names an invariant", r.id)
				Expect(exps).To(BeEmpty(), "%s is a gap, yet names an expectation", r.id)
				continue
			}
			Expect(len(invs)+len(exps)).To(BeNumerically(">", 0), "%s names scenarios but no expectation or invariant", r.id)
			for _, inv := range invs {
				Expect(ledgerInvariants).To(ContainElement(inv[1]), "%s names invariant %q, which the ledger does not check", r.id, inv[1])
			}
			for _, e := range exps {
				var want scenarios.Expect
				Expect(yaml.Unmarshal([]byte(e[1]), &want)).To(Succeed(), "%s: %s", r.id, e[1])
				found := false
				for _, s := range r.scenarios {
					for _, have := range expects[s] {
						found = found || reflect.DeepEqual(have, want)
					}
				}
				Expect(found).To(BeTrue(), "%s names expectation %s, which none of %v has", r.id, e[1], r.scenarios)
			}
		}
	})

	It("names only registered mutants", func() {
		b, err := os.ReadFile(mutantRegistry)
		Expect(err).NotTo(HaveOccurred())
		var registered []string
		for _, m := range registeredRE.FindAllStringSubmatch(string(b), -1) {
			registered = append(registered, m[1])
		}
		Expect(registered).NotTo(BeEmpty())
		for _, r := range rows {
			for _, m := range r.mutants {
				Expect(registered).To(ContainElement(m), "%s names mutant %s, which reference/internal/mutant does not register", r.id, m)
			}
		}
	})
})
