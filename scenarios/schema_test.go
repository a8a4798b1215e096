package scenarios_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/faults"
	"github.com/faultline/faultline/scenarios"
)

const (
	schemaFile    = "schema/scenario.schema.json"
	referenceFile = "../docs/scenario-format.md"
	regenerate    = "stale: run `go generate ./scenarios`"
)

// schemaDoc is the generated schema, decoded.
func schemaDoc() map[string]any {
	GinkgoHelper()
	var s map[string]any
	Expect(json.Unmarshal(scenarios.Schema(), &s)).To(Succeed())
	return s
}

// definition returns the schema of a document type ("Document" is the
// root).
func definition(s map[string]any, name string) map[string]any {
	GinkgoHelper()
	if name == "Document" {
		return s
	}
	def, ok := s["$defs"].(map[string]any)[name].(map[string]any)
	Expect(ok).To(BeTrue(), "no definition of %s", name)
	return def
}

// enumOf returns the values a key's schema allows (of its items, for a list).
func enumOf(s map[string]any, typ, key string) []string {
	GinkgoHelper()
	prop := definition(s, typ)["properties"].(map[string]any)[key].(map[string]any)
	if items, ok := prop["items"].(map[string]any); ok {
		prop = items
	}
	var out []string
	for _, v := range prop["enum"].([]any) {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

var _ = Describe("The generated files", func() {
	It("has the checked-in JSON Schema up to date", func() {
		checkedIn, err := os.ReadFile(schemaFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(checkedIn)).To(Equal(string(scenarios.Schema())), regenerate)
	})

	It("has the checked-in reference page up to date", func() {
		checkedIn, err := os.ReadFile(referenceFile)
		Expect(err).NotTo(HaveOccurred())
		// The page ends with the oracle's section on what a black-box drill
		// can judge, which the oracle's specs check (scenarios cannot
		// import the oracle).
		Expect(string(checkedIn)).To(HavePrefix(string(scenarios.Reference())), regenerate)
	})

	It("generates the same bytes every time", func() {
		Expect(scenarios.Schema()).To(Equal(scenarios.Schema()))
		Expect(scenarios.Reference()).To(Equal(scenarios.Reference()))
	})
})

var _ = Describe("The JSON Schema", func() {
	var s map[string]any

	BeforeEach(func() { s = schemaDoc() })

	It("is draft 2020-12, with an $id", func() {
		Expect(s).To(HaveKeyWithValue("$schema", "https://json-schema.org/draft/2020-12/schema"))
		Expect(s).To(HaveKeyWithValue("$id", scenarios.SchemaID))
	})

	It("describes every key, and allows no other", func() {
		defs := s["$defs"].(map[string]any)
		all := map[string]any{"Document": s}
		for name, d := range defs {
			all[name] = d
		}
		keys := 0
		for name, d := range all {
			def := d.(map[string]any)
			props, ok := def["properties"].(map[string]any)
			if !ok {
				continue // duration, rate
			}
			Expect(def).To(HaveKeyWithValue("additionalProperties", false), name)
			Expect(def["description"]).NotTo(BeEmpty(), name)
			for key, p := range props {
				Expect(p.(map[string]any)["description"]).NotTo(BeEmpty(), name+"."+key)
				keys++
			}
		}
		Expect(keys).To(BeNumerically(">", 150))
	})

	It("names every model of the catalogue, and constrains each model's params", func() {
		var names []string
		for _, e := range faults.Catalogue() {
			names = append(names, e.Name)
		}
		Expect(enumOf(s, "Fault", "model")).To(Equal(names))
		Expect(definition(s, "Fault")["allOf"]).To(HaveLen(len(names)))
	})

	DescribeTable("allows only values the loader accepts",
		func(typ, key string, doc func(v string) string) {
			values := enumOf(s, typ, key)
			Expect(values).NotTo(BeEmpty())
			for _, v := range values {
				_, err := scenarios.LoadFS(mapFS("s.yaml", doc(v)), "s.yaml")
				Expect(err).NotTo(HaveOccurred(), "%s.%s: %s", typ, key, v)
			}
		},
		Entry(nil, "Arrivals", "kind", func(v string) string {
			return scenarioHead + "workload: {tasks: [{name: ping}], arrivals: {kind: " + v + ", rate: 1/s}}\n"
		}),
		Entry(nil, "DLQ", "overflow", func(v string) string { return scenarioHead + pingWorkload + "system: {dlq: {overflow: " + v + "}}\n" }),
		Entry(nil, "Step", "action", func(v string) string {
			return scenarioHead + pingWorkload + "steps: [{at: 10s, action: " + v + ", olderThan: 1m, workers: 2, retry: {maxAttempts: 2}}]\n"
		}),
		Entry(nil, "Step", "budget", func(v string) string {
			return scenarioHead + pingWorkload + "steps: [{at: 10s, action: requeue, budget: " + v + "}]\n"
		}),
		Entry(nil, "AutoRetry", "budget", func(v string) string {
			return scenarioHead + pingWorkload + "system: {autoRetry: {windowStart: 22h, windowEnd: 6h, budget: " + v + "}}\n"
		}),
		Entry(nil, "Monitor", "severity", func(v string) string {
			return scenarioHead + pingWorkload + "system: {monitor: {severity: " + v + "}}\n"
		}),
		Entry(nil, "Filter", "classes", func(v string) string {
			return scenarioHead + pingWorkload + "steps: [{at: 10s, action: delete, filter: {classes: [" + v + "]}}]\n"
		}),
		Entry(nil, "Filter", "statuses", func(v string) string {
			return scenarioHead + pingWorkload + "steps: [{at: 10s, action: delete, filter: {statuses: [" + v + "]}}]\n"
		}),
		Entry(nil, "Route", "severities", func(v string) string {
			return scenarioHead + pingWorkload + "system: {alerts: {receivers: [a], defaultReceiver: a, routes: [{receiver: a, severities: [" + v + "]}]}}\n"
		}),
		Entry(nil, "Expect", "count", func(v string) string {
			if v == "calls" { // read per window only
				return scenarioHead + "workload: {tasks: [{name: ping, dependency: d}], arrivals: {rate: 1/s}}\nexpect: [{count: calls, dependency: d, window: 1s, atLeast: 0}]\n"
			}
			return scenarioHead + pingWorkload + "expect: [{count: " + v + ", atLeast: 0}]\n"
		}),
		Entry(nil, "Expect", "state", func(v string) string {
			return scenarioHead + pingJobWorkload + "expect: [{job: j, state: " + v + "}]\n"
		}),
		Entry(nil, "Expect", "route", func(v string) string {
			switch v { // a confusion gate's routes; a job's are the move reasons
			case "retry", "dead-letter", "release", "divert":
				return scenarioHead + pingWorkload + "expect: [{confusion: transient, route: " + v + ", equals: 0}]\n"
			}
			return scenarioHead + pingJobWorkload + "expect: [{job: j, state: succeeded, route: " + v + "}]\n"
		}),
		Entry(nil, "Expect", "confusion", func(v string) string {
			return scenarioHead + pingWorkload + "expect: [{confusion: " + v + ", said: " + v + ", equals: 0}]\n"
		}),
		Entry(nil, "Expect", "severity", func(v string) string {
			return scenarioHead + pingWorkload + "expect: [{count: dead-letters, severity: " + v + ", equals: 0}]\n"
		}),
		Entry(nil, "Fault", "model", func(v string) string {
			// A requeue step: model interleave strikes one, and is refused
			// in a scenario without.
			return scenarioHead + "workload: {tasks: [{name: ping, dependency: ping}], arrivals: {rate: 1/s}}\n" +
				"faults: [{name: f, target: " + targetFor(v) + ", model: " + v + "}]\nsteps: [{at: 30s, action: requeue}]\n"
		}),
	)

	It("allows the kinds the loader accepts: a scenario, and a fragment it includes", func() {
		Expect(enumOf(s, "Document", "kind")).To(Equal([]string{scenarios.KindScenario, scenarios.KindFragment}))
		_, err := scenarios.LoadFS(mapFS("s.yaml", scenarioHead+pingWorkload+"include: [f.yaml]\n", "f.yaml", fragmentHead), "s.yaml")
		Expect(err).NotTo(HaveOccurred())
	})

	It("accepts every valid example, fragments too, the built-ins, and the reference page's", func() {
		files, err := filepath.Glob("testdata/valid/*/*.yaml")
		Expect(err).NotTo(HaveOccurred())
		top, err := filepath.Glob("testdata/valid/*.yaml")
		Expect(err).NotTo(HaveOccurred())
		builtins, err := filepath.Glob("builtin/*.yaml")
		Expect(err).NotTo(HaveOccurred())
		for _, f := range append(append(top, files...), builtins...) {
			if strings.Contains(f, "/rules/") {
				continue
			}
			data, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			Expect(schemaErrors(s, data)).To(BeEmpty(), f)
		}
		Expect(schemaErrors(s, []byte(scenarios.ReferenceExample))).To(BeEmpty())
	})

	It("accepts what Marshal writes", func() {
		l, err := scenarios.Load("testdata/valid/everything.yaml")
		Expect(err).NotTo(HaveOccurred())
		out, err := scenarios.Marshal(l.Document)
		Expect(err).NotTo(HaveOccurred())
		Expect(schemaErrors(s, out)).To(BeEmpty())
	})

	DescribeTable("refuses what the loader refuses",
		func(yamlText, wantPath string) {
			Expect(schemaErrors(s, []byte(scenarioHead+yamlText))).To(ContainElement(HavePrefix(wantPath + ":")))
		},
		Entry("an unknown key", "system: {retires: 3}\n", "$.system.retires"),
		Entry("a bad duration", "sample: 10x\n", "$.sample"),
		Entry("a bad rate", "workload: {arrivals: {rate: 100/sec}}\n", "$.workload.arrivals.rate"),
		Entry("a bad pageWithin", "invariants: {pageWithin: never}\n", "$.invariants.pageWithin"),
		Entry("a wrong type", "workers: {count: ten}\n", "$.workers.count"),
		Entry("an unknown model", "faults: [{name: f, target: store, model: gatway-timeout}]\n", "$.faults[0].model"),
		Entry("an unknown param", "faults: [{name: f, target: dependency/gw, model: gateway-timeout, params: {afterr: 1s}}]\n", "$.faults[0].params.afterr"),
		Entry("a param of the wrong type", "faults: [{name: f, target: dependency/gw, model: gateway-timeout, params: {after: soon}}]\n", "$.faults[0].params.after"),
		Entry("a bad target", "faults: [{name: f, target: database, model: outage}]\n", "$.faults[0].target"),
		Entry("a probability above 1", "faults: [{name: f, target: store, model: outage, schedule: {probability: 2}}]\n", "$.faults[0].schedule.probability"),
		Entry("an unknown metric", "expect: [{count: lots, equals: 1}]\n", "$.expect[0].count"),
		Entry("an auto-retry window at 25h", "system: {autoRetry: {windowStart: 25h, windowEnd: 6h}}\n", "$.system.autoRetry.windowStart"),
		Entry("an abortIf without a bound", "abortIf: {}\n", "$.abortIf"),
		Entry("an abortIf error window without a rate", "abortIf: {dlqDepth: 10, errorWindow: 30s}\n", "$.abortIf"),
		Entry("an abortIf error rate above 1", "abortIf: {errorRate: 50}\n", "$.abortIf.errorRate"),
		Entry("an abortIf error rate of 0", "abortIf: {errorRate: 0}\n", "$.abortIf.errorRate"),
		Entry("an abortIf DLQ depth of 0", "abortIf: {dlqDepth: 0}\n", "$.abortIf.dlqDepth"),
		Entry("an unknown abortIf key", "abortIf: {dlqDepht: 10}\n", "$.abortIf.dlqDepht"),
	)

	It("refuses what the loader refuses in abortIf, and accepts what it accepts", func() {
		for text, valid := range map[string]bool{
			"abortIf: {}\n":                                  false,
			"abortIf: {errorWindow: 30s}\n":                  false,
			"abortIf: {dlqDepth: 5, errorWindow: 30s}\n":     false,
			"abortIf: {errorRate: 0.5, errorWindow: 30s}\n":  true,
			"abortIf: {errorRate: 1}\n":                      true,
			"abortIf: {dlqDepth: 1, maxActiveFaults: 1}\n":   true,
			"abortIf: {maxActiveFaults: 0, dlqDepth: 1}\n":   false,
			"abortIf: {errorRate: 0.5, errorWindow: 10x}\n":  false,
			"abortIf: {dlqDepth: 5, maxActiveFaults: -1}\n":  false,
			"abortIf: {errorRate: 0.000001, dlqDepth: 10}\n": true,
		} {
			doc := scenarioHead + pingWorkload + text
			_, err := scenarios.LoadFS(mapFS("s.yaml", doc), "s.yaml")
			if valid {
				Expect(schemaErrors(s, []byte(doc))).To(BeEmpty(), text)
				Expect(err).NotTo(HaveOccurred(), text)
			} else {
				Expect(schemaErrors(s, []byte(doc))).NotTo(BeEmpty(), text)
				Expect(err).To(HaveOccurred(), text)
			}
		}
	})

	It("requires a scenario's name and duration, not a fragment's", func() {
		Expect(schemaErrors(s, []byte("apiVersion: faultline/v1\nkind: Scenario\n"))).To(ConsistOf(
			HavePrefix("$: missing metadata"), HavePrefix("$: missing duration")))
		Expect(schemaErrors(s, []byte("apiVersion: faultline/v1\nkind: Fragment\n"))).To(BeEmpty())
	})
})

var _ = Describe("The reference page", func() {
	var page string

	BeforeEach(func() { page = string(scenarios.Reference()) })

	It("lists every key of every type with its type and meaning", func() {
		s := schemaDoc()
		defs := s["$defs"].(map[string]any)
		names := []string{"Document"}
		for name := range defs {
			if _, ok := defs[name].(map[string]any)["properties"]; ok {
				names = append(names, name)
			}
		}
		sort.Strings(names[1:])
		for _, name := range names {
			i := strings.Index(page, "\n### "+name+"\n")
			Expect(i).To(BeNumerically(">", 0), name)
			section := page[i+1:]
			if j := strings.Index(section[4:], "\n### "); j >= 0 {
				section = section[:j+4]
			}
			for key, p := range definition(s, name)["properties"].(map[string]any) {
				doc := p.(map[string]any)["description"].(string)
				Expect(section).To(MatchRegexp("(?m)^\\| `%s` \\| [^|]+ \\| .*%s", regexp.QuoteMeta(key), regexp.QuoteMeta(strings.ReplaceAll(doc, "|", `\|`))), name+"."+key)
			}
		}
	})

	It("lists every model of the catalogue with its summary, true class, targets and params with defaults", func() {
		for _, e := range faults.Catalogue() {
			Expect(page).To(ContainSubstring("\n### "+e.Name+"\n\n"+e.Summary+"\n"), e.Name)
			for _, p := range e.Params {
				def := "—"
				if p.Default != "" {
					def = "`" + p.Default + "`"
				}
				Expect(page).To(ContainSubstring("| `"+p.Name+"` |"), e.Name+"."+p.Name)
				Expect(page).To(MatchRegexp("\\| `%s` \\| [^|]+ \\| %s \\|", regexp.QuoteMeta(p.Name), regexp.QuoteMeta(def)), e.Name+"."+p.Name)
			}
		}
		Expect(page).To(ContainSubstring("- True class: `indeterminate`\n- Targets: `dependency`"))
	})
})

// pingJobWorkload is pingWorkload with an explicit job "j".
const pingJobWorkload = "workload:\n  tasks: [{name: ping}]\n  arrivals: {rate: 1/s}\n  jobs: [{at: 1s, id: j, task: ping}]\n"

// targetFor returns a target a model may hit (and the simulator applies).
func targetFor(model string) string {
	for _, e := range faults.Catalogue() {
		if e.Name == model {
			switch e.Targets[0].String() {
			case "dependency":
				return "dependency/ping"
			case "alert-sink":
				return "alert-sink"
			default:
				return e.Targets[0].String()
			}
		}
	}
	return "store"
}

// schemaErrors validates a YAML document against the schema with a small
// validator of the keywords the schema uses, returning "path: problem" for
// each problem.
func schemaErrors(s map[string]any, data []byte) []string {
	GinkgoHelper()
	var doc any
	Expect(yaml.Unmarshal(data, &doc)).To(Succeed())
	v := &schemaValidator{root: s}
	v.check(s, doc, "$")
	return v.errs
}

type schemaValidator struct {
	root map[string]any
	errs []string
}

func (v *schemaValidator) fail(at, format string, args ...any) {
	v.errs = append(v.errs, at+": "+fmt.Sprintf(format, args...))
}

// quiet reports whether x is valid against schema, without recording
// problems.
func (v *schemaValidator) quiet(schema map[string]any, x any, at string) bool {
	sub := &schemaValidator{root: v.root}
	sub.check(schema, x, at)
	return len(sub.errs) == 0
}

func schemaNumber(x any) (float64, bool) {
	switch n := x.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func (v *schemaValidator) check(schema map[string]any, x any, at string) {
	if ref, ok := schema["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		v.check(v.root["$defs"].(map[string]any)[name].(map[string]any), x, at)
	}
	if t, ok := schema["type"].(string); ok && !schemaHasType(t, x) {
		v.fail(at, "expected %s, got %v", t, x)
		return
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return schemaSame(e, x) }) {
		v.fail(at, "%v is not one of %v", x, enum)
	}
	if c, ok := schema["const"]; ok && !schemaSame(c, x) {
		v.fail(at, "expected %v, got %v", c, x)
	}
	if p, ok := schema["pattern"].(string); ok {
		if str, isStr := x.(string); isStr && !regexp.MustCompile(p).MatchString(str) {
			v.fail(at, "%q does not match %s", str, p)
		}
	}
	if n, isNum := schemaNumber(x); isNum {
		if lo, ok := schema["minimum"].(float64); ok && n < lo {
			v.fail(at, "%v is below %v", n, lo)
		}
		if hi, ok := schema["maximum"].(float64); ok && n > hi {
			v.fail(at, "%v is above %v", n, hi)
		}
		if lo, ok := schema["exclusiveMinimum"].(float64); ok && n <= lo {
			v.fail(at, "%v is not above %v", n, lo)
		}
	}
	if obj, isObj := x.(map[string]any); isObj {
		props, _ := schema["properties"].(map[string]any)
		for _, key := range schemaKeys(obj) {
			if p, ok := props[key].(map[string]any); ok {
				v.check(p, obj[key], at+"."+key)
			} else if ap, ok := schema["additionalProperties"]; ok {
				if ap == false {
					v.fail(at+"."+key, "unknown key")
				} else if aps, ok := ap.(map[string]any); ok {
					v.check(aps, obj[key], at+"."+key)
				}
			}
		}
		if n, ok := schemaNumber(schema["minProperties"]); ok && float64(len(obj)) < n {
			v.fail(at, "%d keys, fewer than %v", len(obj), n)
		}
		if dr, ok := schema["dependentRequired"].(map[string]any); ok {
			for _, key := range schemaKeys(dr) {
				if _, has := obj[key]; !has {
					continue
				}
				for _, r := range schemaList(dr[key]) {
					if _, has := obj[r.(string)]; !has {
						v.fail(at, "%s without %s", key, r)
					}
				}
			}
		}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if _, has := obj[r.(string)]; !has {
					v.fail(at, "missing %s", r)
				}
			}
		}
	}
	if items, ok := schema["items"].(map[string]any); ok {
		if list, isList := x.([]any); isList {
			for i, item := range list {
				v.check(items, item, fmt.Sprintf("%s[%d]", at, i))
			}
		}
	}
	if anyOf, ok := schema["anyOf"].([]any); ok {
		if !slices.ContainsFunc(anyOf, func(s any) bool { return v.quiet(s.(map[string]any), x, at) }) {
			v.fail(at, "%v matches none of %d schemas", x, len(anyOf))
		}
	}
	for _, s := range schemaList(schema["allOf"]) {
		v.check(s.(map[string]any), x, at)
	}
	if cond, ok := schema["if"].(map[string]any); ok && v.quiet(cond, x, at) {
		if then, ok := schema["then"].(map[string]any); ok {
			v.check(then, x, at)
		}
	}
}

