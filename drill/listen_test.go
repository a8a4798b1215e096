package drill_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/drill"
)

var _ = Describe("--listen (drill.ParseListen)", func() {
	It("reads PART=HOST:PORT for dependencies and receivers, on loopback", func() {
		m, err := drill.ParseListen([]string{"dependency:payments=127.0.0.1:18080", "receiver:slack=[::1]:18081"}, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(m).To(Equal(map[string]string{"dependency:payments": "127.0.0.1:18080", "receiver:slack": "[::1]:18081"}))
	})

	DescribeTable("refuses, saying what it takes",
		func(v string, want string) {
			_, err := drill.ParseListen([]string{v}, false)
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("no part", "127.0.0.1:1", "takes PART=HOST:PORT"),
		Entry("an unknown kind", "queue:x=127.0.0.1:1", "PART being dependency:NAME or receiver:NAME"),
		Entry("no port", "dependency:p=127.0.0.1", `"127.0.0.1" is not HOST:PORT`),
		Entry("a port out of range", "dependency:p=127.0.0.1:70000", "takes 1 to 65535"),
		Entry("off loopback, without --allow-remote", "dependency:p=10.1.2.3:80", "is not on loopback"),
	)

	It("refuses a part given twice", func() {
		_, err := drill.ParseListen([]string{"receiver:s=127.0.0.1:1", "receiver:s=127.0.0.1:2"}, false)
		Expect(err).To(MatchError(ContainSubstring("given twice")))
	})
})
