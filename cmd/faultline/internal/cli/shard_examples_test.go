package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
)

// The examples in docs/examples of a sweep sharded over a CI engine: each
// file is parsed, each shard's command taken from it with the index the
// engine would give set by hand, run through the CLI (on a small library
// and few seeds instead of the example's), the shards merged with the
// file's merge command, and the result compared with the unsharded run.
var _ = Describe("the sharded-sweep examples in docs/examples", Serial, func() {
	const examples = "../../../../docs/examples"
	var work, lib string

	BeforeEach(func() {
		lib = library()
		work = GinkgoT().TempDir()
		// The examples name relative paths (shard-1/, shards/): the specs
		// run them from a directory of their own, as a CI job runs them
		// from its workspace.
		wd, err := os.Getwd()
		Expect(err).NotTo(HaveOccurred())
		abs, err := filepath.Abs(examples)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.Chdir(work)).To(Succeed())
		DeferCleanup(os.Chdir, wd)
		lib, err = filepath.Abs(lib)
		Expect(err).NotTo(HaveOccurred())
		workExamples = abs
	})

	// unsharded runs the small library unsharded and returns its report
	// directory, for the merged one to be compared with.
	unsharded := func() string {
		GinkgoHelper()
		dir := filepath.Join(work, "unsharded")
		_, _, code := run("run", lib, "--seeds", smallSeeds, "--report", "json,junit,md", "--report-dir", dir, "--no-shrink", "--progress", "never")
		Expect(code).To(Equal(cli.ExitFailed))
		return dir
	}

	It("GitHub Actions: the matrix's shards, their artifacts and the merge job give the unsharded run's reports", func() {
		var wf struct {
			Env  map[string]string `yaml:"env"`
			Jobs map[string]struct {
				Needs    string `yaml:"needs"`
				Strategy struct {
					FailFast *bool            `yaml:"fail-fast"`
					Matrix   map[string][]int `yaml:"matrix"`
				} `yaml:"strategy"`
				Steps []ghStep `yaml:"steps"`
			} `yaml:"jobs"`
		}
		b, err := os.ReadFile(filepath.Join(workExamples, "github-actions-shards.yml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.Unmarshal(b, &wf)).To(Succeed())
		shard, merge := wf.Jobs["shard"], wf.Jobs["merge"]
		indexes := shard.Strategy.Matrix["index"]
		Expect(indexes).To(HaveLen(4))
		Expect(shard.Strategy.FailFast).To(HaveValue(BeFalse()), "a failing shard must not cancel the others")
		Expect(merge.Needs).To(Equal("shard"))
		env := map[string]string{}
		for k, v := range wf.Env {
			env[k] = v
		}
		Expect(env).To(HaveKey("LIBRARY"))
		Expect(env).To(HaveKey("SEEDS"))
		env["LIBRARY"], env["SEEDS"] = lib, smallSeeds

		artifacts := filepath.Join(work, "artifacts")
		ranShards := 0
		for _, idx := range indexes {
			expr := strings.NewReplacer("${{ matrix.index }}", strconv.Itoa(idx), "${{ strategy.job-total }}", strconv.Itoa(len(indexes)))
			for _, st := range shard.Steps {
				for _, line := range faultlineLines(expr.Replace(st.Run)) {
					args := shellArgs(line, env)
					Expect(args).To(ContainElement(fmt.Sprintf("%d/%d", idx, len(indexes))))
					_, _, code := run(args...)
					Expect(code).To(BeElementOf(cli.ExitOK, cli.ExitFailed))
					ranShards++
				}
				if strings.HasPrefix(st.Uses, "actions/upload-artifact") {
					// The runner uploads the shard's directory under the
					// artifact's name.
					name, path := expr.Replace(st.With["name"]), expr.Replace(st.With["path"])
					Expect(os.CopyFS(filepath.Join(artifacts, name), os.DirFS(filepath.Join(work, path)))).To(Succeed())
				}
			}
		}
		Expect(ranShards).To(Equal(len(indexes)))

		merged := false
		for _, st := range merge.Steps {
			if strings.HasPrefix(st.Uses, "actions/download-artifact") {
				// download-artifact puts each artifact matching the
				// pattern in a directory of its name under path.
				matches, err := filepath.Glob(filepath.Join(artifacts, st.With["pattern"]))
				Expect(err).NotTo(HaveOccurred())
				Expect(matches).To(HaveLen(len(indexes)))
				for _, m := range matches {
					Expect(os.CopyFS(filepath.Join(work, st.With["path"], filepath.Base(m)), os.DirFS(m))).To(Succeed())
				}
			}
			for _, line := range faultlineLines(st.Run) {
				args := shellArgs(line, env)
				Expect(args[:2]).To(Equal([]string{"report", "merge"}))
				out, errOut, code := run(args...)
				Expect(code).To(Equal(cli.ExitFailed), "the library has a failing scenario: %s%s", out, errOut)
				Expect(out).To(ContainSubstring("merged 4 shards of 2 scenarios × seeds 1..3: 6 of 6 runs: 3 passed, 3 failed"))
				merged = true
			}
		}
		Expect(merged).To(BeTrue(), "the merge job runs faultline report merge")
		Expect(reportFiles(filepath.Join(work, "merged"))).To(Equal(reportFiles(unsharded())))
	})

	It("Kubernetes: the Indexed Job's pods (JOB_COMPLETION_INDEX 0..N-1) and the merge Job give the unsharded run's reports", func() {
		type container struct {
			Env     []struct{ Name, Value string } `yaml:"env"`
			Command []string                       `yaml:"command"`
		}
		type manifest struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
			Spec struct {
				CompletionMode string `yaml:"completionMode"`
				Completions    int    `yaml:"completions"`
				Parallelism    int    `yaml:"parallelism"`
				Template       struct {
					Spec struct {
						Containers []container `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		f, err := os.Open(filepath.Join(workExamples, "k8s-indexed-job.yaml"))
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		dec := yaml.NewDecoder(f)
		var jobs []manifest
		for {
			var m manifest
			if err := dec.Decode(&m); err != nil {
				Expect(err.Error()).To(ContainSubstring("EOF"))
				break
			}
			if m.Kind == "Job" {
				jobs = append(jobs, m)
			}
		}
		Expect(jobs).To(HaveLen(2))
		sweep, merge := jobs[0], jobs[1]
		Expect(sweep.Spec.CompletionMode).To(Equal("Indexed"))
		n := sweep.Spec.Completions
		Expect(n).To(BeNumerically(">", 1))

		reportsDir := filepath.Join(work, "reports") // the shared volume
		envOf := func(c container) map[string]string {
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			Expect(env).To(HaveKeyWithValue("REPORTS", "/reports"))
			env["REPORTS"] = reportsDir
			if _, ok := env["LIBRARY"]; ok {
				env["LIBRARY"], env["SEEDS"] = lib, smallSeeds
			}
			return env
		}
		c := sweep.Spec.Template.Spec.Containers[0]
		Expect(c.Command[:2]).To(Equal([]string{"/bin/sh", "-c"}))
		env := envOf(c)
		Expect(env).To(HaveKeyWithValue("SHARDS", strconv.Itoa(n)), "SHARDS is the Job's completions")
		for idx := range n {
			env["JOB_COMPLETION_INDEX"] = strconv.Itoa(idx) // 0-based, as Kubernetes sets it
			lines := faultlineLines(c.Command[2])
			Expect(lines).To(HaveLen(1))
			args := shellArgs(lines[0], env)
			Expect(args).To(ContainElement(fmt.Sprintf("%d/%d", idx+1, n)), "the 0-based index made 1-based")
			_, _, code := run(args...)
			Expect(code).To(BeElementOf(cli.ExitOK, cli.ExitFailed))
		}

		mc := merge.Spec.Template.Spec.Containers[0]
		lines := faultlineLines(mc.Command[2])
		Expect(lines).To(HaveLen(1))
		args := shellArgs(lines[0], envOf(mc))
		Expect(args[:2]).To(Equal([]string{"report", "merge"}))
		out, errOut, code := run(args...)
		Expect(code).To(Equal(cli.ExitFailed), "the library has a failing scenario: %s%s", out, errOut)
		Expect(out).To(ContainSubstring(fmt.Sprintf("merged %d shards of 2 scenarios × seeds 1..3: 6 of 6 runs: 3 passed, 3 failed", n)))
		Expect(reportFiles(filepath.Join(reportsDir, "merged"))).To(Equal(reportFiles(unsharded())))
	})
})

// smallSeeds replaces the examples' seed range.
const smallSeeds = "1..3"

// workExamples is docs/examples, absolute (the specs change directory).
var workExamples string

// ghStep is a GitHub Actions step.
type ghStep struct {
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
}

// faultlineLines are a script's lines that call faultline.
func faultlineLines(script string) []string {
	var out []string
	for _, line := range strings.Split(script, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "faultline ") {
			out = append(out, line)
		}
	}
	return out
}

// shellArgs are the arguments a POSIX shell gives faultline for line, with
// env set: variables, arithmetic ($((…))) and globs expanded as the CI
// engine's shell would, in the current directory.
func shellArgs(line string, env map[string]string) []string {
	GinkgoHelper()
	script := "set -- " + strings.TrimPrefix(line, "faultline ") + `; printf '%s\0' "$@"`
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "sh: %s", stderr.String())
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}
