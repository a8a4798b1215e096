package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

// The README is what a new user reads on a clean clone: every link it makes
// must resolve inside the repository, the binary must be installed before an
// example calls it, and every command it shows must exist.
var _ = Describe("the README on a clean clone", func() {
	const root = "../../../.."
	readme := func() string {
		GinkgoHelper()
		b, err := os.ReadFile(filepath.Join(root, "README.md"))
		Expect(err).NotTo(HaveOccurred())
		return string(b)
	}

	It("links only to files of the repository, and each one is there", func() {
		links := regexp.MustCompile(`\]\(([^)]+)\)`).FindAllStringSubmatch(readme(), -1)
		Expect(links).NotTo(BeEmpty())
		for _, m := range links {
			target, _, _ := strings.Cut(m[1], "#")
			Expect(target).NotTo(MatchRegexp(`^[a-z]+://`), "a link outside the repository: %s", m[1])
			Expect(filepath.Clean(target)).NotTo(HavePrefix(".."), "a link outside the repository: %s", m[1])
			_, err := os.Stat(filepath.Join(root, target))
			Expect(err).NotTo(HaveOccurred(), "the README links to %s, which is not in the repository", m[1])
		}
	})

	It("installs faultline before the first example that calls it, and shows only commands that exist", func() {
		text := readme()
		blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1)
		installed := false
		known := map[string]bool{}
		for _, c := range cli.New(nil, nil).Commands() {
			known[c.Name()] = true
		}
		shown := 0
		for _, b := range blocks {
			for _, line := range strings.Split(b[1], "\n") {
				line = strings.TrimSpace(line)
				if strings.HasPrefix(line, "go install ./cmd/faultline") {
					installed = true
				}
				if !strings.HasPrefix(line, "faultline ") {
					continue
				}
				shown++
				Expect(installed).To(BeTrue(), "%q is shown before `go install ./cmd/faultline`", line)
				sub := strings.Fields(line)[1]
				Expect(known).To(HaveKey(sub), "the README shows %q: faultline has no command %q", line, sub)
			}
		}
		Expect(shown).To(BeNumerically(">", 5))
	})

	It("tours a drill, with its output, and stays a page a newcomer finishes (250 lines at most)", func() {
		blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readme(), -1)
		drills := 0
		for _, b := range blocks {
			if regexp.MustCompile(`(?m)^faultline drill `).MatchString(b[1]) {
				drills++
			}
		}
		Expect(drills).To(BeNumerically(">=", 1))
		Expect(readme()).To(MatchRegexp("(?s)faultline drill payment-challenge.*```text\n(PASS|FAIL)  payment-challenge  seed 1\n"))
		Expect(strings.Count(readme(), "\n")).To(BeNumerically("<=", 250), "the README is a page: details go to docs/")
	})

	It("leaves no product Go file over 800 lines: a file per concern", func() {
		var big []string
		Expect(filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "examples" || d.Name() == "testdata" || d.Name() == "node_modules") && path != root {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if n := strings.Count(string(b), "\n"); n > 800 {
				rel, _ := filepath.Rel(root, path)
				big = append(big, fmt.Sprintf("%s (%d lines)", rel, n))
			}
			return nil
		})).To(Succeed())
		Expect(big).To(BeEmpty(), "split by concern, the package doc the map of its files")
	})

	It("promises nothing that is not built: no stale issue numbers", func() {
		text := readme()
		Expect(text).NotTo(MatchRegexp(`(?i)next issues?|issue #\d+`))
		Expect(text).NotTo(ContainSubstring("../shared"))
	})
})

var _ = Describe("a flag given a value it does not take", func() {
	It("says what the flag takes, in plain words, with exit 2", func() {
		_, stderr, code := run("run", "dlq-basics", "--max-depth", "abc")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring(`--max-depth takes a whole number, got "abc"`))
		Expect(stderr).NotTo(ContainSubstring("strconv"), "no Go-internal parse error")
	})
})
