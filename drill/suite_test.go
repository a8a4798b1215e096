package drill_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

func TestDrill(t *testing.T) {
	RegisterFailHandler(Fail)
	redis.SetLogger(quiet{})
	RunSpecs(t, "drill")
}

// TestMain stops the process's redis-server when the specs are done.
func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopShared()
	os.Exit(code)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// faultlineBin is the faultline binary the drills start their workers
// from, built once for the suite.
var faultlineBin string

var _ = SynchronizedBeforeSuite(func() []byte {
	dir, err := os.MkdirTemp("", "faultline-drill-bin-")
	Expect(err).NotTo(HaveOccurred())
	bin := filepath.Join(dir, "faultline")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/faultline/faultline/cmd/faultline")
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Run()).To(Succeed(), "build the faultline binary the workers run")
	return []byte(bin)
}, func(bin []byte) {
	faultlineBin = string(bin)
})

var _ = SynchronizedAfterSuite(func() {}, func() {
	if faultlineBin != "" {
		_ = os.RemoveAll(filepath.Dir(faultlineBin))
	}
})
