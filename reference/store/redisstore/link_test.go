package redisstore_test

import (
	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best dot-imported.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's matchers read best dot-imported.

	"github.com/faultline/faultline/reference/store/redisstore"
)

var _ = Describe("the scripts' prelude", func() {
	It("gives a script the parts it names and the parts those use, and no others", func() {
		code := redisstore.Link("redis.call('HGET', metaKey(ARGV[1]), 'st')")
		Expect(code).To(ContainSubstring("local P = KEYS[1]"))
		Expect(code).To(ContainSubstring("local function metaKey("))
		Expect(code).NotTo(ContainSubstring("ENTRIES"))
		Expect(code).NotTo(ContainSubstring("local function index("))
	})

	It("does not take a name inside a longer one for it", func() {
		Expect(redisstore.Link("local indexed, P2 = 1, 2")).To(BeEmpty())
	})

	It("links the helpers a helper uses: flush its batched writes, index the counters", func() {
		code := redisstore.Link("index(id, nil, m, 1, ARGV[2], nil)\nflush()")
		for _, def := range []string{"local function write(", "local function writeLater(", "local function bump(",
			"local function count(", "local BYTIME = ", "local function statusKey("} {
			Expect(code).To(ContainSubstring(def))
		}
		Expect(code).NotTo(ContainSubstring("local function fence("))
	})
})
