package cli_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/store/redisstore"
)

var _ = Describe("faultline run --backend", func() {
	// reportOf runs worker-crash with args and returns its JSON report.
	reportOf := func(args ...string) []byte {
		GinkgoHelper()
		dir := GinkgoT().TempDir()
		out, errOut, code := run(append([]string{"run", "worker-crash", "--report", "json", "--report-dir", dir}, args...)...)
		Expect(code).To(Equal(cli.ExitOK), out+errOut)
		b, err := os.ReadFile(filepath.Join(dir, "worker-crash.seed-1.json"))
		Expect(err).NotTo(HaveOccurred())
		return b
	}

	It("writes the same report on memory (the default), miniredis and a real redis-server", func() {
		memory := reportOf()
		Expect(reportOf("--backend", "memory")).To(Equal(memory))
		Expect(string(reportOf("--backend", "miniredis"))).To(Equal(string(memory)))

		srv := startRedis()
		DeferCleanup(srv.Stop)
		Expect(string(reportOf("--backend", "redis", "--redis-url", "redis://"+srv.Addr+"/0"))).To(Equal(string(memory)))
		c := redisstore.NewClient(srv.Addr)
		DeferCleanup(c.Close)
		Expect(c.DBSize(context.Background()).Val()).To(BeZero(), "a run removes the keys it wrote")
	})

	It("refuses an unknown backend, naming the allowed ones", func() {
		_, errOut, code := run("run", "worker-crash", "--backend", "postgres")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring(`unknown --backend "postgres" (allowed: memory, miniredis, redis)`))
		Expect(errOut).To(ContainSubstring("Try: faultline run --help"))
	})

	It("needs --redis-url for redis, and refuses it (and --namespace) for the other backends", func() {
		_, errOut, code := run("run", "worker-crash", "--backend", "redis")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("--backend redis needs --redis-url"))

		_, errOut, code = run("run", "worker-crash", "--redis-url", "127.0.0.1:6379")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("go with --backend redis, not --backend memory"))
	})

	It("refuses a Redis off loopback unless --allow-remote with --namespace, as a drill does", func() {
		_, errOut, code := run("run", "worker-crash", "--backend", "redis", "--redis-url", "redis://10.0.0.7:6379/0")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("10.0.0.7 is not on loopback: a run writes to and deletes keys"))

		_, errOut, code = run("run", "worker-crash", "--backend", "redis", "--redis-url", "redis://10.0.0.7:6379/0", "--allow-remote")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("--allow-remote needs an explicit --namespace"))
	})

	It("refuses a namespace that already holds keys, and leaves them alone", func() {
		srv := startRedis()
		DeferCleanup(srv.Stop)
		c := redisstore.NewClient(srv.Addr)
		DeferCleanup(c.Close)
		key := redisstore.Prefix("team-0") + ":dlq:entries"
		Expect(c.Set(context.Background(), key, "theirs", 0).Err()).To(Succeed())

		_, errOut, code := run("run", "worker-crash", "--backend", "redis", "--redis-url", srv.Addr, "--namespace", "team")
		Expect(code).To(Equal(cli.ExitInvalid))
		Expect(errOut).To(ContainSubstring("namespace already holds keys"))
		Expect(c.Get(context.Background(), key).Val()).To(Equal("theirs"))
	})
})
