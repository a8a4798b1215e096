package faults

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

// GatewayTimeout is a dependency that does not answer in time: the caller
// waits After and gets a *failure.TimeoutError. Its true class is
// Indeterminate: the request may have gone through (Charged says whether it
// did). The default classifier agrees on the payment gateway; for other
// dependencies it says Transient, not knowing whether they are idempotent.
type GatewayTimeout struct {
	// Op names what timed out in the error, e.g. "POST /v1/charges"; ""
	// means the dependency's name.
	Op string
	// After is how long the caller waits; 0 means DefaultTimeoutAfter.
	After time.Duration
	// ChargedProbability is the chance that the request took effect
	// although it timed out, in [0,1] (default 0).
	ChargedProbability float64
}

// Name returns "gateway-timeout".
func (GatewayTimeout) Name() string { return "gateway-timeout" }

// Class returns Indeterminate.
func (GatewayTimeout) Class() classify.Class { return classify.Indeterminate }

// Targets returns Dependency.
func (GatewayTimeout) Targets() []TargetKind { return []TargetKind{Dependency} }

// WithDefaults returns the model with its zero parameters set to their
// defaults (Op stays "": it depends on the target).
func (m GatewayTimeout) WithDefaults() GatewayTimeout {
	if m.After == 0 {
		m.After = DefaultTimeoutAfter
	}
	return m
}

// Validate checks After and ChargedProbability.
func (m GatewayTimeout) Validate() error {
	return joinErrs(checkDuration("after", m.After), checkProbability("chargedProbability", m.ChargedProbability))
}

// Apply returns the timeout after its wait, Charged drawn from r.
func (m GatewayTimeout) Apply(c Call, r *rand.Rand) Effect {
	return m.bind(binding{}).apply(c, orFallback(r))
}

func (m GatewayTimeout) bind(b binding) applier {
	m = m.WithDefaults()
	op := m.Op
	if op == "" {
		op = b.target.Name
	}
	if op == "" {
		op = "request"
	}
	m.After = max(m.After, 0)
	err := &failure.TimeoutError{Op: op, After: m.After}
	return &charged{eff: Effect{Err: err, Latency: m.After, Class: classify.Indeterminate}, p: m.ChargedProbability}
}

// ---------------------------------------------------------------------------

// The Latency distributions, as Latency.Distribution names them.
const (
	// LatencyConstant always adds Mean.
	LatencyConstant = "constant"
	// LatencyUniform adds a latency drawn uniformly from [Min, Max].
	LatencyUniform = "uniform"
	// LatencyExponential adds an exponential latency of mean Mean.
	LatencyExponential = "exponential"
	// LatencyNormal adds a normal latency of mean Mean and deviation StdDev.
	LatencyNormal = "normal"
	// LatencyLogNormal adds a lognormal latency of mean Mean and deviation
	// StdDev: mostly near the mean, with a long tail.
	LatencyLogNormal = "lognormal"
)

// distributions lists the Latency distributions, in catalogue order.
var distributions = []string{LatencyConstant, LatencyUniform, LatencyExponential, LatencyNormal, LatencyLogNormal}

// Latency slows calls down without failing them: each hit call takes an
// extra latency drawn from a distribution, clamped to [Min, Max] (Max 0: no
// upper bound) and to ≥ 0, rounded to whole milliseconds.
type Latency struct {
	// Distribution is "constant" (the default: always Mean), "uniform"
	// (between Min and Max), "exponential" (mean Mean), "normal" (Mean,
	// StdDev) or "lognormal" (of mean Mean and standard deviation StdDev: a
	// long tail).
	Distribution string
	// Mean is the distribution's mean; 0 means DefaultLatencyMean.
	Mean time.Duration
	// Min is the least latency drawn (uniform: the low end).
	Min time.Duration
	// Max is the greatest latency drawn; 0 means no bound, except for
	// uniform, where 0 means 2×Mean.
	Max time.Duration
	// StdDev is the standard deviation of normal and lognormal; 0 means
	// Mean/4 (normal) or Mean/2 (lognormal).
	StdDev time.Duration
}

// Name returns "latency".
func (Latency) Name() string { return "latency" }

// Class returns classify.None: latency fails nothing.
func (Latency) Class() classify.Class { return classify.None }

// Targets returns Dependency, Store and DLQStore.
func (Latency) Targets() []TargetKind { return []TargetKind{Dependency, Store, DLQStore} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m Latency) WithDefaults() Latency {
	if m.Distribution == "" {
		m.Distribution = LatencyConstant
	}
	if m.Mean == 0 {
		m.Mean = DefaultLatencyMean
	}
	switch m.Distribution {
	case LatencyUniform:
		if m.Max == 0 {
			m.Max = 2 * m.Mean
		}
	case LatencyNormal:
		if m.StdDev == 0 {
			m.StdDev = m.Mean / 4
		}
	case LatencyLogNormal:
		if m.StdDev == 0 {
			m.StdDev = m.Mean / 2
		}
	}
	return m
}

