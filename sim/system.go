package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/retry"
	"github.com/faultline/faultline/reference/worker"
	"github.com/faultline/faultline/scenarios"
)

// WorkerSystem is a scenario's worker-side system under test: the
// classifier, the retry policy, and the breakers with their fallbacks,
// built by BuildWorkerSystem — the one place the simulator and a drill's
// worker processes build them, so both run the same values.
type WorkerSystem struct {
	Classifier worker.Classifier
	Policy     worker.Policy
	// Breakers are the scenario's breakers, in its order.
	Breakers []NamedBreaker
	// Guards protect the breakers' dependencies, for worker.Config.
	Guards map[string]worker.Guard
}

// Lanes are the lanes of a process running sys for sc: the queues its
// breakers let it lease from (worker.Lanes).
func (sys *WorkerSystem) Lanes(sc *scenarios.Scenario) *worker.Lanes {
	states := map[string]worker.StateReader{}
	for _, nb := range sys.Breakers {
		states[nb.Name] = nb.Breaker
	}
	return worker.NewLanes(sc.QueueDependencies(), states)
}

// NamedBreaker is one breaker of a WorkerSystem and the dependency it
// guards.
type NamedBreaker struct {
	Name    string
	Breaker Breaker
}

// BuildWorkerSystem builds sc's classifier, retry policy and breakers (with
// a degrade.Fallback draining through drainer for each reference breaker),
// on env's clock and random streams ("retry" for the policy's jitter),
// with the components opts replace. sc must have its defaults applied.
func BuildWorkerSystem(sc *scenarios.Scenario, env Env, drainer degrade.Drainer, opts ...Option) (*WorkerSystem, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return buildWorkerSystem(sc, env, drainer, &o)
}

func buildWorkerSystem(sc *scenarios.Scenario, env Env, drainer degrade.Drainer, o *options) (*WorkerSystem, error) {
	sys := &WorkerSystem{Guards: map[string]worker.Guard{}}
	var err error
	switch {
	case o.classifier != nil:
		sys.Classifier, err = o.classifier(env)
	case sc.System.Rules != nil:
		sys.Classifier, err = classify.New(sc.System.Rules)
	default:
		sys.Classifier = classify.Default()
	}
	if err != nil {
		return nil, fmt.Errorf("classifier: %w", err)
	}
	if o.policy != nil {
		sys.Policy, err = o.policy(env)
	} else {
		sys.Policy, err = newPolicy(sc, env.Rand("retry"), env.Budget)
	}
	if err != nil {
		return nil, fmt.Errorf("retry policy: %w", err)
	}
	for _, bc := range sc.System.Breakers {
		var b Breaker
		switch {
		case o.breaker != nil && bc.Fleet:
			err = errors.New("scope: fleet shares the reference breaker's edges; this run uses a team's own breaker")
		case o.breaker != nil:
			b, err = o.breaker(env, bc.Config)
		case bc.Fleet && env.Breakers == nil:
			err = errors.New("scope: fleet needs the fleet's store to share the breaker through (Env.Breakers)")
		case bc.Fleet:
			b, err = degrade.NewBreaker(bc.Config, env.Clock, degrade.WithFleet(env.Breakers, env.Process, env.StoreTimeout))
		default:
			b, err = degrade.NewBreaker(bc.Config, env.Clock)
		}
		if err != nil {
			return nil, fmt.Errorf("breaker %q: %w", bc.Config.Name, err)
		}
		sys.Breakers = append(sys.Breakers, NamedBreaker{Name: bc.Config.Name, Breaker: b})
		if rb, ok := b.(*degrade.Breaker); ok {
			fb, err := degrade.NewFallback(rb, drainer, bc.Fallback, env.Clock)
			if err != nil {
				return nil, fmt.Errorf("fallback %q: %w", bc.Config.Name, err)
			}
			sys.Guards[bc.Config.Name] = worker.Guard{Router: fb, Breaker: rb}
		} else {
			sys.Guards[bc.Config.Name] = worker.Guard{Router: breakerRouter{b}, Breaker: b}
		}
	}
	return sys, nil
}

// NewStream returns the named random stream of a run with seed: what
// Env.Rand gives the simulator's components, for a driver that builds
// them elsewhere.
func NewStream(seed uint64, name string) *rand.Rand { return newStream(seed, name) }

// newPolicy is the reference retry policy of sc's configuration.
func newPolicy(sc *scenarios.Scenario, r *rand.Rand, b retry.Booker) (worker.Policy, error) {
	return retry.New(sc.System.Retry, r, retry.WithBooker(b))
}
