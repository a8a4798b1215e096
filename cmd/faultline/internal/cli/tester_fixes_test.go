package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// twins writes two scenario files that share metadata.name (revoked), both
// failing, and returns their paths.
func twins() (string, string) {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	Expect(os.WriteFile(a, []byte(failing), 0o600)).To(Succeed())
	Expect(os.WriteFile(b, []byte(strings.Replace(failing, "seed: 9", "seed: 11", 1)), 0o600)).To(Succeed())
	return a, b
}

var _ = Describe("two scenarios of one name in one run", func() {
	It("write a report each, the second's name suffixed, alike unsharded and merged from shards", func() {
		a, b := twins()
		tmp := GinkgoT().TempDir()
		whole := filepath.Join(tmp, "whole")
		_, errOut, code := run("run", a, b, "--report", "json,junit", "--report-dir", whole, "--progress", "never", "--no-shrink")
		Expect(code).To(Equal(cli.ExitFailed))
		Expect(errOut).To(ContainSubstring("note: " + b + ` is not the first scenario named "revoked" in this run: its reports are named revoked-2.seed-N.json`))
		files := reportFiles(whole)
		Expect(files).To(HaveKey("revoked.seed-9.json"))
		Expect(files).To(HaveKey("revoked-2.seed-11.json"))

		sweep := func(dir string, extra ...string) []string {
			return append([]string{"run", a, b, "--seeds", "1..2", "--report", "json,junit,md", "--report-dir", dir, "--progress", "never", "--no-shrink"}, extra...)
		}
		unsharded := filepath.Join(tmp, "unsharded")
		run(sweep(unsharded)...)
		s1, s2, merged := filepath.Join(tmp, "s1"), filepath.Join(tmp, "s2"), filepath.Join(tmp, "merged")
		run(sweep(s1, "--shard", "1/2")...)
		run(sweep(s2, "--shard", "2/2")...)
		_, _, code = run("report", "merge", s1, s2, "--out", merged)
		Expect(code).To(Equal(cli.ExitFailed))
		Expect(reportFiles(merged)).To(Equal(reportFiles(unsharded)))
		Expect(reportFiles(merged)).To(HaveKey("revoked.seed-2.json"))
		Expect(reportFiles(merged)).To(HaveKey("revoked-2.seed-2.json"))
		_, rows, _ := readSummary(filepath.Join(merged, "summary.json"))
		var names []string
		for _, r := range rows {
			names = append(names, r.Report)
		}
		Expect(names).To(Equal([]string{"revoked.seed-1.json", "revoked.seed-2.json", "revoked-2.seed-1.json", "revoked-2.seed-2.json"}))
	})
})

var _ = Describe("report merge on bad shards", func() {
	var lib, tmp, out string
	var dirs []string
	BeforeEach(func() {
		lib, tmp = library(), GinkgoT().TempDir()
		out = filepath.Join(tmp, "out")
		dirs = nil
		for _, i := range []string{"1", "2"} {
			dir := filepath.Join(tmp, "shard-"+i)
			dirs = append(dirs, dir)
			run("run", lib, "--seeds", "1..2", "--shard", i+"/2", "--report", "json,junit", "--report-dir", dir, "--progress", "never", "--no-shrink")
		}
	})
	expectOutEmpty := func() {
		GinkgoHelper()
		entries, err := os.ReadDir(out)
		if err == nil {
			Expect(entries).To(BeEmpty(), "nothing is written to --out")
		}
	}

	It("names the shard that lacks a failing run's report, and writes nothing", func() {
		_, rows, _ := readSummary(filepath.Join(dirs[1], "summary.json"))
		var missing string
		for _, r := range rows {
			if r.Report != "" {
				missing = r.Report
			}
		}
		Expect(missing).NotTo(BeEmpty())
		Expect(os.Remove(filepath.Join(dirs[1], missing))).To(Succeed())
		_, errOut, code := run("report", "merge", dirs[0], dirs[1], "--out", out)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("shard 2/2 (" + dirs[1] + ") lacks " + missing + ", the report of its run"))
		Expect(errOut).To(ContainSubstring("nothing was written to --out"))
		expectOutEmpty()
	})

	It("names the file, the line and column, the field and what was expected of a bad value", func() {
		path := filepath.Join(dirs[0], "summary.json")
		b, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(path, []byte(strings.Replace(string(b), `"totalRuns": 4`, `"totalRuns": "six"`, 1)), 0o600)).To(Succeed())
		_, errOut, code := run("report", "merge", dirs[0], dirs[1], "--out", out)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(MatchRegexp(`faultline: ` + regexpQuote(path) + `:\d+:16: totalRuns: expected a non-negative integer, got a string\n`))
		Expect(errOut).NotTo(ContainSubstring("Go struct"))
		expectOutEmpty()
	})

	It("says a cut-short summary is truncated, naming it", func() {
		path := filepath.Join(dirs[1], "summary.json")
		b, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		for _, cut := range []int{len(b) / 4, len(b) - 20} {
			Expect(os.WriteFile(path, b[:cut], 0o600)).To(Succeed())
			_, errOut, code := run("report", "merge", dirs[0], dirs[1], "--out", out)
			Expect(code).To(Equal(cli.ExitInvalid))
			Expect(errOut).To(ContainSubstring("faultline: " + path + ": "))
			Expect(errOut).To(ContainSubstring("the file is truncated"))
			Expect(errOut).NotTo(ContainSubstring("unexpected EOF"))
			expectOutEmpty()
		}
	})
})

func regexpQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `.`, `\.`, `+`, `\+`, `*`, `\*`, `?`, `\?`, `(`, `\(`, `)`, `\)`, `[`, `\[`, `]`, `\]`, `{`, `\{`, `}`, `\}`, `^`, `\^`, `$`, `\$`, `|`, `\|`)
	return r.Replace(s)
}

var _ = Describe("Redis configuration errors", func() {
	It("say a closed port once, exit 4", func() {
		_, errOut, code := run("run", writeFile("s.yaml", passing), "--backend", "redis", "--redis-url", "redis://127.0.0.1:1/0")
		Expect(code).To(Equal(cli.ExitUnavailable))
		Expect(strings.Count(errOut, "could not be reached")).To(Equal(1), errOut)
		Expect(errOut).To(ContainSubstring("Redis at 127.0.0.1:1 could not be reached (connect): dial tcp 127.0.0.1:1"))
	})

	It("say what is wrong with the password or the database, exit 2", func() {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		admin := redisstore.NewClient(srv.Addr)
		DeferCleanup(admin.Close)
		Expect(admin.ConfigSet(context.Background(), "requirepass", "tf4Pw").Err()).To(Succeed())
		f := writeFile("s.yaml", passing)
		for _, c := range []struct{ url, want string }{
			{"redis://:wrong@" + srv.Addr + "/0", "--redis-url: Redis at " + srv.Addr + " refused the password (WRONGPASS"},
			{"redis://" + srv.Addr + "/0", "--redis-url: Redis at " + srv.Addr + " needs a password, and the URL gives none (NOAUTH"},
			{"redis://:tf4Pw@" + srv.Addr + "/99", "--redis-url: Redis at " + srv.Addr + " has no database 99: the database number is out of range"},
		} {
			_, errOut, code := run("run", f, "--backend", "redis", "--redis-url", c.url)
			Expect(code).To(Equal(cli.ExitInvalid), c.url+": "+errOut)
			Expect(errOut).To(ContainSubstring(c.want))
			Expect(errOut).NotTo(ContainSubstring("could not be reached"))
			Expect(errOut).NotTo(ContainSubstring("tf4Pw"))
			_, errOut, code = run("dlq", "stats", "--redis-url", c.url)
			Expect(code).To(Equal(cli.ExitInvalid), "dlq stats "+c.url+": "+errOut)
			Expect(errOut).To(ContainSubstring(c.want))
		}
	})
})

var _ = Describe("--redis-url's help", func() {
	It("shows no default on run, where it is required with --backend redis, and keeps the other commands' default", func() {
		out, _, code := run("run", "--help")
		Expect(code).To(Equal(cli.ExitOK))
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "--redis-url") && strings.Contains(l, "required with it") {
				line = l
			}
		}
		Expect(line).NotTo(BeEmpty())
		Expect(line).NotTo(ContainSubstring("default"))
		out, _, _ = run("demo", "--help")
		Expect(out).To(ContainSubstring(`(default "redis://localhost:6379")`))
	})
})

