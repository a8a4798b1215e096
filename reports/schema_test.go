package reports_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reports"
)

const (
	schemaFile = "schema/report.schema.json"
	regenerate = "stale: run `go generate ./reports`"
)

// schemaDoc is the generated schema, decoded.
func schemaDoc() map[string]any {
	GinkgoHelper()
	var s map[string]any
	Expect(json.Unmarshal(reports.Schema(), &s)).To(Succeed())
	return s
}

// validator checks a decoded JSON value against the subset of JSON Schema
// the report's schema uses; schemaKeywords lists that subset, and a spec
// checks the schema uses no other.
type validator struct {
	root map[string]any
	// seen collects "path-in-schema" of every property a value had, to
	// show every described key occurs in some report.
	seen map[string]bool
}

var schemaKeywords = []string{
	"$schema", "$id", "$defs", "$ref", "title", "description",
	"type", "properties", "required", "additionalProperties", "items", "enum", "minimum", "maximum", "minItems", "maxItems",
}

// validate returns the problems of v against schema s, each with its path.
func (val *validator) validate(s map[string]any, v any, path, where string) []string {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		def, ok := val.root["$defs"].(map[string]any)[name].(map[string]any)
		if !ok {
			return []string{path + ": unresolved $ref " + ref}
		}
		return val.validate(def, v, path, name)
	}
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		fail("%v is not one of %v", v, enum)
	}
	switch s["type"] {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			fail("want an object, got %T", v)
			break
		}
		props, _ := s["properties"].(map[string]any)
		required, _ := s["required"].([]any)
		for _, k := range required {
			if _, ok := obj[k.(string)]; !ok {
				fail("required key %q missing", k)
			}
		}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range obj {
				if !yield(k) {
					return
				}
			}
		}) {
			sub := path + "." + k
			if p, ok := props[k].(map[string]any); ok {
				val.seen[where+"."+k] = true
				errs = append(errs, val.validate(p, obj[k], sub, where+"."+k)...)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					fail("key %q is not in the schema", k)
				}
			case map[string]any:
				errs = append(errs, val.validate(ap, obj[k], sub, where+".*")...)
			}
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			fail("want an array, got %T", v)
			break
		}
		if n, ok := s["minItems"].(float64); ok && float64(len(arr)) < n {
			fail("%d items, want at least %v", len(arr), n)
		}
		if n, ok := s["maxItems"].(float64); ok && float64(len(arr)) > n {
			fail("%d items, want at most %v", len(arr), n)
		}
		items, _ := s["items"].(map[string]any)
		for i, x := range arr {
			errs = append(errs, val.validate(items, x, fmt.Sprintf("%s[%d]", path, i), where+"[]")...)
		}
	case "string":
		if _, ok := v.(string); !ok {
			fail("want a string, got %T", v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			fail("want a boolean, got %T", v)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			fail("want a number, got %v", v)
		}
	case "integer":
		n, ok := v.(float64)
		if !ok || n != math.Trunc(n) {
			fail("want an integer, got %v", v)
			break
		}
		if m, ok := s["minimum"].(float64); ok && n < m {
			fail("%v is below the minimum %v", n, m)
		}
		if m, ok := s["maximum"].(float64); ok && n > m {
			fail("%v is above the maximum %v", n, m)
		}
	case nil:
	default:
		fail("the validator does not know type %v", s["type"])
	}
	return errs
}

// allProperties lists "Def.key" of every property the schema describes
// ("Result" for the root).
func allProperties(s map[string]any) []string {
	var out []string
	add := func(name string, def map[string]any) {
		props, _ := def["properties"].(map[string]any)
		for k := range props {
			out = append(out, name+"."+k)
		}
	}
	add("Result", s)
	for name, def := range s["$defs"].(map[string]any) {
		add(name, def.(map[string]any))
	}
	sort.Strings(out)
	return out
}

// keywordsOf collects every keyword used in a schema, skipping the names of
// properties and definitions.
func keywordsOf(v any, into map[string]bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, x := range m {
		into[k] = true
		switch k {
		case "properties", "$defs":
			for _, sub := range x.(map[string]any) {
				keywordsOf(sub, into)
			}
		case "items", "additionalProperties":
			keywordsOf(x, into)
		}
	}
}

// fullResult is the failing run with every optional field set, so every
// described key occurs.
func fullResult() *reports.Result {
	GinkgoHelper()
	r := failingRun()
	r.ToolVersion = "v1.2.3"
	r.Verdict, r.Error = reports.Errored, "boom"
	r.Steps = append(r.Steps, reports.Step{AtMs: 1, Kind: "requeue", Detail: "matched 0", Error: "dlq store down"})
	r.Breakers = append(r.Breakers, reports.Transition{AtMs: 1, Breaker: "payment-gateway", From: "closed", To: "open", Reason: "failures"})
	r.Series.Held = make([]int64, len(r.Series.AtMs)) // a run that held a dead letter
	return r
}