func schemaList(x any) []any {
	l, _ := x.([]any)
	return l
}

func schemaKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func schemaHasType(t string, x any) bool {
	switch t {
	case "object":
		_, ok := x.(map[string]any)
		return ok
	case "array":
		_, ok := x.([]any)
		return ok
	case "string":
		_, ok := x.(string)
		return ok
	case "boolean":
		_, ok := x.(bool)
		return ok
	case "integer":
		n, ok := schemaNumber(x)
		return ok && n == math.Trunc(n)
	case "number":
		_, ok := schemaNumber(x)
		return ok
	}
	return false
}

func schemaSame(a, b any) bool {
	if na, ok := schemaNumber(a); ok {
		nb, ok := schemaNumber(b)
		return ok && na == nb
	}
	return a == b
}

// schemaHost embeds an object of one document type in a valid scenario:
// base are the keys it needs, wrap puts the object in place.
type schemaHost struct {
	base [][2]string
	wrap func(obj string) string
}

// doc returns the scenario with key set to value in the object (or left
// out, when omit), the other base keys as they are.
func (h schemaHost) doc(key, value string, omit bool) string {
	var pairs []string
	seen := false
	for _, kv := range h.base {
		if kv[0] == key {
			seen = true
			if omit {
				continue
			}
			kv[1] = value
		}
		pairs = append(pairs, kv[0]+": "+kv[1])
	}
	if !seen && !omit {
		pairs = append(pairs, key+": "+value)
	}
	return h.wrap("{" + strings.Join(pairs, ", ") + "}")
}