var _ = Describe("faultline validate of a built-in's name", func() {
	It("checks the built-in, as run reads it", func() {
		out, errOut, code := run("validate", "graceful-shutdown")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		Expect(out).To(HavePrefix("ok  builtin:graceful-shutdown  graceful-shutdown: "))
	})

	It("says a name that is neither a file nor a built-in is neither, as run says it", func() {
		_, errOut, code := run("validate", "graceful-shutdow")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring(`"graceful-shutdow" is neither a file nor a built-in scenario`))
		Expect(errOut).To(ContainSubstring("graceful-shutdown"))
		_, errOut, code = run("validate", "missing.yaml")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("missing.yaml: cannot read the file"))
	})
})

var _ = Describe("the Markdown summary of an interrupted run", func() {
	It("counts the interrupted run and the runs not made as stdout does, in summary.md and the step summary", func() {
		quick := writeFile("steady.yaml", passing)
		long := writeFile("long.yaml", strings.NewReplacer("name: steady", "name: long", "duration: 1m", "duration: 6h",
			"rate: 10/s", "rate: 50/s", "atLeast: 500", "atLeast: 5").Replace(passing))
		later := writeFile("later.yaml", strings.Replace(passing, "name: steady", "name: later", 1))
		dir := GinkgoT().TempDir()
		step := filepath.Join(GinkgoT().TempDir(), "step.md")
		GinkgoT().Setenv("GITHUB_STEP_SUMMARY", step)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var once sync.Once
		undo := cli.SetAfterRelease(func() { once.Do(func() { time.AfterFunc(300*time.Millisecond, cancel) }) })
		defer undo()
		var out, errOut bytes.Buffer
		root := cli.New(&out, &errOut)
		root.SetArgs([]string{"run", quick, long, later, "--parallel", "1", "--no-shrink", "--progress", "never", "--report", "md", "--report-dir", dir})
		err := root.ExecuteContext(ctx)
		Expect(err).To(MatchError(cli.ErrInterrupted))
		Expect(out.String()).To(HaveSuffix("3 scenarios, 2 runs: 1 passed, 0 failed, 1 interrupted (expectations not evaluated); interrupted: 1 of 3 runs not made\n"))
		want := "## faultline: ⚠️ 1 of 2 runs passed, 1 interrupted (expectations not evaluated); 1 of 3 runs not made\n"
		md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(md)).To(HavePrefix(want))
		Expect(string(md)).To(ContainSubstring("| long | 5 | ⚠️ interrupted |"))
		stepMD, err := os.ReadFile(step)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(stepMD)).To(HavePrefix(want))
	})

	It("says, merged, how many runs a stopped shard did not make", func() {
		steady := writeFile("steady.yaml", passing)
		tmp := GinkgoT().TempDir()
		s1, s2, merged := filepath.Join(tmp, "s1"), filepath.Join(tmp, "s2"), filepath.Join(tmp, "m")
		_, _, code := run("run", steady, "--seeds", "1..4", "--shard", "1/2", "--report", "md", "--report-dir", s1, "--progress", "never")
		Expect(code).To(Equal(cli.ExitOK))
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // shard 2 stopped before its first run
		var out, errOut bytes.Buffer
		root := cli.New(&out, &errOut)
		root.SetArgs([]string{"run", steady, "--seeds", "1..4", "--shard", "2/2", "--report", "md", "--report-dir", s2, "--progress", "never"})
		Expect(root.ExecuteContext(ctx)).To(MatchError(cli.ErrInterrupted))
		stdout, _, code := run("report", "merge", s1, s2, "--out", merged)
		Expect(code).To(Equal(cli.ExitFailed))
		Expect(stdout).To(ContainSubstring("2 of 4 runs: 2 passed, 0 failed; 2 not made"))
		md, err := os.ReadFile(filepath.Join(merged, "summary.md"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(md)).To(HavePrefix("## faultline: ⚠️ 2 of 2 runs passed; 2 of 4 runs not made\n"))
	})
})
