//go:build !faultline_mutants

package mutant

// On reports whether the mutant named name is switched on. In a build
// without the faultline_mutants tag — every release build — it is a
// constant false the compiler inlines away, and Set does not exist, so no
// mutant can be reached.
func On(name string) bool { return false }

// Enabled reports whether this binary was built with the faultline_mutants
// tag, so that mutants can be switched on.
const Enabled = false
