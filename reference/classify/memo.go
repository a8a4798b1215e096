package classify

import (
	"reflect"

	"github.com/faultline/faultline/reference/internal/mutant"
)

// memoSlots is how many (error, scope) verdicts a Memo remembers: a run's
// faults make a handful of distinct errors.
const memoSlots = 16

// Memo is a Classifier that remembers its verdicts per error and scope
// (dependency, task, shutdown flag): the same error value in the same scope
// is classified once. It is for errors that answer the same every time they
// are asked — the simulator's injected errors, each built once by its fault
// and never changed — and remembers only those held by pointer (an error's
// identity) whose verdict does not depend on the time (an HTTP-date
// Retry-After is resolved against Scope.Now on every call) nor on a panic.
// Its verdicts are the Classifier's, call for call.
//
// A Memo is not safe for concurrent use: one goroutine owns it (the
// simulator's world). In a build with mutants it remembers nothing, so that
// a mutant switched on between runs is always heard.
type Memo struct {
	c     *Classifier
	slots [memoSlots]memoSlot
	n     int // slots filled
	next  int // the slot the next miss replaces, once all are filled
}

// memoSlot is one remembered verdict.
type memoSlot struct {
	err       error
	dep, task string
	shutdown  bool
	verdict   Classification
}

// Memo returns a Memo of c, empty.
func (c *Classifier) Memo() *Memo { return &Memo{c: c} }

// Classify returns c.Classify(err, scope), from memory when it holds it.
func (m *Memo) Classify(err error, scope Scope) Classification {
	if err == nil || mutant.Enabled {
		return m.c.Classify(err, scope)
	}
	// Only pointer-typed errors are stored, so == below never compares
	// two values of a type that is not comparable.
	for i := range m.n {
		s := &m.slots[i]
		if s.err == err && s.dep == scope.Dependency && s.task == scope.Task && s.shutdown == scope.ShuttingDown {
			return s.verdict
		}
	}
	verdict, pure := m.c.classify(err, scope)
	if !pure || reflect.TypeOf(err).Kind() != reflect.Pointer {
		return verdict
	}
	i := m.n
	if i < memoSlots {
		m.n++
	} else {
		i, m.next = m.next, (m.next+1)%memoSlots
	}
	m.slots[i] = memoSlot{err: err, dep: scope.Dependency, task: scope.Task, shutdown: scope.ShuttingDown, verdict: verdict}
	return verdict
}
