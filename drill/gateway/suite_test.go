package gateway_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/drill/gateway"
	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
)

func TestGateway(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Gateway Suite")
}

const (
	seed = 42
	ms   = time.Millisecond
)

var classifier = classify.Default()

// scenarioClock is a settable scenario offset, for Config.Now.
type scenarioClock struct{ d atomic.Int64 }

func (c *scenarioClock) Now() time.Duration      { return time.Duration(c.d.Load()) }
func (c *scenarioClock) Set(d time.Duration)     { c.d.Store(int64(d)) }
func (c *scenarioClock) Advance(d time.Duration) { c.d.Add(int64(d)) }

// injector builds a *faults.Injector of fs with the suite's seed.
func injector(fs ...faults.Fault) *faults.Injector {
	GinkgoHelper()
	in, err := faults.NewInjector(seed, fs)
	Expect(err).NotTo(HaveOccurred())
	return in
}

// dependencyFault is a fault named name hitting dependency dep always.
func dependencyFault(name, dep string, m faults.Model) faults.Fault {
	return faults.Fault{Name: name, Target: faults.Target{Kind: faults.Dependency, Name: dep}, Model: m}
}

// start starts a gateway for cfg and closes it when the spec ends.
func start(cfg gateway.Config) *gateway.Gateway {
	GinkgoHelper()
	g, err := gateway.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	Expect(g.Start()).To(Succeed())
	DeferCleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		Expect(g.Close(ctx)).To(Succeed())
	})
	return g
}

// client returns a client of g whose idle connections close with the spec.
func client(g *gateway.Gateway, timeout time.Duration) *gateway.Client {
	c := gateway.NewClient(g.URL(), timeout)
	DeferCleanup(c.CloseIdleConnections)
	return c
}
