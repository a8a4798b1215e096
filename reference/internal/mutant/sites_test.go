package mutant_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/internal/mutant"
)

// site matches a mutant's switch at its defect site.
var site = regexp.MustCompile(`mutant\.On\("([^"]+)"\)`)

// sites returns, for each mutant name switched in the reference's
// non-test sources (this package's own files aside), the files naming it.
func sites() map[string][]string {
	GinkgoHelper()
	root := filepath.Join("..", "..")
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && filepath.Base(p) == "mutant" {
			return fs.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range site.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = append(out[m[1]], p)
		}
		return nil
	})
	Expect(err).NotTo(HaveOccurred())
	return out
}

var _ = Describe("the mutant registry", func() {
	It("registers every mutant switched in the reference, and switches every registered one", func() {
		found := sites()
		var unregistered, unswitched []string
		for name, files := range found {
			if _, ok := mutant.Lookup(name); !ok {
				unregistered = append(unregistered, name+" ("+strings.Join(files, ", ")+")")
			}
		}
		for _, m := range mutant.All() {
			if len(found[m.Name]) == 0 {
				unswitched = append(unswitched, m.Name)
			}
		}
		Expect(unregistered).To(BeEmpty(), "mutant.On names a mutant the registry lacks")
		Expect(unswitched).To(BeEmpty(), "a registered mutant has no mutant.On site in reference/")
	})

	It("holds at least 25 mutants, every one named after its package, described, of a known class, and every class", func() {
		all := mutant.All()
		Expect(len(all)).To(BeNumerically(">=", 25))
		seen := map[mutant.Class]bool{}
		for _, m := range all {
			Expect(m.Name).To(HavePrefix(filepath.Base(m.Package)+"/"), m.Name)
			Expect(m.Description).NotTo(BeEmpty(), m.Name)
			Expect(mutant.Classes).To(ContainElement(m.Class), m.Name)
			seen[m.Class] = true
		}
		for _, c := range mutant.Classes {
			Expect(seen).To(HaveKey(c), "no mutant of class %s", c)
		}
		Expect(slices.IsSortedFunc(all, func(a, b mutant.Mutant) int { return strings.Compare(a.Name, b.Name) })).To(BeTrue())
	})

	It("covers every package of the reference's failure handling", func() {
		var pkgs []string
		for _, m := range mutant.All() {
			pkgs = append(pkgs, m.Package)
		}
		for _, p := range []string{"classify", "retry", "degrade", "alert", "dlq", "store/memstore", "worker", "redact"} {
			Expect(pkgs).To(ContainElement(p))
		}
	})

	It("switches nothing on in a release build", func() {
		if mutant.Enabled {
			Skip("built with the faultline_mutants tag: the release build's switch is not in this binary")
		}
		for _, m := range mutant.All() {
			Expect(mutant.On(m.Name)).To(BeFalse(), m.Name)
		}
	})
})