// schemaHosts place an object of each document type.
func schemaHosts() map[string]schemaHost {
	const wl = "{tasks: [{name: ping, dependency: ping}], arrivals: {rate: 1/s}}"
	doc := func(kvs string) string {
		return "{apiVersion: faultline/v1, kind: Scenario, metadata: {name: s}, duration: 1m, workload: " + wl + kvs + "}\n"
	}
	in := func(prefix, suffix string) func(string) string {
		return func(obj string) string { return doc(", " + prefix + obj + suffix) }
	}
	return map[string]schemaHost{
		"Document": {base: [][2]string{{"apiVersion", "faultline/v1"}, {"kind", "Scenario"}, {"metadata", "{name: s}"}, {"duration", "1m"}, {"workload", wl}},
			wrap: func(obj string) string { return obj + "\n" }},
		"Metadata": {base: [][2]string{{"name", "s"}}, wrap: func(obj string) string {
			return "{apiVersion: faultline/v1, kind: Scenario, metadata: " + obj + ", duration: 1m, workload: " + wl + "}\n"
		}},
		"Workload": {base: [][2]string{{"tasks", "[{name: ping, dependency: ping}]"}, {"arrivals", "{rate: 1/s}"}}, wrap: func(obj string) string {
			return "{apiVersion: faultline/v1, kind: Scenario, metadata: {name: s}, duration: 1m, workload: " + obj + "}\n"
		}},
		"Task": {base: [][2]string{{"name", "ping"}, {"dependency", "ping"}}, wrap: func(obj string) string {
			return "{apiVersion: faultline/v1, kind: Scenario, metadata: {name: s}, duration: 1m, workload: {tasks: [" + obj + "], arrivals: {rate: 1/s}}}\n"
		}},
		"Arrivals": {base: [][2]string{{"rate", "1/s"}}, wrap: func(obj string) string {
			return "{apiVersion: faultline/v1, kind: Scenario, metadata: {name: s}, duration: 1m, workload: {tasks: [{name: ping}], arrivals: " + obj + "}}\n"
		}},
		"Burst": {base: [][2]string{{"at", "1s"}, {"count", "1"}}, wrap: func(obj string) string {
			return "{apiVersion: faultline/v1, kind: Scenario, metadata: {name: s}, duration: 1m, workload: {tasks: [{name: ping}], arrivals: {bursts: [" + obj + "]}}}\n"
		}},
		"PlannedJob": {base: [][2]string{{"at", "1s"}, {"task", "ping"}}, wrap: func(obj string) string {
			return "{apiVersion: faultline/v1, kind: Scenario, metadata: {name: s}, duration: 1m, workload: {tasks: [{name: ping}], jobs: [" + obj + "]}}\n"
		}},
		"Workers":    {wrap: in("workers: ", "")},
		"Dependency": {base: [][2]string{{"name", "ping"}}, wrap: in("dependencies: [", "]")},
		"System":     {wrap: in("system: ", "")},
		"Retry":      {wrap: in("system: {retry: ", "}")},
		"Budget":     {wrap: in("system: {retry: {budget: ", "}}")},
		"DLQ":        {wrap: in("system: {dlq: ", "}")},
		"Alerts":     {base: [][2]string{{"receivers", "[a, b]"}, {"defaultReceiver", "a"}}, wrap: in("system: {alerts: ", "}")},
		"Route":      {base: [][2]string{{"receiver", "a"}}, wrap: in("system: {alerts: {receivers: [a, b], defaultReceiver: a, routes: [", "]}}")},
		"Timing":     {wrap: in("system: {alerts: {dedupWindow: 1h, timing: ", "}}")},
		"Breaker":    {base: [][2]string{{"dependency", "ping"}}, wrap: in("system: {breakers: [", "]}")},
		"Fallback":   {wrap: in("system: {breakers: [{dependency: ping, fallback: ", "}]}")},
		"AutoRetry":  {base: [][2]string{{"windowStart", "22h"}, {"windowEnd", "6h"}}, wrap: in("system: {autoRetry: ", "}")},
		"Monitor":    {wrap: in("system: {monitor: ", "}")},
		"Invariants": {wrap: in("invariants: ", "")},
		"AbortIf":    {base: [][2]string{{"dlqDepth", "100"}, {"maxActiveFaults", "3"}}, wrap: in("abortIf: ", "")},
		"Fault":      {base: [][2]string{{"name", "f"}, {"target", "dependency/ping"}, {"model", "outage"}}, wrap: in("faults: [", "]")},
		"Schedule":   {wrap: in("faults: [{name: f, target: dependency/ping, model: outage, schedule: ", "}]")},
		"Periodic":   {base: [][2]string{{"period", "10s"}, {"duty", "0.5"}}, wrap: in("faults: [{name: f, target: dependency/ping, model: outage, schedule: {every: ", "}}]")},
		"When":       {base: [][2]string{{"state", "mid-call"}, {"dependency", "ping"}}, wrap: in("faults: [{name: f, target: worker/w1, model: worker-stall, schedule: {until: 30s, when: ", "}}]")},
		"Step":       {base: [][2]string{{"at", "10s"}, {"action", "requeue"}}, wrap: in("steps: [", "]")},
		"Filter":     {wrap: in("steps: [{at: 10s, action: delete, filter: ", "}]")},
		"Expect":     {base: [][2]string{{"count", "created"}, {"atLeast", "0"}}, wrap: in("expect: [", "]")},
		"External": {base: [][2]string{{"command", "{path: sh}"}, {"inject", "{preset: seed}"}, {"dlq", "{preset: seed}"}},
			wrap: in("system: {external: ", "}")},
		"Command":           {base: [][2]string{{"path", "sh"}}, wrap: in("system: {external: {inject: {preset: seed}, dlq: {preset: seed}, command: ", "}}")},
		"Inject":            {base: [][2]string{{"preset", "seed"}}, wrap: in("system: {external: {command: {path: sh}, dlq: {preset: seed}, inject: ", "}}")},
		"InjectRedisList":   {base: [][2]string{{"key", "q"}}, wrap: in("system: {external: {command: {path: sh}, dlq: {preset: seed}, inject: {redisList: ", "}}}")},
		"InjectRedisStream": {base: [][2]string{{"key", "q"}}, wrap: in("system: {external: {command: {path: sh}, dlq: {preset: seed}, inject: {redisStream: ", "}}}")},
		"RedisStream":       {base: [][2]string{{"key", "q"}}, wrap: in("system: {external: {command: {path: sh}, inject: {preset: seed}, dlq: {fields: {id: job.id}, redisStream: ", "}}}")},
		"InjectRedisHash": {base: [][2]string{{"key", "q"}, {"state", "{field: status, queued: [queued]}"}},
			wrap: in("system: {external: {command: {path: sh}, dlq: {preset: seed}, inject: {template: '{\"id\": \"{id}\", \"status\": \"queued\"}', redisHash: ", "}}}")},
		"InjectRedisZSet": {base: [][2]string{{"key", "q"}}, wrap: in("system: {external: {command: {path: sh}, dlq: {preset: seed}, inject: {redisZSet: ", "}}}")},
		"QueueState": {base: [][2]string{{"field", "status"}, {"queued", "[queued]"}},
			wrap: in("system: {external: {command: {path: sh}, dlq: {preset: seed}, inject: {template: '{\"id\": \"{id}\", \"status\": \"queued\"}', redisZSet: {key: q, state: ", "}}}}")},
		"InjectHTTP":          {base: [][2]string{{"url", `"http://127.0.0.1:8080/jobs"`}}, wrap: in("system: {external: {command: {path: sh}, dlq: {preset: seed}, inject: {http: ", "}}}")},
		"ExternalPolicyDoc":   {base: [][2]string{{"maxAttempts", "3"}}, wrap: in("system: {external: {command: {path: sh}, inject: {preset: seed}, dlq: {preset: seed}, policy: ", "}}")},
		"ExternalReady":       {base: [][2]string{{"redisKey", "ready"}}, wrap: in("system: {external: {command: {path: sh}, inject: {preset: seed}, dlq: {preset: seed}, ready: ", "}}")},
		"ExternalReceiverDoc": {base: [][2]string{{"name", "chat"}}, wrap: in("system: {external: {command: {path: sh}, inject: {preset: seed}, dlq: {preset: seed}, receivers: [", "]}}")},
		"ExternalDLQ":         {base: [][2]string{{"preset", "seed"}}, wrap: in("system: {external: {command: {path: sh}, inject: {preset: seed}, dlq: ", "}}")},
		"RedisKeys":           {base: [][2]string{{"keys", "[dead]"}}, wrap: in("system: {external: {command: {path: sh}, inject: {preset: seed}, dlq: {fields: {id: job.id}, redisList: ", "}}}")},
		"HTTPRead":            {base: [][2]string{{"url", `"http://127.0.0.1:8080/dlq"`}}, wrap: in("system: {external: {command: {path: sh}, inject: {preset: seed}, dlq: {fields: {id: job.id}, http: ", "}}}")},
	}
}

