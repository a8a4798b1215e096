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
//
// # Files
//
// The model, and what a run makes of it:
//
//   - model.go: Scenario and its parts (workload, workers, dependencies,
//     system, steps, guard, invariants), the simulator's input, and the
//     reference components' configurations a run builds from it.
//   - external.go: ExternalSpec, a black-box system and its defaults.
//   - expectations.go: the Expectation set, Op and the Metrics counted.
//   - names.go: each expectation's name and want, the lines a report shows.
//   - runlimits.go: RunLimits, what a run may use, and *LimitError.
//   - validate.go: Scenario.Validate and *ScenarioError; the scenario's own
//     fields, its steps and expectations.
//   - validate_components.go: the reference components' configurations as
//     a run builds them.
//   - validate_faults.go: what the simulator simulates (ErrNotSimulated,
//     Simulates) and the faults' schedules.
//   - validate_external.go: a black-box system's commands, placeholders
//     and layout.
//   - defaults.go: Effective, a loaded document with every default filled
//     in.
//   - annotate.go: Annotate and RedactedConfig, a result completed with its
//     file, hash and redacted document.
//   - shrink.go: Shrink, the smallest document that fails the same way.
//
// The format, and its generated schema and reference page:
//
//   - types.go: the Document types, the format's single source of truth.
//   - schema.go: the format's fields by reflection over the yaml tags, and
//     Schema, the JSON Schema built from them.
//   - keydocs.go: what each type and key means and the constraints on its
//     values (patterns, enums, bounds), for the schema and the page.
//   - reference.go: Reference, the Markdown reference page.
//
// Reading and writing scenario files:
//
//   - load.go: the entry points (Load, LoadFS, Parse), Diagnostic,
//     *LoadError, Loaded, and the loader that drives a load.
//   - files.go: where the loader reads (the OS or an fs.FS), paths
//     resolved, confined and rebased, programs and folders checked.
//   - limits.go: Limits, what a load may take (Limits.Load), reading a
//     file within a size, and the nesting scan that runs before the parser.
//   - include.go: following includes (cycles, missing files, fragments'
//     paths rebased), merging fragments with their places, the rules file.
//   - parse.go: one document parsed from YAML, syntax errors placed, and
//     the helpers that read the parser's nodes (names, text, positions).
//   - decode.go: the decoder from the YAML AST into the Document types:
//     anchors and aliases, the value limits, scalars, durations and rates.
//   - decode_mappings.go: mappings (merge keys, unknown keys with a
//     suggestion), lists, parameters' values, apiVersion and kind.
//   - positions.go: Convert's problems placed at the positions of their
//     paths, leaving out those the decoder reported; diagnostics sorted.
//   - convert.go: Convert and Problem; the document's top-level parts
//     (metadata, guard, workload, invariants).
//   - convert_system.go: the system (reference components, a black box's
//     commands) and the operator's steps.
//   - convert_faults.go: faults and their models' parameters.
//   - convert_expect.go: the expectations.
//   - marshal.go: Marshal, a document written back as YAML.
//   - external_flag.go: WithExternal, a loaded scenario drilled as a
//     black box from a separate file.
//   - relocate.go: Relocate, a document's paths rewritten for another
//     folder.
//   - builtin.go: the built-in library (LoadBuiltin, Builtins).
package scenarios

//go:generate go run ./internal/gen -schema schema/scenario.schema.json -doc ../docs/scenario-format.md
