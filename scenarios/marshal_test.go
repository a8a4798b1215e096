package scenarios_test

import (
	"fmt"
	"math"
	"reflect"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/scenarios"
)

var _ = Describe("Marshal", func() {
	It("writes keys in the types' order, leaves out empty values and keeps a pointer that is set", func() {
		seed := uint64(0)
		zero := int64(0)
		d := &scenarios.Document{
			APIVersion: scenarios.APIVersion, Kind: scenarios.KindScenario,
			Metadata: scenarios.Metadata{Name: "m", Tags: []string{"a"}},
			Seed:     &seed,
			Duration: scenarios.Duration(90 * time.Second),
			Workload: scenarios.Workload{Arrivals: scenarios.Arrivals{Rate: 100}},
			System:   scenarios.System{Retry: &scenarios.Retry{}},
			Faults: []scenarios.Fault{{Name: "f", Target: "store", Model: "latency",
				Params: map[string]any{"mean": "1s", "distribution": "constant", "max": "0s"}}},
			Expect: []scenarios.Expect{{Count: "lost", Equals: &zero}},
		}
		out, err := scenarios.Marshal(d)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(Equal(`apiVersion: faultline/v1
kind: Scenario
metadata:
  name: m
  tags:
    - a
seed: 0
duration: 1m30s
workload:
  arrivals:
    rate: 100/s
system:
  retry: {}
faults:
  - name: f
    target: store
    model: latency
    params:
      distribution: constant
      max: 0s
      mean: 1s
expect:
  - count: lost
    equals: 0
`))
	})

	It("writes abortIf in the types' order and reads it back the same", func() {
		depth, rate, active := 5000, 0.5, 3
		d := &scenarios.Document{
			APIVersion: scenarios.APIVersion, Kind: scenarios.KindScenario, Metadata: scenarios.Metadata{Name: "m"},
			Duration: scenarios.Duration(10 * time.Minute),
			AbortIf: &scenarios.AbortIf{DLQDepth: &depth, ErrorRate: &rate,
				ErrorWindow: scenarios.Duration(time.Minute), MaxActiveFaults: &active},
		}
		out, err := scenarios.Marshal(d)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(Equal(`apiVersion: faultline/v1
kind: Scenario
metadata:
  name: m
duration: 10m0s
abortIf:
  dlqDepth: 5000
  errorRate: 0.5
  errorWindow: 1m0s
  maxActiveFaults: 3
`))
		back, err := scenarios.Parse("m.yaml", out)
		Expect(err).NotTo(HaveOccurred())
		Expect(back).To(Equal(d))

		d.AbortIf = &scenarios.AbortIf{ErrorRate: &rate}
		out, err = scenarios.Marshal(d)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(HaveSuffix("abortIf:\n  errorRate: 0.5\n"))
		back, err = scenarios.Parse("m.yaml", out)
		Expect(err).NotTo(HaveOccurred())
		Expect(back).To(Equal(d))
	})

	It("refuses a nil document", func() {
		_, err := scenarios.Marshal(nil)
		Expect(err).To(HaveOccurred())
	})

	It("writes what Parse reads back: every valid example", func() {
		for _, f := range []string{"minimal.yaml", "payments.yaml", "everything.yaml"} {
			l, err := scenarios.Load("testdata/valid/" + f)
			Expect(err).NotTo(HaveOccurred())
			out, err := scenarios.Marshal(l.Document)
			Expect(err).NotTo(HaveOccurred())
			back, err := scenarios.Parse(f, out)
			Expect(err).NotTo(HaveOccurred(), string(out))
			Expect(back).To(Equal(l.Document))
		}
	})

	It("writes what Parse reads back: any document (property)", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			d := drawDocument(t)
			out, err := scenarios.Marshal(d)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			back, err := scenarios.Parse("d.yaml", out)
			if err != nil {
				t.Fatalf("Parse(Marshal(d)): %v\n%s", err, out)
			}
			if !reflect.DeepEqual(back, d) {
				t.Fatalf("Parse(Marshal(d)) differs from d:\n%s\n%#v\n%#v", out, d, back)
			}
		})
	})
})

var (
	scenarioDurationType = reflect.TypeFor[scenarios.Duration]()
	scenarioRateType     = reflect.TypeFor[scenarios.Rate]()
)

// awkwardStrings are strings YAML reads as something else unless quoted.
var awkwardStrings = []string{
	"", "yes", "no", "on", "true", "False", "null", "~", "0", "-1", "1.5", "1e3", "0x1F", "0o17", ".inf", "-.Inf", ".nan",
	"2026-01-05T09:00:00Z", "a: b", "- x", "#c", "x #c", " lead", "trail ", "'q'", `"dq"`, "[a]", "{b}", "*alias", "&anchor",
	"!tag", "%dir", "@at", "`bt", "|", ">", "?", ":", "a\nb", "a\n", "\ttab", "é", "100/s", "30s", "{n}-{id}", "---", "...",
}

