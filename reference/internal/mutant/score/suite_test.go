//go:build faultline_mutants

package score_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// TestMutationScore runs the built-in library against every mutant of the
// reference. It exists only in a faultline_mutants build:
//
//	go test -tags faultline_mutants ./reference/internal/mutant/score/ -run TestMutationScore -v
func TestMutationScore(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Mutation Score Suite")
}
