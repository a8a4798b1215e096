// Package scenarios owns the scenario model and its validation, and reads
// and writes scenario files: failure drills as YAML (apiVersion:
// faultline/v1) that map one to one onto the model.
//
// # The model
//
// A Scenario is one fault drill as Go values (model.go, external.go): the
// workload, the worker slots, the dependencies, the system's configuration
// (or a black-box system, ExternalSpec), the faults, the operator's steps,
// the drill's guard (AbortIfSpec) and the expectations. Its parts that share
// a name with a document type carry the suffix Spec: the document's Workload
// converts to a WorkloadSpec. The expectations (Count, JobFate, PageWithin,
// DrainedBy, BreakerOpened, BreakerClosedBy, BreakerTransitions, Confusion,
// JobAttempts, RetryRate) are data, a closed set behind the Expectation
// interface: the simulator (package sim) and the drills judge them against
// what a run observed. Scenario.Validate reports every invalid field, each a
// *ScenarioError (errors.Is ErrInvalidScenario): the scenario's own fields,
// the reference components' configurations as a run builds them
// (StoreConfig, AlertConfig, MonitorConfig, AutoRetryConfig), what the
// simulator does not simulate (ErrNotSimulated, Simulates), references that
// name nothing, and the RunLimits (a *LimitError, errors.Is ErrLimit). The
// package imports neither the simulator nor the drills, so that a judge can
// read a scenario without the engine; a spec checks it.
//
// The format is the Document types (types.go), the single source of truth:
// the loader decodes by reflection over their yaml tags, and the JSON Schema
// (Schema, checked in as schema/scenario.schema.json) and the reference page
// (Reference, checked in as docs/scenario-format.md) are generated from the
// same types and from faults.Catalogue(). `go generate ./scenarios` rewrites
// both; a spec fails when a checked-in copy is stale.
//
// Load and LoadFS read a scenario, merge the fragments it includes (kind:
// Fragment, relative to the including file; missing files and cycles are
// errors) and Convert it. The YAML is decoded from goccy/go-yaml's AST, so
// every problem has a position, and decoding goes on past a bad value: a
// *LoadError (errors.Is ErrInvalid) lists every problem of every file, each
// "file:line:col: message", in file then position order — unknown keys with
// a suggestion among the keys valid at that place, values of the wrong
// type, bad durations and rates, and Convert's problems mapped from their
// paths ("faults[2].params.after") back to the positions of those values.
// Parse decodes one document without following includes; Marshal writes a
// document back, and Parse(Marshal(d)) gives d.
//
// Loading is deterministic and never panics on any input (FuzzLoad); a
// loaded scenario's Hash identifies its effective document.
package scenarios

//go:generate go run ./internal/gen -schema schema/scenario.schema.json -doc ../docs/scenario-format.md
