//go:build faultline_mutants

package mutant

import (
	"fmt"
	"sync/atomic"
)

// current is the name of the mutant switched on, "" for none.
var current atomic.Pointer[string]

// Enabled reports whether this binary was built with the faultline_mutants
// tag, so that mutants can be switched on.
const Enabled = true

// On reports whether the mutant named name is switched on.
func On(name string) bool {
	p := current.Load()
	return p != nil && *p == name
}

// Set switches on the mutant named name and every other one off; "" switches
// all of them off. A name the registry does not hold is an error, so that a
// runner never scores a mutant that cannot fire. It exists only in a
// faultline_mutants build.
func Set(name string) error {
	if name != "" {
		if _, ok := Lookup(name); !ok {
			return fmt.Errorf("set mutant %q: %w", name, ErrUnknown)
		}
	}
	current.Store(&name)
	return nil
}

// Current returns the name of the mutant switched on, "" for none.
func Current() string {
	if p := current.Load(); p != nil {
		return *p
	}
	return ""
}
