package mutant_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestMutant(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Mutant Suite")
}
