package cli_test

import (
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/scenarios"
)

var _ = Describe("faultline drill", func() {
	It("refuses a Redis off loopback before any connection, and says how to allow it", func() {
		// 192.0.2.1 is TEST-NET-1: the check is made on the parsed URL,
		// and nothing is dialled (a dial would fail the spec's time).
		_, stderr, code := run("drill", "worker-crash", "--redis-url", "redis://:hunter2@192.0.2.1:6379/0")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring("not on loopback"))
		Expect(stderr).To(ContainSubstring("--allow-remote"))
		Expect(stderr).NotTo(ContainSubstring("hunter2"))
	})

	It("never echoes a password in a --redis-url typed wrong", func() {
		for _, u := range []string{":s3cret@127.0.0.1:6379", "s3cret@127.0.0.1:6379", "redis:/:s3cret@127.0.0.1:6379",
			"redis//:s3cret@127.0.0.1:6379", "redis://:s3 cret@127.0.0.1:6379/0"} {
			stdout, stderr, code := run("drill", "worker-crash", "--redis-url", u, "--dry-run")
			Expect(code).To(Equal(cli.ExitInvalid), u)
			Expect(stdout+stderr).NotTo(ContainSubstring("s3"), u)
		}
	})

	It("needs an explicit --namespace with --allow-remote", func() {
		_, stderr, code := run("drill", "worker-crash", "--redis-url", "192.0.2.1:6379", "--allow-remote")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring("--namespace"))
	})

	It("says what each flag takes", func() {
		for _, args := range [][]string{
			{"--time-scale", "0.5"}, {"--time-scale", "5000"}, {"--workers", "-1"}, {"--concurrency", "-1"}, {"--progress", "sometimes"},
			{"--metrics-listen", "0.0.0.0:9464"},
		} {
			_, stderr, code := run(append([]string{"drill", "worker-crash", "--redis-url", "127.0.0.1:1"}, args...)...)
			Expect(code).To(Equal(cli.ExitInvalid), "%v", args)
			Expect(stderr).To(ContainSubstring(args[0]), "%v", args)
		}
	})

	It("refuses a time scale too fast for the scenario, naming the interval and the fastest scale", func() {
		_, stderr, code := run("drill", "payment-challenge", "--redis-url", "127.0.0.1:1", "--time-scale", "900")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(MatchRegexp(`--time-scale 900: .* under the 2ms .*; the fastest scale for this scenario is \d+`))
	})

	It("refuses a scenario part that has no live form, naming it", func() {
		dir := GinkgoT().TempDir()
		f := filepath.Join(dir, "s.yaml")
		Expect(os.WriteFile(f, []byte(`apiVersion: faultline/v1
kind: Scenario
metadata: {name: set-workers}
duration: 1m
workload:
  tasks: [{name: t}]
  arrivals: {rate: 1/s}
steps:
  - {at: 30s, action: set-workers, workers: 2}
`), 0o600)).To(Succeed())
		_, stderr, code := run("drill", f, "--redis-url", "127.0.0.1:1")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring("steps[0] (set-workers at 30s)"))
		Expect(stderr).To(ContainSubstring("docs/drills.md"))
	})

	It("prints the fault timeline on --dry-run and touches nothing (no Redis listens there)", func() {
		stdout, stderr, code := run("drill", "payment-challenge", "--redis-url", "127.0.0.1:1", "--dry-run", "--time-scale", "20")
		Expect(code).To(Equal(cli.ExitOK), stderr)
		Expect(stdout).To(ContainSubstring("drill payment-challenge (seed 1, 10m0s at time scale 20 = 30s on the wall clock): fault timeline"))
		Expect(stdout).To(MatchRegexp(`4m0s\s+primary-down\s+gateway dependency/payment-gateway answers outage`))
	})

	It("takes --workers fewer than the scenario's slots (the processes run them between them), with or without --concurrency", func() {
		_, stderr, code := run("drill", "worker-crash", "--workers", "2", "--redis-url", "127.0.0.1:1", "--dry-run")
		Expect(code).To(Equal(cli.ExitOK), stderr)
		_, stderr, code = run("drill", "worker-crash", "--workers", "2", "--concurrency", "3", "--redis-url", "127.0.0.1:1", "--dry-run")
		Expect(code).To(Equal(cli.ExitOK), stderr)
	})

	It("is unavailable (exit 4) when Redis cannot be reached", func() {
		_, stderr, code := run("drill", "worker-crash", "--redis-url", "127.0.0.1:1", "--report-dir", GinkgoT().TempDir())
		Expect(code).To(Equal(cli.ExitUnavailable), stderr)
		Expect(stderr).To(ContainSubstring("127.0.0.1:1"))
	})
})

