package reports

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

//go:generate go run ./internal/gen -o schema/report.schema.json

// SchemaID is the $id of the report's JSON Schema: where the checked-in
// copy (schema/report.schema.json) lives in the repository.
const SchemaID = "https://github.com/faultline/faultline/reports/schema/report.schema.json"

// modelSource is the model's source, whose doc comments describe the
// schema's keys: one text for the Go reader and the schema's.
//
//go:embed result.go
var modelSource []byte

// fieldDocs describe the model's fields that have no doc comment of their
// own (or whose comment heads a group), by "Type.Field".
var fieldDocs = map[string]string{
	"Result.ReportVersion": "The version of the report's JSON form (ReportVersion): it grows when a field changes meaning or disappears; new fields do not bump it.",
	"Result.Scenario":      "The scenario's name (its metadata.name).",
	"Result.Description":   "The scenario's description: what it proves, in a sentence.",
	"Result.Seed":          "The seed of the run: every random draw derives from it.",
	"Result.Expectations":  "Every expectation of the scenario with its outcome, in the scenario's order.",
	"Result.Violations":    "The invariant violation that stopped the run, if any (at most one: the first stops it).",
	"Result.Ledger":        "Where every created job ended up, and what happened on the way.",
	"Result.DLQ":           "The dead letter queue at the end of the run.",
	"Result.Alerts":        "What the alert sinks received.",
	"Result.Breakers":      "Every circuit-breaker state change, in order.",
	"Result.Confusion":     "The classifier's confusion matrix: failures by injected (true) class, what the classifier said and the route taken.",
	"Result.Faults":        "Every fault of the schedule, with its windows and hits.",
	"Result.Steps":         "The operator steps as they were carried out, in order.",
	"Result.Series":        "The run's time series.",
	"Result.Engine":        "The work the simulator did (deterministic counts, never wall-clock figures).",

	"Expectation.Expected": "What the expectation requires, e.g. \"≥ 1\".",
	"Expectation.Actual":   "What the run gave (for a not-observable expectation, why a black-box drill cannot see it).",
	"Expectation.Verdict":  "Whether the expectation held, or why it was not judged (skipped, not-observable).",

	"Violation.JobID": "The job whose move broke the invariant, when one did.",
	"Violation.AtMs":  "The virtual offset of the violation, in milliseconds.",
	"Violation.Seed":  "The seed of the run.",

	"Ledger.Created":       "Jobs created. Created = queued + inFlight + scheduled + fallback + heldAtEnd + deadLettered + succeeded + removed, always.",
	"Ledger.Queued":        "Jobs waiting in the work queue at the end.",
	"Ledger.InFlight":      "Jobs leased by a worker at the end.",
	"Ledger.Scheduled":     "Jobs waiting for a retry at the end.",
	"Ledger.Fallback":      "Jobs in the batch (fallback) queue at the end.",
	"Ledger.DeadLettered":  "Jobs in the DLQ at the end.",
	"Ledger.Succeeded":     "Jobs that succeeded.",
	"Ledger.Attempts":      "Attempts made: every call of a job's handler.",
	"Ledger.Retries":       "Failed attempts scheduled for a retry.",
	"Ledger.DeadLetters":   "Moves into the DLQ (a job requeued and dead-lettered again counts twice).",
	"Ledger.Requeues":      "Moves out of the DLQ back to the work queue (an operator's or the auto-retry's requeue).",
	"Ledger.Diversions":    "Jobs diverted to the batch queue while a breaker was open.",
	"Ledger.Drained":       "Jobs drained from the batch queue back to the work queue.",
	"Ledger.Released":      "Jobs released back to the queue without an attempt counted (a shutdown, a breaker refusing).",
	"Ledger.LeaseExpiries": "Leases that expired, the job coming back to the queue (a crashed or stalled worker).",
	"Ledger.Evicted":       "DLQ entries evicted from a full DLQ.",
	"Ledger.Purged":        "DLQ entries purged by an operator.",
	"Ledger.HeldMaxMs":     "The longest a held dead letter waited for the DLQ (its store away, or no room), from its failure to its write, in milliseconds.",
	"Ledger.HeldAtEnd":     "Jobs whose dead letters were decided but still wait in the held set for room in the DLQ at the end.",

	"TaskTotals.Task":         "The task's name.",
	"TaskTotals.Created":      "The task's jobs created.",
	"TaskTotals.Succeeded":    "The task's jobs that succeeded.",
	"TaskTotals.DeadLettered": "The task's jobs in the DLQ at the end.",
	"TaskTotals.Fallback":     "The task's jobs in the batch queue at the end.",
	"TaskTotals.Removed":      "The task's jobs whose DLQ entry was evicted or purged.",

	"DeadLetterCount.Task":     "The task.",
	"DeadLetterCount.Severity": "The failure's severity (low, medium, high).",
	"DeadLetterCount.Class":    "The failure's class as the classifier said it.",
	"DeadLetterCount.Count":    "Moves into the DLQ with this task, severity and class.",

	"JobFate.JobID":            "The job's ID.",
	"JobFate.Task":             "The job's task.",
	"JobFate.Requeued":         "How many times the job was requeued from the DLQ.",
	"JobFate.Charged":          "How many times the job charged a payment.",
	"JobFate.EverDeadLettered": "Whether the job was ever in the DLQ.",

	"DLQ.Total":      "Entries in the DLQ at the end, every status.",
	"DLQ.ByStatus":   "Entries by status (failed, quarantined, requeued, deleted, ...).",
	"DLQ.BySeverity": "Entries by severity.",
	"DLQ.Corrupt":    "Entries the DLQ store could not decode.",

	"DLQEntry.JobID":    "The dead-lettered job's ID.",
	"DLQEntry.Task":     "The job's task.",
	"DLQEntry.Status":   "The entry's status (failed, quarantined, requeued, deleted).",
	"DLQEntry.Class":    "The class of the job's last failure.",
	"DLQEntry.Severity": "The severity of the job's last failure.",
	"DLQEntry.Rule":     "The classifier rule that matched the last failure.",
	"DLQEntry.Attempts": "Attempts made before the job was dead-lettered.",
	"DLQEntry.Reason":   "Why the job was dead-lettered (permanent, exhausted, critical, ...).",
	"DLQEntry.Error":    "The last failure's error message.",

	"Alerts.Raised":       "Alerts the alerter raised (the alerter's own count, when it reports one).",
	"Alerts.Deduplicated": "Occurrences deduplicated into an alert already firing.",
	"Alerts.Inhibited":    "Warnings inhibited because a breaker was open.",
	"Alerts.Redelivered":  "Redeliveries the alerter's outbox scheduled after a sink refused a send.",
	"Alerts.Repeats":      "Repeat notifications of an alert still firing.",
	"Alerts.Resolved":     "Alerts resolved.",

	"Delivery.AtMs":        "The virtual offset of the delivery, in milliseconds.",
	"Delivery.Receiver":    "The receiver the notification went to.",
	"Delivery.Fingerprint": "The alert's fingerprint: its identifying labels.",
	"Delivery.Name":        "The alert's name.",
	"Delivery.Severity":    "The alert's severity; a firing high-severity alert is a page.",
	"Delivery.Status":      "firing or resolved.",
	"Delivery.Count":       "Occurrences the alert stands for (deduplicated into it).",
	"Delivery.Summary":     "The alert's summary line.",

	"Transition.AtMs":    "The virtual offset of the transition, in milliseconds.",
	"Transition.Breaker": "The breaker: its dependency's name.",
	"Transition.From":    "The state before (closed, open, half-open).",
	"Transition.To":      "The state after (closed, open, half-open).",
	"Transition.Reason":  "Why the breaker moved.",

	"Confusion.True":   "The injected (true) class of the failures of this row.",
	"Confusion.Total":  "Failures whose injected class is this.",
	"Confusion.Said":   "Those failures by the class the classifier said.",
	"Confusion.Routes": "Those failures by the route the job took (retry, dead-letter, release, divert).",

	"Fault.Name":       "The fault's name.",
	"Fault.Target":     "What it hits: dependency/NAME, dlq-store, alert-sink[/NAME], worker[/NAME] or store.",
	"Fault.Model":      "The fault model (outage, http-status, gateway-timeout, ...).",
	"Fault.Class":      "The class of failure it injects, when it injects one.",
	"Fault.Hits":       "Calls it made fail.",
	"Fault.FirstHitMs": "The virtual offset of its first hit, in milliseconds (0 without hits).",
	"Fault.LastHitMs":  "The virtual offset of its last hit, in milliseconds (0 without hits).",

	"Step.AtMs":   "The virtual offset of the step, in milliseconds.",
	"Step.Kind":   "The step: requeue, delete, purge, set-workers or set-retry.",
	"Step.Detail": "What the step did, e.g. \"matched 1, requeued 1, skipped 0\".",

	"Series.IntervalMs": "The sampling interval, in milliseconds of virtual time.",
	"Series.AtMs":       "The virtual offset of each sample, in milliseconds.",
	"Series.Queued":     "Jobs in the work queue, per sample.",
	"Series.Held":       "Dead letters decided and waiting in the held set for room in the DLQ, per sample; absent when a run never held one.",
	"Series.InFlight":   "Jobs in flight, per sample.",
	"Series.Scheduled":  "Jobs waiting for a retry, per sample.",
	"Series.Fallback":   "Jobs in the batch queue, per sample.",

	"External.Inject":        "How the drill injects jobs into the system, e.g. \"seed preset: LPUSH ns:default\".",
	"External.DLQ":           "How the drill reads the system's DLQ, e.g. \"redis lists ns:dead_letter, ns:dlq:high\".",
	"External.DrainMs":       "How long the drill waited after the scenario's end for the jobs to settle, in milliseconds.",
	"External.SettledAtMs":   "The offset at which the last job settled, in milliseconds (-1: some never did).",
	"External.DLQReads":      "Reads of the system's DLQ.",
	"External.DLQReadErrors": "Reads of the system's DLQ that failed.",
	"External.Lost":          "The jobs neither succeeded, nor in the DLQ, nor queued at the end (at most MaxListedViolations).",
	"External.Trimmed":       "The jobs whose DLQ entries left the DLQ by no mechanism the scenario declares.",
	"External.Ready":         "How the drill knew the system was ready for its first job (its readiness probe), and how long after the start it said so; absent for the blind startup wait.",
	"External.PageWait":      "The drain's wait for a page still owed once every job had settled; absent when none was owed.",
	"PageWait.Dependency":    "The dependency whose critical failure the page was owed for.",
	"PageWait.IncidentMs":    "The offset of the incident's first critical answer, in milliseconds.",
	"PageWait.DeadlineMs":    "The page's deadline (the first critical answer plus invariants.pageWithin), in milliseconds.",
	"PageWait.FromMs":        "When the wait began (every job settled and the system quiet), in milliseconds.",
	"PageWait.UntilMs":       "When the wait ended (the page came, or the drain was up), in milliseconds.",
	"PageWait.PagedMs":       "When the page came, in milliseconds (-1: not while the drill watched).",
	"External.TrimmedCount":  "How many jobs' DLQ entries left the DLQ by no mechanism the scenario declares, in all (trimmed lists at most 100).",

	"Engine.Events":    "Events the engine ran.",
	"Engine.Jobs":      "Jobs created.",
	"Engine.MaxQueue":  "The deepest the work queue got.",
	"Engine.Processes": "The worker processes of the fleet the run ran (workers.processes), when more than one: each its own retry policy, breakers and fallbacks, over one store, DLQ and alerter, and one retry budget unless its scope is process.",
	"Engine.Slots":     "The worker slots the fleet's processes ran between them, round robin (with processes).",
}