// drawDocument draws a document Parse accepts: every key possibly set,
// with awkward strings and parameters of every YAML type.
func drawDocument(t *rapid.T) *scenarios.Document {
	v := reflect.New(reflect.TypeFor[scenarios.Document]()).Elem()
	drawValue(t, v, "doc", 0)
	d := v.Addr().Interface().(*scenarios.Document)
	d.APIVersion = scenarios.APIVersion
	d.Kind = rapid.SampledFrom([]string{scenarios.KindScenario, scenarios.KindFragment}).Draw(t, "kind")
	return d
}

func drawString(t *rapid.T, label string) string {
	return rapid.OneOf(rapid.SampledFrom(awkwardStrings), rapid.StringMatching(`[a-zA-Z0-9 ._:/{}-]{0,12}`),
		rapid.StringMatching("[a \t\n\r#:'\"-]{0,6}"), rapid.String()).Draw(t, label)
}

func drawValue(t *rapid.T, v reflect.Value, label string, depth int) {
	switch v.Type() {
	case scenarioDurationType:
		v.SetInt(rapid.Int64Range(0, 48*3600*1000).Draw(t, label) * int64(time.Millisecond))
		return
	case scenarioRateType:
		v.SetFloat(rapid.OneOf(rapid.Float64Range(0, 1e6), rapid.SampledFrom([]float64{0.5, 1.0 / 60, 1.0 / 3600, 100})).Draw(t, label))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if rapid.Bool().Draw(t, label+"?") {
				drawValue(t, v.Field(i), label+"."+v.Type().Field(i).Name, depth+1)
			}
		}
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		drawValue(t, e.Elem(), label, depth+1)
		v.Set(e)
	case reflect.Slice:
		n := rapid.IntRange(1, 2).Draw(t, label+"#")
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			drawValue(t, s.Index(i), fmt.Sprintf("%s[%d]", label, i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		n := rapid.IntRange(1, 3).Draw(t, label+"#")
		m := reflect.MakeMap(v.Type())
		for i := range n {
			k := rapid.StringMatching(`[a-z][a-zA-Z0-9]{0,8}`).Draw(t, fmt.Sprintf("%s.key%d", label, i))
			e := reflect.New(v.Type().Elem()).Elem()
			if e.Kind() == reflect.Interface {
				if p := drawParam(t, label+"."+k, depth+1); p != nil {
					e.Set(reflect.ValueOf(p))
				}
			} else {
				drawValue(t, e, label+"."+k, depth+1)
			}
			m.SetMapIndex(reflect.ValueOf(k), e)
		}
		v.Set(m)
	case reflect.String:
		v.SetString(drawString(t, label))
	case reflect.Bool:
		v.SetBool(rapid.Bool().Draw(t, label))
	case reflect.Int:
		v.SetInt(int64(rapid.IntRange(-1000, 1_000_000).Draw(t, label)))
	case reflect.Int64:
		v.SetInt(rapid.Int64().Draw(t, label))
	case reflect.Uint64:
		v.SetUint(rapid.Uint64().Draw(t, label))
	case reflect.Float64:
		v.SetFloat(rapid.OneOf(rapid.Float64Range(0, 1), rapid.Float64Range(-1e30, 1e30), rapid.SampledFrom([]float64{0, 1, 2, 1e21, 1e-7})).Draw(t, label))
	default:
		t.Fatalf("no generator for %s", v.Type())
	}
}

// drawParam draws a parameter value as the decoder gives them.
func drawParam(t *rapid.T, label string, depth int) any {
	kinds := []string{"string", "int", "uint", "float", "bool", "null"}
	if depth < 6 {
		kinds = append(kinds, "list", "map")
	}
	switch rapid.SampledFrom(kinds).Draw(t, label+"!") {
	case "string":
		return drawString(t, label)
	case "int":
		return rapid.Int64().Draw(t, label)
	case "uint":
		return rapid.Uint64Range(math.MaxInt64+1, math.MaxUint64).Draw(t, label)
	case "float":
		return rapid.Float64Range(-1e9, 1e9).Draw(t, label)
	case "bool":
		return rapid.Bool().Draw(t, label)
	case "list":
		n := rapid.IntRange(0, 2).Draw(t, label+"#")
		out := make([]any, n)
		for i := range out {
			out[i] = drawParam(t, fmt.Sprintf("%s[%d]", label, i), depth+1)
		}
		return out
	case "map":
		n := rapid.IntRange(0, 2).Draw(t, label+"#")
		out := map[string]any{}
		for i := range n {
			k := rapid.StringMatching(`[a-z][a-zA-Z0-9]{0,8}`).Draw(t, fmt.Sprintf("%s.key%d", label, i))
			out[k] = drawParam(t, label+"."+k, depth+1)
		}
		return out
	}
	return nil
}
