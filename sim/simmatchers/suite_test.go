package simmatchers_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSimmatchers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Simmatchers Suite")
}
