package classify_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestClassify(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Classify Suite")
}
