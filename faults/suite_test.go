package faults_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/reference/classify"
)

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Faults Suite")
}

const ms = time.Millisecond

var (
	classifier = classify.Default()
	gateway    = faults.Target{Kind: faults.Dependency, Name: classify.PaymentGateway}
	inventory  = faults.Target{Kind: faults.Dependency, Name: "inventory"}
)

// classOn is the default classifier's class for err from dependency dep.
func classOn(err error, dep string) classify.Class {
	return classifier.Classify(err, classify.Scope{Dependency: dep}).Class
}

// mustInjector builds an injector or fails the spec.
func mustInjector(seed uint64, fs ...faults.Fault) *faults.Injector {
	GinkgoHelper()
	in, err := faults.NewInjector(seed, fs)
	Expect(err).NotTo(HaveOccurred())
	return in
}

// hitsOf returns the hits of the named fault.
func hitsOf(in *faults.Injector, name string) int64 {
	GinkgoHelper()
	for _, s := range in.Stats() {
		if s.Name == name {
			return s.Hits
		}
	}
	Fail("no fault named " + name)
	return 0
}