var _ = Describe("faultline report check", func() {
	It("refuses a history no drill could have written, saying which field", func() {
		dir := GinkgoT().TempDir()
		for field, doc := range map[string]string{
			"timeScale":  `{"historyVersion":1,"scenario":"s","timeScale":0,"durationMs":1000,"endedMs":1000,"workers":["w1"],"snapshots":[{}]}`,
			"durationMs": `{"historyVersion":1,"scenario":"s","timeScale":1,"durationMs":-1,"endedMs":0,"workers":["w1"],"snapshots":[{}]}`,
			"endedMs":    `{"historyVersion":1,"scenario":"s","timeScale":1,"durationMs":1000,"endedMs":5000,"workers":["w1"],"snapshots":[{}]}`,
			"workers":    `{"historyVersion":1,"scenario":"s","timeScale":1,"durationMs":1000,"endedMs":1000,"workers":[],"snapshots":[{}]}`,
		} {
			f := filepath.Join(dir, field+".json")
			Expect(os.WriteFile(f, []byte(doc), 0o600)).To(Succeed())
			_, stderr, code := run("report", "check", f)
			Expect(code).To(Equal(cli.ExitInvalid), field)
			Expect(stderr).To(ContainSubstring(field), field)
		}
	})

	It("never quotes the file a history names as its scenario", func() {
		f := filepath.Join(GinkgoT().TempDir(), "h.json")
		Expect(os.WriteFile(f, []byte(`{"historyVersion":1,"scenario":"s","source":"/etc/passwd","timeScale":1,"durationMs":1000,"endedMs":1000,"workers":["w1"],"snapshots":[{}]}`), 0o600)).To(Succeed())
		_, stderr, code := run("report", "check", f)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring("does not load as a scenario"))
		Expect(stderr).NotTo(ContainSubstring("root:"))
	})

	It("refuses a file that is not a drill's history", func() {
		f := filepath.Join(GinkgoT().TempDir(), "h.json")
		Expect(os.WriteFile(f, []byte(`{"reportVersion": 3}`), 0o600)).To(Succeed())
		_, stderr, code := run("report", "check", f)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring("not a drill history"))
	})
})