// constraint is one value a key's schema allows or refuses.
type constraint struct {
	typ, key, value, why string
	omit, valid          bool
}

// schemaConstraints lists, for every key the schema constrains (enum,
// minimum, exclusiveMinimum, maximum, a const-or-minimum, pattern,
// required, a duration or rate), values that break the constraint, and
// the bounds themselves, which keep it.
func schemaConstraints(s map[string]any) []constraint {
	var out []constraint
	names := []string{"Document"}
	for name, d := range s["$defs"].(map[string]any) {
		if _, ok := d.(map[string]any)["properties"]; ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	for _, name := range names {
		def := definition(s, name)
		for _, r := range schemaList(def["required"]) {
			out = append(out, constraint{typ: name, key: r.(string), omit: true, why: "required"})
		}
		props := def["properties"].(map[string]any)
		for _, key := range schemaKeys(props) {
			p := props[key].(map[string]any)
			list := false
			if items, ok := p["items"].(map[string]any); ok {
				p, list = items, true
			}
			add := func(value, why string, valid bool) {
				if list {
					value = "[" + value + "]"
				}
				out = append(out, constraint{typ: name, key: key, value: value, why: why, valid: valid})
			}
			integer := p["type"] == "integer"
			step := 0.5
			if integer {
				step = 1
			}
			if len(schemaList(p["enum"])) > 0 {
				add("zz-none-of-these", "enum", false)
			}
			if lo, ok := p["minimum"].(float64); ok {
				add(num(lo-step), "minimum", false)
				add(num(lo), "minimum", true)
				add(num(lo+step), "minimum", true)
			}
			if lo, ok := p["exclusiveMinimum"].(float64); ok {
				add(num(lo), "exclusiveMinimum", false)
			}
			if hi, ok := p["maximum"].(float64); ok {
				add(num(hi+step), "maximum", false)
				add(num(hi), "maximum", true)
			}
			if alts := schemaList(p["anyOf"]); len(alts) == 2 {
				if lo, ok := alts[1].(map[string]any)["minimum"].(float64); ok {
					add("0", "const 0", true)
					add(num(lo-step), "anyOf minimum", false)
					add(num(lo), "anyOf minimum", true)
				}
			}
			if _, ok := p["pattern"].(string); ok {
				add(`"zz not this"`, "pattern", false)
			}
			switch p["$ref"] {
			case "#/$defs/duration":
				add("10x", "duration", false)
			case "#/$defs/rate":
				add("fast", "rate", false)
			}
		}
	}
	return out
}

var _ = Describe("The JSON Schema and the loader (issue 11 item 7)", func() {
	It("agree on the targets each model may hit, the simulator's refusals included", func() {
		s := schemaDoc()
		allowed, refused := 0, 0
		for _, e := range faults.Catalogue() {
			for _, target := range []string{"dependency/ping", "dlq-store", "alert-sink", "alert-sink/on-call", "worker", "worker/w1", "store"} {
				text := scenarioHead + "workload: {tasks: [{name: ping, dependency: ping}], arrivals: {rate: 1/s}}\n" +
					"faults: [{name: f, target: " + target + ", model: " + e.Name + "}]\nsteps: [{at: 30s, action: requeue}]\n"
				what := e.Name + " on " + target
				_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
				if len(schemaErrors(s, []byte(text))) == 0 {
					Expect(err).NotTo(HaveOccurred(), "the schema allows and the loader refuses "+what)
					allowed++
				} else {
					Expect(err).To(HaveOccurred(), "the schema refuses and the loader accepts "+what)
					refused++
				}
			}
		}
		Expect(allowed).To(BeNumerically(">", 10))
		Expect(refused).To(BeNumerically(">", 10))
		text := scenarioHead + pingWorkload + "faults: [{name: f, target: dlq-store, model: latency}]\n"
		Expect(schemaErrors(s, []byte(text))).To(ContainElement(HavePrefix("$.faults[0].target:")))
	})

	It("agree on every constrained key: what the schema refuses the loader refuses, the bounds it allows the loader accepts", func() {
		s := schemaDoc()
		hosts := schemaHosts()
		cs := schemaConstraints(s)
		Expect(len(cs)).To(BeNumerically(">", 80))
		kinds := map[string]int{}
		for _, c := range cs {
			h, ok := hosts[c.typ]
			Expect(ok).To(BeTrue(), "no host for %s", c.typ)
			if c.typ == "Expect" && (c.key == "equals" || c.key == "atMost") {
				h.base = h.base[:1] // one comparison at a time
			}
			text := h.doc(c.key, c.value, c.omit)
			what := fmt.Sprintf("%s.%s = %s (%s)\n%s", c.typ, c.key, c.value, c.why, text)
			if c.omit {
				what = fmt.Sprintf("%s.%s left out (%s)\n%s", c.typ, c.key, c.why, text)
			}
			_, err := scenarios.LoadFS(mapFS("s.yaml", text), "s.yaml")
			if c.valid {
				Expect(schemaErrors(s, []byte(text))).To(BeEmpty(), what)
				Expect(err).NotTo(HaveOccurred(), what)
			} else {
				Expect(schemaErrors(s, []byte(text))).NotTo(BeEmpty(), "the schema allows "+what)
				Expect(err).To(HaveOccurred(), "the schema refuses and the loader accepts "+what)
			}
			kinds[c.why]++
		}
		GinkgoWriter.Printf("%d constraints checked: %v\n", len(cs), kinds)
		for _, k := range []string{"enum", "minimum", "maximum", "exclusiveMinimum", "anyOf minimum", "pattern", "required", "duration", "rate"} {
			Expect(kinds).To(HaveKey(k))
		}
	})
})