// Schema returns the JSON Schema (draft 2020-12) of the report's JSON form,
// generated by reflection from Result, every key described by the model's
// doc comments: indented, ending in a newline. The checked-in copy is
// schema/report.schema.json; `go generate ./reports` rewrites it.
func Schema() []byte { return bytes.Clone(schemaBytes()) }

var schemaBytes = sync.OnceValue(func() []byte {
	docs := modelDocs()
	g := schemaGen{docs: docs}
	rt := reflect.TypeFor[Result]()
	root := orderedObject{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", SchemaID},
		{"title", "faultline report (reportVersion " + strconv.Itoa(ReportVersion) + ")"},
	}
	root = append(root, g.structSchema(rt)...)
	defs := orderedObject{}
	for i := 0; i < len(g.defs); i++ { // structSchema appends while we go
		t := g.defs[i]
		defs = append(defs, member{t.Name(), g.defSchema(t)})
	}
	root = append(root, member{"$defs", defs})
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		panic("reports: the JSON Schema does not encode: " + err.Error()) // plain values only
	}
	return b.Bytes()
})

// schemaGen builds the schema, collecting the named types to define.
type schemaGen struct {
	docs modelDoc
	defs []reflect.Type
}

var verdictType = reflect.TypeFor[Verdict]()

// def returns a $ref to t's definition, queueing it.
func (g *schemaGen) def(t reflect.Type) orderedObject {
	if !slices.Contains(g.defs, t) {
		g.defs = append(g.defs, t)
	}
	return orderedObject{{"$ref", "#/$defs/" + t.Name()}}
}

