//go:build faultline_mutants

package score_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/internal/mutant"
	"github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/scenarios"
	"github.com/faultline/faultline/sim"
)

// baselineFile lists the mutants expected to survive, each with its
// argument: equivalent, or a gap naming the harness extension it needs.
const baselineFile = "survivors.md"

// extraSeeds are the seeds a mutant that survives the scenarios' own seeds
// is tried on before it is called a survivor: a sample, so that the whole
// suite fits CI's budget.
var extraSeeds = []uint64{2}

// builtin is one scenario of the library, loaded once.
type builtin struct {
	name string
	sc   scenarios.Scenario
}

// kill is one built-in run that failed under a mutant: the rules it named.
type kill struct {
	scenario string
	seed     uint64
	rules    []string
}

// verdict is what became of one mutant.
type verdict struct {
	m     mutant.Mutant
	kills []kill
	// timedOut says the spec ran out of time before the mutant was judged.
	timedOut bool
}

// library loads every built-in, the scale lane's (tag "scale": tens of
// thousands of dead letters, seconds a run) last, so that a mutant another
// built-in kills never waits for them.
func library() []builtin {
	GinkgoHelper()
	var out, heavy []builtin
	for _, b := range scenarios.Builtins() {
		l, err := scenarios.LoadBuiltin(b.Name)
		Expect(err).NotTo(HaveOccurred(), b.Name)
		if slices.Contains(b.Tags, "scale") {
			heavy = append(heavy, builtin{name: b.Name, sc: l.Scenario})
			continue
		}
		out = append(out, builtin{name: b.Name, sc: l.Scenario})
	}
	return append(out, heavy...)
}

// run runs one built-in on seed (0: its own) and returns the rules it
// broke: the invariants violated and the expectations that failed, or why
// the run could not be carried out. Nil means it passed.
func run(ctx context.Context, b builtin, seed uint64) (rules []string) {
	defer func() {
		if r := recover(); r != nil {
			rules = []string{fmt.Sprintf("panic: %v", r)}
		}
	}()
	var opts []sim.Option
	if seed != 0 {
		opts = append(opts, sim.WithSeed(seed))
	}
	res, err := sim.Run(ctx, b.sc, opts...)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	if res.Verdict == reports.Passed {
		return nil
	}
	for _, inv := range res.Invariants {
		if inv.Verdict == reports.Failed {
			rules = append(rules, "invariant "+inv.Name)
		}
	}
	for _, e := range res.Expectations {
		if e.Verdict == reports.Failed {
			rules = append(rules, fmt.Sprintf("expect %q (%s)", e.Name, e.Actual))
		}
	}
	if len(rules) == 0 {
		rules = []string{fmt.Sprintf("%s: %s", res.Verdict, res.Error)}
	}
	return rules
}

// score runs the library against m: the built-ins on their own seeds, in
// the library's order, GOMAXPROCS at a time, up to the first wave in which
// one fails (the kills are that wave's: the same on every machine with as
// many cores); when none fails, again on extraSeeds.
func score(ctx context.Context, lib []builtin, m mutant.Mutant) verdict {
	GinkgoHelper()
	Expect(mutant.Set(m.Name)).To(Succeed())
	defer func() { Expect(mutant.Set("")).To(Succeed()) }()
	v := verdict{m: m}
	wave := runtime.GOMAXPROCS(0)
	for _, seed := range append([]uint64{0}, extraSeeds...) {
		for from := 0; from < len(lib) && len(v.kills) == 0; from += wave {
			part := lib[from:min(from+wave, len(lib))]
			for i, rules := range runAll(ctx, part, seed) {
				if rules != nil {
					v.kills = append(v.kills, kill{scenario: part[i].name, seed: seed, rules: rules})
				}
			}
			if ctx.Err() != nil {
				// Out of time: what the canceled runs said is no kill.
				return verdict{m: m, timedOut: true}
			}
		}
		if len(v.kills) > 0 {
			break
		}
	}
	return v
}