var _ = Describe("faultline run --history", func() {
	It("writes a simulated run's history (mode 0644, masked) that report check judges to the run's own verdict", func() {
		dir := GinkgoT().TempDir()
		f := filepath.Join(dir, "h.json")
		out, stderr, code := run("run", "dlq-full-reject", "--seed", "2", "--history", f, "--no-shrink")
		Expect(code).To(Equal(cli.ExitOK), stderr)
		Expect(out).To(HavePrefix("PASS"))
		st, err := os.Stat(f)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o644)))
		again, stderr, code := run("report", "check", f)
		Expect(code).To(Equal(cli.ExitOK), stderr)
		Expect(again).To(And(HavePrefix("PASS  dlq-full-reject  seed 2"), ContainSubstring("judged again from a simulated run's history")))
		Expect(again).NotTo(ContainSubstring("wall clock"))
	})

	It("keeps no secret at rest: each is a keyed hash, equal ones equal, a planted one kept; report check judges the masked file as the raw one; --history-raw writes it as it was, mode 0600", func() {
		dir := GinkgoT().TempDir()
		// secrets-stay-inside without its planted list: the token and the
		// webhook's secret are then real secrets, masked at rest.
		b, err := fs.ReadFile(scenarios.BuiltinFS(), "builtin/secrets-stay-inside.yaml")
		Expect(err).NotTo(HaveOccurred())
		src := regexp.MustCompile(`(?m)^invariants:\n  secrets:\n(    - .*\n)+`).ReplaceAllString(string(b), "")
		Expect(src).NotTo(Equal(string(b)))
		sc := filepath.Join(dir, "s.yaml")
		Expect(os.WriteFile(sc, []byte(src), 0o600)).To(Succeed())
		masked, raw := filepath.Join(dir, "masked.json"), filepath.Join(dir, "raw.json")
		_, stderr, code := run("run", sc, "--history", masked, "--no-shrink")
		Expect(code).To(Equal(cli.ExitOK), stderr)
		_, stderr, code = run("run", sc, "--history", raw, "--history-raw", "--no-shrink")
		Expect(code).To(Equal(cli.ExitOK), stderr)

		rb, err := os.ReadFile(raw)
		Expect(err).NotTo(HaveOccurred())
		Expect(decoded(rb)).To(ContainSubstring("q8Zr4TkX2mPvL9wNf7Hc"), "the raw history keeps what was observed")
		st, err := os.Stat(raw)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o600)))

		mb, err := os.ReadFile(masked)
		Expect(err).NotTo(HaveOccurred())
		text := decoded(mb)
		Expect(text).NotTo(ContainSubstring("q8Zr4TkX2mPvL9wNf7Hc"))
		Expect(text).NotTo(ContainSubstring("s3cr3tW3bh00kT0ken"))
		token := regexp.MustCompile(`Bearer (redacted-[0-9a-f]{12})`).FindAllStringSubmatch(text, -1)
		Expect(len(token)).To(BeNumerically(">", 1))
		for _, m := range token {
			Expect(m[1]).To(Equal(token[0][1]), "one token, one mask")
		}

		want, _, code := run("report", "check", raw)
		Expect(code).To(Equal(cli.ExitOK))
		got, _, code := run("report", "check", masked)
		Expect(code).To(Equal(cli.ExitOK))
		Expect(firstLine(got)).To(Equal(firstLine(want)))

		// The built-in as it is: its planted secrets are kept, so the
		// check that none leaves reads them.
		planted := filepath.Join(dir, "planted.json")
		_, stderr, code = run("run", "secrets-stay-inside", "--history", planted, "--no-shrink")
		Expect(code).To(Equal(cli.ExitOK), stderr)
		pb, err := os.ReadFile(planted)
		Expect(err).NotTo(HaveOccurred())
		Expect(decoded(pb)).To(ContainSubstring("q8Zr4TkX2mPvL9wNf7Hc"))
		again, _, code := run("report", "check", planted)
		Expect(code).To(Equal(cli.ExitOK))
		Expect(again).To(HavePrefix("PASS  secrets-stay-inside"))
	})

	It("refuses, before the run, a history it cannot write (exit 2, naming the file)", func() {
		f := filepath.Join(GinkgoT().TempDir(), "no-such-folder", "h.json")
		out, stderr, code := run("run", "dlq-basics", "--history", f)
		Expect(code).To(Equal(cli.ExitInvalid), stderr)
		Expect(stderr).To(ContainSubstring("write " + f))
		Expect(out).NotTo(ContainSubstring("ERROR"), "no run was carried out")
	})

	It("writes one run's history only: more than one run is refused, saying why", func() {
		f := filepath.Join(GinkgoT().TempDir(), "h.json")
		_, stderr, code := run("run", "dlq-basics", "--seeds", "1..2", "--history", f)
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring("--history writes one run's history: give one scenario and at most one seed (this is 2 runs)"))
		_, err := os.Stat(f)
		Expect(os.IsNotExist(err)).To(BeTrue(), "nothing written")
	})
})

var _ = Describe("faultline drill --all", func() {
	It("takes no scenario besides it (exit 2, saying why)", func() {
		_, stderr, code := run("drill", "--all", "dlq-basics", "--redis-url", "127.0.0.1:1")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(stderr).To(ContainSubstring("--all drills every built-in that runs live: give it no scenario"))
	})

	It("drills every built-in that runs live, and names each one that does not and why", func() {
		stdout, stderr, code := run("drill", "--all", "--redis-url", "127.0.0.1:1", "--dry-run")
		Expect(code).To(Equal(cli.ExitOK), stderr)
		Expect(stderr).To(ContainSubstring("--all: requeue-under-other-writes does not run live"))
		for _, name := range []string{"payment-challenge", "worker-crash", "dlq-basics", "poison-message"} {
			Expect(stdout).To(ContainSubstring("drill "+name+" (seed"), name)
		}
		Expect(stdout).NotTo(ContainSubstring("drill requeue-under-other-writes"))
	})
})

// decoded is a history's text with its payloads (base64) decoded beside
// it, so that a search finds a secret in either.
func decoded(b []byte) string {
	var out strings.Builder
	out.Write(b)
	for _, m := range regexp.MustCompile(`"payload":"([A-Za-z0-9+/=]+)"`).FindAllSubmatch(b, -1) {
		if d, err := base64.StdEncoding.DecodeString(string(m[1])); err == nil {
			out.WriteByte('\n')
			out.Write(d)
		}
	}
	return out.String()
}

// firstLine is s's first line.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
