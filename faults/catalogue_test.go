package faults_test

import (
	"reflect"
	"strings"
	"unicode"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
)

var _ = Describe("Catalogue", func() {
	It("describes every model in a stable order, as New builds it", func() {
		var names []string
		for _, e := range faults.Catalogue() {
			names = append(names, e.Name)
			m, err := faults.New(e.Name)
			Expect(err).NotTo(HaveOccurred())
			Expect(m.Name()).To(Equal(e.Name))
			Expect(m.Class()).To(Equal(e.Class), e.Name)
			Expect(m.Targets()).To(Equal(e.Targets), e.Name)
			Expect(m.Validate()).To(Succeed(), "the zero model is valid: %s", e.Name)
			Expect(e.Summary).NotTo(BeEmpty(), e.Name)
			Expect(e.Targets).NotTo(BeEmpty(), e.Name)
		}
		Expect(names).To(Equal([]string{
			"gateway-timeout", "latency", "http-status", "auth-failure", "card-declined", "rate-limit",
			"indeterminate-5xx", "flapping", "outage", "store-outage", "sink-outage",
			"worker-crash", "worker-stall", "slow-store", "interleave",
			"graceful-stop",
		}))
		Expect(faults.Catalogue()).To(Equal(faults.Catalogue()))
	})

	It("lists each model's exported fields as its parameters, in field order", func() {
		for _, e := range faults.Catalogue() {
			m, _ := faults.New(e.Name)
			typ := reflect.TypeOf(m)
			var fields []string
			for f := range typ.Fields() {
				if f.IsExported() {
					r := []rune(f.Name)
					// lowerCamelCase: "RetryAfter" -> "retryAfter".
					fields = append(fields, string(unicode.ToLower(r[0]))+string(r[1:]))
				}
			}
			var params []string
			for _, p := range e.Params {
				params = append(params, p.Name)
				Expect(p.Doc).NotTo(BeEmpty(), "%s.%s", e.Name, p.Name)
				Expect([]string{"duration", "float", "int", "bool", "string", "[]string"}).To(ContainElement(p.Type), "%s.%s", e.Name, p.Name)
			}
			Expect(params).To(Equal(fields), e.Name)
		}
	})

	It("looks names up leniently, and suggests the closest for a typo", func() {
		m, err := faults.New("Gateway_Timeout")
		Expect(err).NotTo(HaveOccurred())
		Expect(m).To(Equal(faults.GatewayTimeout{}))

		_, err = faults.New("gatway-timeout")
		var ne *faults.NameError
		Expect(err).To(BeAssignableToTypeOf(ne))
		Expect(err).To(MatchError(HavePrefix(`unknown fault model "gatway-timeout"; did you mean "gateway-timeout"? (known: gateway-timeout, latency,`)))
		_, err = faults.New("crash")
		Expect(err).To(MatchError(ContainSubstring(`did you mean "worker-crash"?`)))
		_, err = faults.New("nonsense-entirely")
		Expect(err).NotTo(MatchError(ContainSubstring("did you mean")))
		Expect(strings.Count(err.Error(), ",")).To(Equal(15))
	})
})
