// Package mutant holds the reference's deliberate defects — its mutants —
// and the switch that turns one on, so that the mutation suite can measure
// what the built-in scenario library catches.
//
// Each mutant is a one-line branch at its defect site,
//
//	if mutant.On("retry/no-jitter") { ... }
//
// listed in the registry (All) with its package, its bug class and what it
// breaks. In a release build On is a constant false that the compiler
// inlines away, and Set does not exist: no mutant can be reached. Only a
// build with the faultline_mutants tag can switch one on, at run time and by
// name, so the whole suite is one test binary:
//
//	go test -tags faultline_mutants ./reference/internal/mutant/score/ -v
//
// The registry and the call sites are kept in step by this package's specs
// (every site registered, every registered mutant at exactly one site).
package mutant
