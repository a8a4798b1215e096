package faults

import (
	"strconv"
	"strings"
)

// TargetKind says what a fault hits: a dependency's calls, the DLQ store, an
// alert receiver, a worker process or the queue store.
type TargetKind uint8

// The target kinds. The zero value is no kind, which no fault may use.
const (
	// Dependency is a named dependency's calls (Target.Name is the
	// dependency, e.g. "payment-gateway").
	Dependency TargetKind = iota + 1
	// DLQStore is the writes to and reads of the dead letter queue store.
	DLQStore
	// AlertSink is the deliveries to a named alert receiver (Target.Name is
	// the receiver; "" is every receiver).
	AlertSink
	// Worker is a worker process (Target.Name is the worker, e.g. "w1"; ""
	// is every worker).
	Worker
	// Store is the queue store as a whole (a slow or unreachable store).
	Store
)

// kindCount bounds the kinds, for tables indexed by kind.
const kindCount = int(Store) + 1

var kindNames = [...]string{"", "dependency", "dlq-store", "alert-sink", "worker", "store"}

// TargetKinds lists every target kind, in order.
func TargetKinds() []TargetKind {
	return []TargetKind{Dependency, DLQStore, AlertSink, Worker, Store}
}

// String returns the kind's name as written in scenario files: "dependency",
// "dlq-store", "alert-sink", "worker" or "store".
func (k TargetKind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return "target-kind(" + strconv.Itoa(int(k)) + ")"
}

func (k TargetKind) valid() bool { return k >= Dependency && k <= Store }

// carriesJobs reports whether calls to targets of the kind say which job
// makes them (Call.JobID), so that Schedule.Jobs can select them.
func (k TargetKind) carriesJobs() bool { return k == Dependency || k == DLQStore }

// ParseTargetKind reads a kind name such as "dependency" or "dlq-store"
// (case-insensitive; "_" may stand for "-"). An unknown name is a *NameError
// suggesting the closest known one.
func ParseTargetKind(s string) (TargetKind, error) {
	n := normalize(s)
	for i, name := range kindNames {
		if i > 0 && name == n {
			return TargetKind(i), nil
		}
	}
	return 0, newNameError("target kind", s, kindNames[1:])
}

// MarshalText writes the kind's name; an invalid kind is an error.
func (k TargetKind) MarshalText() ([]byte, error) {
	if !k.valid() {
		return nil, &NameError{What: "target kind", Name: k.String(), Known: append([]string(nil), kindNames[1:]...)}
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText reads a kind name, as ParseTargetKind does.
func (k *TargetKind) UnmarshalText(b []byte) error {
	v, err := ParseTargetKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// Target is what a fault hits: a kind and, for kinds with names, a name.
// A fault whose target has Name "" hits every name of its kind.
type Target struct {
	// Kind is what sort of thing is hit.
	Kind TargetKind
	// Name is the dependency, receiver or worker; "" is every one of the
	// kind (and the usual name of the two stores).
	Name string
}

// String returns e.g. "dependency/payment-gateway", "alert-sink/on-call",
// "worker/*" (every worker), "dlq-store" or "store" (kinds that are usually
// unnamed print no name when it is empty).
func (t Target) String() string {
	if t.Name != "" {
		return t.Kind.String() + "/" + t.Name
	}
	switch t.Kind {
	case DLQStore, Store:
		return t.Kind.String()
	}
	return t.Kind.String() + "/*"
}

// ParseTarget reads what String writes: "kind", "kind/*" or "kind/name".
func ParseTarget(s string) (Target, error) {
	kind, name, _ := strings.Cut(s, "/")
	k, err := ParseTargetKind(kind)
	if err != nil {
		return Target{}, err
	}
	if name == "*" {
		name = ""
	}
	return Target{Kind: k, Name: name}, nil
}

// MarshalText writes the target as String does; an invalid kind is an error.
func (t Target) MarshalText() ([]byte, error) {
	if !t.Kind.valid() {
		return nil, &NameError{What: "target kind", Name: t.Kind.String(), Known: append([]string(nil), kindNames[1:]...)}
	}
	return []byte(t.String()), nil
}

// UnmarshalText reads a target, as ParseTarget does.
func (t *Target) UnmarshalText(b []byte) error {
	v, err := ParseTarget(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// hits reports whether a fault aimed at t hits a call to c.
func (t Target) hits(c Target) bool {
	return t.Kind == c.Kind && (t.Name == "" || t.Name == c.Name)
}

func normalize(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
}