func (g *schemaGen) defSchema(t reflect.Type) orderedObject {
	if t == verdictType {
		return orderedObject{
			{"description", g.docs.types[t.Name()]},
			{"type", "string"},
			{"enum", []Verdict{Passed, Failed, Errored, Interrupted, Inconclusive, Skipped, NotObservable}},
		}
	}
	return g.structSchema(t)
}

// structSchema is an object of t's JSON keys, no others; the keys without
// omitempty are required.
func (g *schemaGen) structSchema(t reflect.Type) orderedObject {
	props := orderedObject{}
	var required []string
	for i := range t.NumField() {
		sf := t.Field(i)
		key, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || key == "-" {
			continue
		}
		if key == "" {
			key = sf.Name
		}
		s := orderedObject{{"description", g.docs.field(t.Name(), sf.Name)}}
		s = append(s, g.valueSchema(sf.Type)...)
		if t.Name() == "Result" && sf.Name == "ReportVersion" {
			s = append(s, member{"minimum", 1}, member{"maximum", ReportVersion})
		}
		props = append(props, member{key, s})
		if !slices.Contains(strings.Split(opts, ","), "omitempty") {
			required = append(required, key)
		}
	}
	out := orderedObject{{"description", g.docs.types[t.Name()]}, {"type", "object"}, {"properties", props}}
	if len(required) > 0 {
		out = append(out, member{"required", required})
	}
	return append(out, member{"additionalProperties", false})
}