// Validate checks the distribution's name and the durations, and that Max
// is not below Min.
func (m Latency) Validate() error {
	var errs []error
	if m.Distribution != "" && !slices.Contains(distributions, m.Distribution) {
		ne := newNameError("distribution", m.Distribution, distributions)
		hint := "one of " + strings.Join(distributions, ", ")
		if ne.Suggestion != "" {
			hint = fmt.Sprintf("did you mean %q?", ne.Suggestion)
		}
		errs = append(errs, &FieldError{Field: "distribution", Msg: fmt.Sprintf("unknown distribution %q", m.Distribution), Hint: hint})
	}
	errs = append(errs, checkDuration("mean", m.Mean), checkDuration("min", m.Min), checkDuration("max", m.Max), checkDuration("stdDev", m.StdDev))
	if d := m.WithDefaults(); d.Max > 0 && d.Max < d.Min {
		errs = append(errs, &FieldError{Field: "max", Msg: fmt.Sprintf("must be ≥ min (%s), got %s", d.Min, d.Max)})
	}
	return joinErrs(errs...)
}

// Apply returns no error and a latency drawn from r.
func (m Latency) Apply(c Call, r *rand.Rand) Effect {
	return m.bind(binding{}).apply(c, orFallback(r))
}

func (m Latency) bind(binding) applier {
	m = m.WithDefaults()
	ms := func(d time.Duration) float64 { return float64(max(d, 0)) / float64(time.Millisecond) }
	l := &latencyDraw{dist: m.Distribution, mean: ms(m.Mean), sd: ms(m.StdDev), lo: ms(m.Min), hi: ms(m.Max)}
	if m.Max <= 0 {
		l.hi = maxLatencyMs
	}
	if l.hi < l.lo {
		l.hi = l.lo
	}
	if l.dist == LatencyLogNormal && l.mean > 0 {
		l.sigma = math.Sqrt(math.Log1p(l.sd * l.sd / (l.mean * l.mean)))
		l.mu = math.Log(l.mean) - l.sigma*l.sigma/2
	}
	return l
}

// maxLatencyMs bounds a drawn latency so that it converts to a Duration.
const maxLatencyMs = float64(math.MaxInt64/int64(time.Millisecond)) / 2

type latencyDraw struct {
	dist                        string
	mean, sd, lo, hi, mu, sigma float64 // in ms
}

func (l *latencyDraw) apply(_ Call, r *rand.Rand) Effect {
	var ms float64
	switch l.dist {
	case LatencyUniform:
		lo, hi := math.Round(l.lo), math.Round(l.hi)
		ms = lo + float64(r.Int64N(int64(hi-lo)+1))
	case LatencyExponential:
		ms = r.ExpFloat64() * l.mean
	case LatencyNormal:
		ms = l.mean + r.NormFloat64()*l.sd
	case LatencyLogNormal:
		ms = math.Exp(l.mu + l.sigma*r.NormFloat64())
	default:
		ms = l.mean
	}
	if l.dist != LatencyConstant {
		ms = min(max(ms, l.lo), l.hi)
	}
	ms = math.Round(min(max(ms, 0), maxLatencyMs))
	if math.IsNaN(ms) {
		ms = 0
	}
	return Effect{Latency: time.Duration(ms) * time.Millisecond}
}

// ---------------------------------------------------------------------------

// SlowStore is the queue store or the DLQ store answering slowly: every call
// takes Latency more, and succeeds.
type SlowStore struct {
	// Latency is the added time per call; 0 means DefaultSlowStoreLatency.
	Latency time.Duration
}

// Name returns "slow-store".
func (SlowStore) Name() string { return "slow-store" }

// Class returns classify.None.
func (SlowStore) Class() classify.Class { return classify.None }

// Targets returns Store and DLQStore.
func (SlowStore) Targets() []TargetKind { return []TargetKind{Store, DLQStore} }

// WithDefaults returns the model with its zero parameters set to their
// defaults.
func (m SlowStore) WithDefaults() SlowStore {
	if m.Latency == 0 {
		m.Latency = DefaultSlowStoreLatency
	}
	return m
}

// Validate checks Latency.
func (m SlowStore) Validate() error { return checkDuration("latency", m.Latency) }

// Apply returns the latency.
func (m SlowStore) Apply(c Call, r *rand.Rand) Effect { return m.bind(binding{}).apply(c, r) }

func (m SlowStore) bind(binding) applier {
	return &fixed{Effect{Latency: max(m.WithDefaults().Latency, 0)}}
}