// runAll runs every built-in on seed, GOMAXPROCS at a time (each run is
// its own world; the switched-on mutant is the same for all), and returns
// each one's broken rules in the library's order.
func runAll(ctx context.Context, lib []builtin, seed uint64) [][]string {
	out := make([][]string, len(lib))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				out[i] = run(ctx, lib[i], seed)
			}
		})
	}
	for i := range lib {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// heading is a survivor's heading in the baseline file.
var heading = regexp.MustCompile("(?m)^## `([^`]+)`\\s*$")

// baseline reads the survivors the baseline file argues for, with their
// arguments.
func baseline() map[string]string {
	GinkgoHelper()
	b, err := os.ReadFile(baselineFile)
	Expect(err).NotTo(HaveOccurred())
	text := string(b)
	out := map[string]string{}
	locs := heading.FindAllStringSubmatchIndex(text, -1)
	for i, loc := range locs {
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		name := text[loc[2]:loc[3]]
		Expect(out).NotTo(HaveKey(name), "%s lists %s twice", baselineFile, name)
		out[name] = strings.TrimSpace(text[loc[1]:end])
	}
	return out
}

// table renders the score: one line a mutant, its killer and the rule that
// named it, or SURVIVED.
func table(vs []verdict) string {
	var sb strings.Builder
	killed := 0
	tw := tabwriter.NewWriter(&sb, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MUTANT\tCLASS\tKILLED BY\tRULE")
	for _, v := range vs {
		if v.timedOut {
			fmt.Fprintf(tw, "%s\t%s\tNOT JUDGED (out of time)\t\n", v.m.Name, v.m.Class)
			continue
		}
		if len(v.kills) == 0 {
			fmt.Fprintf(tw, "%s\t%s\tSURVIVED\t\n", v.m.Name, v.m.Class)
			continue
		}
		killed++
		k := v.kills[0]
		by := k.scenario
		if k.seed != 0 {
			by += fmt.Sprintf(" (seed %d)", k.seed)
		}
		if len(v.kills) > 1 {
			by += fmt.Sprintf(" +%d more", len(v.kills)-1)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.m.Name, v.m.Class, by, k.rules[0])
	}
	tw.Flush()
	fmt.Fprintf(&sb, "mutation score: %d of %d killed (%.1f%%)\n", killed, len(vs), 100*float64(killed)/float64(len(vs)))
	return sb.String()
}

var _ = Describe("the mutation score", Ordered, func() {
	var lib []builtin

	BeforeAll(func() {
		Expect(mutant.Enabled).To(BeTrue())
		lib = library()
		Expect(lib).NotTo(BeEmpty())
	})

	It("passes the whole library with no mutant switched on, on every seed the score uses", func(ctx SpecContext) {
		Expect(mutant.Set("")).To(Succeed())
		for _, seed := range append([]uint64{0}, extraSeeds...) {
			for i, rules := range runAll(ctx, lib, seed) {
				Expect(rules).To(BeNil(), "%s on seed %d fails without a mutant", lib[i].name, seed)
			}
		}
	}, SpecTimeout(2*time.Minute))

	It("kills every mutant but the survivors the baseline argues for", func(ctx SpecContext) {
		start := time.Now()
		var vs []verdict
		for _, m := range mutant.All() {
			vs = append(vs, score(ctx, lib, m))
		}
		AddReportEntry("mutation score", table(vs)+fmt.Sprintf("(%d mutants × %d built-ins in %s)\n", len(vs), len(lib), time.Since(start).Round(time.Second)), ReportEntryVisibilityAlways)
		if path := os.Getenv("FAULTLINE_MUTATION_KILLS"); path != "" {
			var sb strings.Builder
			for _, v := range vs {
				for _, k := range v.kills {
					fmt.Fprintf(&sb, "%s\t%s\tseed=%d\t%s\n", v.m.Name, k.scenario, k.seed, strings.Join(k.rules, "; "))
				}
			}
			Expect(os.WriteFile(path, []byte(sb.String()), 0o644)).To(Succeed())
		}

		argued := baseline()
		var survivors, stale []string
		for _, v := range vs {
			_, listed := argued[v.m.Name]
			switch {
			case len(v.kills) == 0 && !listed:
				survivors = append(survivors, v.m.Name)
			case len(v.kills) > 0 && listed:
				stale = append(stale, fmt.Sprintf("%s (killed by %s: %s)", v.m.Name, v.kills[0].scenario, v.kills[0].rules[0]))
			}
		}
		for name := range argued {
			_, ok := mutant.Lookup(name)
			Expect(ok).To(BeTrue(), "%s argues for %s, which the registry does not hold", baselineFile, name)
		}
		Expect(survivors).To(BeEmpty(), "the score dropped: these mutants survive the built-in library and %s does not argue for them; kill them with a scenario or an expectation, or argue them there", baselineFile)
		Expect(stale).To(BeEmpty(), "these mutants are killed now: remove them from %s", baselineFile)
	}, SpecTimeout(3*time.Minute))

	It("argues every survivor in a paragraph: equivalent, or a gap naming the harness extension it needs", func() {
		for name, arg := range baseline() {
			Expect(arg).To(MatchRegexp(`^(Equivalent|Gap: needs) `), "%s's argument in %s", name, baselineFile)
			Expect(len(strings.Fields(arg))).To(BeNumerically(">=", 20), "%s's argument in %s is not a paragraph", name, baselineFile)
		}
	})
})