// valueSchema is the schema of a value of type t.
func (g *schemaGen) valueSchema(t reflect.Type) orderedObject {
	if t == verdictType {
		return g.def(t)
	}
	switch t.Kind() {
	case reflect.Struct:
		return g.def(t)
	case reflect.Pointer: // an optional section (omitempty): its type's
		return g.valueSchema(t.Elem())
	case reflect.Float64:
		return orderedObject{{"type", "number"}}
	case reflect.Slice:
		return orderedObject{{"type", "array"}, {"items", g.valueSchema(t.Elem())}}
	case reflect.Array:
		return orderedObject{{"type", "array"}, {"items", g.valueSchema(t.Elem())}, {"minItems", t.Len()}, {"maxItems", t.Len()}}
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return orderedObject{{"type", "object"}}
		}
		return orderedObject{{"type", "object"}, {"additionalProperties", g.valueSchema(t.Elem())}}
	case reflect.String:
		return orderedObject{{"type", "string"}}
	case reflect.Bool:
		return orderedObject{{"type", "boolean"}}
	case reflect.Int, reflect.Int64:
		return orderedObject{{"type", "integer"}}
	case reflect.Uint64:
		return orderedObject{{"type", "integer"}, {"minimum", 0}}
	}
	panic("reports: no JSON Schema for a " + t.String()) // a new kind of field: teach the schema
}

// modelDoc holds the model's doc comments: by type name, and by
// "Type.Field".
type modelDoc struct {
	types  map[string]string
	fields map[string]string
	// groups maps "Type.Field" of a field without a comment to the comment
	// of the nearest field above it that has one.
	groups map[string]string
}

// field describes a field: fieldDocs first, then its own doc comment,
// then the comment of the group it is in when that comment names it.
func (d modelDoc) field(typ, name string) string {
	k := typ + "." + name
	if s := fieldDocs[k]; s != "" {
		return s
	}
	if s := d.fields[k]; s != "" {
		return s
	}
	if s := d.groups[k]; s != "" && regexp.MustCompile(`\b`+name+`\b`).MatchString(s) {
		return s
	}
	return ""
}

// modelDocs reads the doc comments of result.go.
func modelDocs() modelDoc {
	d := modelDoc{types: map[string]string{}, fields: map[string]string{}, groups: map[string]string{}}
	f, err := parser.ParseFile(token.NewFileSet(), "result.go", modelSource, parser.ParseComments)
	if err != nil {
		panic("reports: the embedded model does not parse: " + err.Error()) // it compiled
	}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			d.types[ts.Name.Name] = docText(doc)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			group := ""
			for _, fl := range st.Fields.List {
				text := docText(fl.Doc)
				if text == "" {
					text = docText(fl.Comment)
				}
				for _, n := range fl.Names {
					k := ts.Name.Name + "." + n.Name
					if text != "" {
						d.fields[k] = text
						group = text
					} else {
						d.groups[k] = group
					}
				}
			}
		}
	}
	return d
}

// docText is a comment's text on one line.
func docText(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.Join(strings.Fields(g.Text()), " ")
}

// orderedObject is a JSON object whose keys keep their order.
type orderedObject []member

type member struct {
	key   string
	value any
}

// MarshalJSON writes the members in order.
func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m.key); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		b.WriteByte(':')
		if err := enc.Encode(m.value); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
