// Package scenarios reads and writes scenario files: failure drills as YAML
// (apiVersion: faultline/v1) that map one to one onto the simulator's
// sim.Scenario.
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
