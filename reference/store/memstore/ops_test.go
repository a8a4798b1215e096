package memstore_test

import (
	"fmt"
	"unicode"

	. "github.com/onsi/ginkgo/v2"

	"github.com/faultline/faultline/reference/dlq/dlqtest"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
)

var _ = Describe("memstore operator extensions", func() {
	dlqtest.ExerciseOps(func(cfg store.Config) dlqtest.Harness {
		s := newStore(cfg)
		return dlqtest.Harness{Queue: s, DLQ: s, Corrupt: s.PlantRaw}
	})

	// The error-text filter folds each rune to one representative of its
	// simple-folding orbit (fold.go, the same in redisstore): a substring
	// test on folds is a case-insensitive one only if that representative
	// is one per orbit and in it.
	It("folds every rune to one member of its simple-folding orbit, the same for the whole orbit", func() {
		for r := rune(0); r <= unicode.MaxRune; r++ {
			c := memstore.FoldRune(r)
			in := c == r
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				in = in || f == c
				if g := memstore.FoldRune(f); g != c {
					Fail(fmt.Sprintf("%U folds to %U but %U, of its orbit, to %U", r, c, f, g))
				}
			}
			if !in {
				Fail(fmt.Sprintf("%U folds to %U, outside its orbit", r, c))
			}
		}
	})
})