var _ = Describe("The JSON Schema", func() {
	It("is checked in up to date", func() {
		checkedIn, err := os.ReadFile(schemaFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(checkedIn)).To(Equal(string(reports.Schema())), regenerate)
	})

	It("is the same bytes every time", func() {
		Expect(reports.Schema()).To(Equal(reports.Schema()))
	})

	It("is draft 2020-12, with an $id, and uses only keywords the spec validator knows", func() {
		s := schemaDoc()
		Expect(s).To(HaveKeyWithValue("$schema", "https://json-schema.org/draft/2020-12/schema"))
		Expect(s).To(HaveKeyWithValue("$id", reports.SchemaID))
		used := map[string]bool{}
		keywordsOf(s, used)
		for k := range used {
			Expect(schemaKeywords).To(ContainElement(k))
		}
	})

	It("describes every type and every key, and allows no other keys", func() {
		s := schemaDoc()
		defs := s["$defs"].(map[string]any)
		Expect(defs).To(HaveKey("Verdict"))
		Expect(defs["Verdict"]).To(HaveKeyWithValue("enum", ConsistOf("passed", "failed", "errored", "interrupted", "inconclusive", "skipped", "not-observable")))
		all := map[string]any{"Result": s}
		for name, d := range defs {
			all[name] = d
		}
		for name, d := range all {
			def := d.(map[string]any)
			Expect(def["description"]).NotTo(BeEmpty(), name)
			props, ok := def["properties"].(map[string]any)
			if !ok {
				continue
			}
			Expect(def).To(HaveKeyWithValue("additionalProperties", false), name)
			for key, p := range props {
				Expect(p.(map[string]any)["description"]).NotTo(BeEmpty(), "%s.%s has no description: give the field a doc comment", name, key)
			}
		}
		Expect(len(allProperties(s))).To(BeNumerically(">", 150))
	})

	It("validates real reports, and every key it describes occurs in one", func() {
		s := schemaDoc()
		val := &validator{root: s, seen: map[string]bool{}}
		warned := passingRun()
		warned.Warnings = []string{"fault smtp-busy never hit"}
		warned.Faults[0].RequireHits = true
		drilled := passingRun() // a drill's breakers are each worker process's
		drilled.Breakers = append(drilled.Breakers, reports.Transition{AtMs: 1000, Breaker: "smtp", From: "closed", To: "open", Reason: "failures", Worker: "w1"})
		drilled.Live = &reports.Live{TimeScale: 20, StartedAt: "2026-12-01T10:00:00Z", Workers: 2, Processes: map[string]int{"started": 2},
			Latencies: []reports.Latency{{What: "dependency smtp", Calls: 10, P50Ms: 0.4, P95Ms: 2, P99Ms: 3, MaxMs: 5}}, Aborted: "abortIf.dlqDepth 5 crossed"}
		alreadyRunning := blackBoxPassing() // a system found running: no command
		alreadyRunning.Live.External.Command, alreadyRunning.Live.External.Running, alreadyRunning.Live.External.Copies = "", true, 0
		for _, r := range []*reports.Result{passingRun(), failingRun(), fixedRun(), fullResult(), largeResult(), interruptedRun(), inconclusiveRun(), warned, drilled, blackBoxRun(), blackBoxPassing(), alreadyRunning} {
			data, err := r.JSON()
			Expect(err).NotTo(HaveOccurred())
			var v any
			Expect(json.Unmarshal(data, &v)).To(Succeed())
			Expect(val.validate(s, v, "report", "Result")).To(BeEmpty(), r.Scenario)
		}
		var unseen []string
		for _, p := range allProperties(s) {
			if !val.seen[p] {
				unseen = append(unseen, p)
			}
		}
		Expect(unseen).To(BeEmpty(), "described keys no report had")
	})

	It("catches a report that does not fit", func() {
		s := schemaDoc()
		val := &validator{root: s, seen: map[string]bool{}}
		data, err := failingRun().JSON()
		Expect(err).NotTo(HaveOccurred())
		var v map[string]any
		Expect(json.Unmarshal(data, &v)).To(Succeed())
		v["verdict"] = "flaky"
		v["extra"] = 1
		delete(v, "seed")
		v["ledger"].(map[string]any)["lost"] = "none"
		v["faults"].([]any)[0].(map[string]any)["windows"] = []any{[]any{1.0}}
		Expect(val.validate(s, v, "report", "Result")).To(ConsistOf(
			`report: required key "seed" missing`,
			`report: key "extra" is not in the schema`,
			`report.verdict: flaky is not one of [passed failed errored interrupted inconclusive skipped not-observable]`,
			`report.ledger.lost: want an integer, got none`,
			`report.faults[0].windows[0]: 1 items, want at least 2`,
		))
	})
})
