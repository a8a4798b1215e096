package cli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

// docFiles are the README and the docs: every `faultline` command they
// show must be one a user can type today.
func docFiles() []string {
	GinkgoHelper()
	const root = "../../../.."
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	Expect(err).NotTo(HaveOccurred())
	examples, err := filepath.Glob(filepath.Join(root, "examples", "*", "README.md"))
	Expect(err).NotTo(HaveOccurred())
	return append(append([]string{filepath.Join(root, "README.md")}, files...), examples...)
}

// fence is one fenced block of a Markdown file: its language, its lines,
// where it starts, and whether the line before it asks for it to be run in
// order (<!-- readme:runs-in-order -->).
type fence struct {
	lang    string
	lines   []string
	line    int
	inOrder bool
}

func fences(text string) []fence {
	var out []fence
	var cur *fence
	prev := ""
	for i, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case cur == nil && strings.HasPrefix(t, "```"):
			cur = &fence{lang: strings.TrimPrefix(t, "```"), line: i + 1, inOrder: strings.Contains(prev, "readme:runs-in-order")}
		case cur != nil && t == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		}
		if t != "" {
			prev = t
		}
	}
	return out
}

// commands are the block's faultline command lines: a shell line starting
// with "faultline " (continued over a trailing backslash), or a transcript's
// "$ faultline ", each split as a shell splits it, its comment dropped.
func commands(f fence) [][]string {
	shell := f.lang == "sh" || f.lang == "" || f.lang == "bash" || f.lang == "console"
	var out [][]string
	for i := 0; i < len(f.lines); i++ {
		l := strings.TrimSpace(f.lines[i])
		for strings.HasSuffix(l, "\\") && i+1 < len(f.lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(f.lines[i])
		}
		switch {
		case strings.HasPrefix(l, "$ faultline "):
			l = strings.TrimPrefix(l, "$ ")
		case shell && strings.HasPrefix(l, "faultline "):
		default:
			continue
		}
		out = append(out, shellWords(l))
	}
	return out
}

// shellWords splits a command line as sh does for the quoting docs use
// ('…', "…"), and drops a trailing # comment.
func shellWords(l string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range l {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '#' && !inWord:
			return words
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

var _ = Describe("the commands the README and the docs show", func() {
	It("each name a command faultline has and parse with its current flags", func() {
		seen := 0
		for _, file := range docFiles() {
			b, err := os.ReadFile(file)
			Expect(err).NotTo(HaveOccurred())
			for _, f := range fences(string(b)) {
				for _, args := range commands(f) {
					seen++
					where := filepath.Base(filepath.Dir(file)) + "/" + filepath.Base(file) + ", the block at line " + itoa(f.line) + ": faultline " + strings.Join(args[1:], " ")
					root := cli.New(nil, nil)
					cmd, rest, err := root.Find(args[1:])
					Expect(err).NotTo(HaveOccurred(), where)
					Expect(cmd).NotTo(BeIdenticalTo(root), "%s: no such command", where)
					Expect(cmd.ParseFlags(rest)).To(Succeed(), where)
				}
			}
		}
		Expect(seen).To(BeNumerically(">", 50), "the docs show commands")
	})

	It("runs every block marked to run in order, top to bottom, against a real Redis", func() {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		// A block's files (an export, then its import) go to a folder of
		// the spec's own.
		wd, err := os.Getwd()
		Expect(err).NotTo(HaveOccurred())
		docs := docFiles()
		for i, f := range docs {
			docs[i] = filepath.Join(wd, f)
		}
		Expect(os.Chdir(GinkgoT().TempDir())).To(Succeed())
		DeferCleanup(os.Chdir, wd)
		url := "redis://" + srv.Addr + "/0"
		ran := 0
		for _, file := range docs {
			b, err := os.ReadFile(file)
			Expect(err).NotTo(HaveOccurred())
			for _, f := range fences(string(b)) {
				if !f.inOrder {
					continue
				}
				for _, raw := range f.lines {
					l := strings.ReplaceAll(strings.TrimSpace(raw), "redis://127.0.0.1:6379/0", url)
					if v, ok := strings.CutPrefix(l, "export "); ok {
						name, value, _ := strings.Cut(v, "=")
						GinkgoT().Setenv(name, value)
						continue
					}
					if !strings.HasPrefix(l, "faultline ") {
						continue
					}
					args := shellWords(l)
					where := filepath.Base(file) + ", the block at line " + itoa(f.line) + ": " + l
					out, errOut, code := run(args[1:]...)
					Expect(code).To(Equal(cli.ExitOK), "%s\nstdout:\n%s\nstderr:\n%s", where, out, errOut)
					ran++
				}
			}
		}
		Expect(ran).To(BeNumerically(">=", 25), "the README's DLQ tour and docs/dlq.md's blocks run")
	})
})

func itoa(n int) string { return strconv.Itoa(n) }

var _ = Describe("the example reports (docs/examples/reports)", func() {
	It("are what the command the docs show produces today (go generate ./cmd/faultline/internal/cli makes them)", func() {
		wd, err := os.Getwd()
		Expect(err).NotTo(HaveOccurred())
		root := filepath.Join(wd, "..", "..", "..", "..")
		want := filepath.Join(root, "docs", "examples", "reports")
		got := GinkgoT().TempDir()
		Expect(os.Chdir(root)).To(Succeed())
		DeferCleanup(os.Chdir, wd)
		_, errOut, code := run("run", "dlq-basics", "docs/examples/payment-challenge-retry-401.yaml",
			"--report", "json,junit,md,html", "--report-dir", got, "--no-shrink")
		Expect(code).To(Equal(cli.ExitFailed), errOut)
		files, err := os.ReadDir(got)
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(HaveLen(6))
		for _, f := range files {
			made, err := os.ReadFile(filepath.Join(got, f.Name()))
			Expect(err).NotTo(HaveOccurred())
			kept, err := os.ReadFile(filepath.Join(want, f.Name()))
			Expect(err).NotTo(HaveOccurred(), "docs/examples/reports lacks %s: go generate ./cmd/faultline/internal/cli", f.Name())
			Expect(string(made)).To(Equal(string(kept)), "docs/examples/reports/%s is not what the command produces: go generate ./cmd/faultline/internal/cli", f.Name())
		}
	})
})
