package faults_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/faultline/faultline/faults"
)

// FuzzSchedule checks that no schedule makes Validate, ActiveAt or Windows
// panic, and that a valid schedule's windows agree with ActiveAt at their
// edges. Run it longer with:
//
//	go test ./faults -run '^$' -fuzz FuzzSchedule -fuzztime 60s
func FuzzSchedule(f *testing.F) {
	f.Add(uint64(1), "f", int64(0), int64(0), int64(0), 0.0, int64(0), int64(0), 0, 0.0, int64(0))
	f.Add(uint64(7), "gw", int64(1000), int64(60000), int64(10000), 0.3, int64(2000), int64(500), 3, 0.5, int64(12345))
	f.Add(uint64(0), "", int64(-1), int64(-5), int64(-3), 1.5, int64(9e18), int64(-9e18), -1, 2.0, int64(-9e18))
	f.Add(uint64(3), "x", int64(0), int64(0), int64(1), 1.0, int64(0), int64(9e12), 0, 0.0, int64(9e18))
	f.Fuzz(func(t *testing.T, seed uint64, name string, from, until, period int64, duty float64, jitter, phase int64, first int, p float64, at int64) {
		s := faults.Schedule{From: time.Duration(from) * time.Millisecond, Until: time.Duration(until) * time.Millisecond, FirstCalls: first, Probability: p}
		if period != 0 || duty != 0 {
			s.Every = &faults.Periodic{Period: time.Duration(period) * time.Millisecond, Duty: duty, Jitter: time.Duration(jitter) * time.Millisecond, Phase: time.Duration(phase) * time.Millisecond}
		}
		valid := s.Validate() == nil
		if faults.ScheduleValid(s) != valid {
			t.Fatalf("the cheap check says valid=%v, Validate says %v", !valid, s.Validate())
		}
		s.ActiveAt(seed, name, time.Duration(at))
		ws, _ := s.Windows(seed, name, time.Duration(at), 64)
		if !valid {
			if len(ws) > 0 {
				t.Fatalf("an invalid schedule has windows")
			}
			return
		}
		for _, w := range ws {
			if w.From >= w.Until {
				t.Fatalf("empty window %v", w)
			}
			if !s.ActiveAt(seed, name, w.From) || !s.ActiveAt(seed, name, w.Until-1) {
				t.Fatalf("window %v not active inside", w)
			}
			if w.From > 0 && s.ActiveAt(seed, name, w.From-1) && w.From%time.Millisecond == 0 {
				t.Fatalf("window %v active just before", w)
			}
		}
		in, err := faults.NewInjector(seed, []faults.Fault{{Name: name + "x", Target: faults.Target{Kind: faults.Dependency}, Model: faults.Outage{}, Schedule: s}})
		if err != nil {
			t.Fatalf("a valid schedule is refused: %v", err)
		}
		e := in.Call(faults.Target{Kind: faults.Dependency, Name: "d"}, faults.Call{At: time.Duration(at)})
		if (e.Err != nil) && !s.ActiveAt(seed, name+"x", time.Duration(at)) {
			t.Fatalf("hit outside the time conditions")
		}
	})
}

// FuzzValidate checks that no model parameters make New, Validate, Apply or
// NewInjector panic, and that a valid model injects its class.
func FuzzValidate(f *testing.F) {
	f.Add("gateway-timeout", int64(0), int64(0), int64(0), 0.0, 0, "")
	f.Add("latency", int64(-1), int64(5), int64(1), 0.5, 0, "normal")
	f.Add("latency", int64(9e18), int64(9e18), int64(-9e18), 0.5, 0, "lognormal")
	f.Add("flapping", int64(1), int64(3), int64(0), 1.5, 503, "")
	f.Add("card-declined", int64(0), int64(0), int64(0), 0.0, 0, "try_again_later")
	f.Add("sink-outage", int64(0), int64(0), int64(1), 0.0, 429, "")
	f.Fuzz(checkModel)
}

// checkModel is FuzzValidate's body.
func checkModel(t *testing.T, name string, d1, d2, d3 int64, x float64, code int, s string) {
	base, err := faults.New(name)
	if err != nil {
		return
	}
	dur := func(v int64) time.Duration { return time.Duration(v) }
	var m faults.Model
	switch base.(type) {
	case faults.GatewayTimeout:
		m = faults.GatewayTimeout{Op: s, After: dur(d1), ChargedProbability: x}
	case faults.Latency:
		m = faults.Latency{Distribution: s, Mean: dur(d1), Min: dur(d2), Max: dur(d3), StdDev: dur(d1 - d2)}
	case faults.HTTPStatus:
		m = faults.HTTPStatus{Code: code, Body: s, RetryAfter: dur(d1)}
	case faults.AuthFailure:
		m = faults.AuthFailure{Code: code, Body: s}
	case faults.CardDeclined:
		m = faults.CardDeclined{Codes: []string{s, s + "_2"}}
	case faults.RateLimit:
		m = faults.RateLimit{RetryAfter: dur(d1)}
	case faults.Indeterminate5xx:
		m = faults.Indeterminate5xx{Code: code, ChargedProbability: x, NotCharged: d1 < 0}
	case faults.Flapping:
		m = faults.Flapping{Period: dur(d1), Duty: x, Jitter: dur(d2), Code: code}
	case faults.Outage:
		m = faults.Outage{Code: code}
	case faults.SinkOutage:
		m = faults.SinkOutage{Code: code, RetryAfter: dur(d1)}
	case faults.WorkerCrash:
		m = faults.WorkerCrash{RestartAfter: dur(d1)}
	case faults.WorkerStall:
		m = faults.WorkerStall{For: dur(d1)}
	case faults.SlowStore:
		m = faults.SlowStore{Latency: dur(d1)}
	default:
		m = base
	}
	valid := m.Validate() == nil
	if fl, ok := m.(faults.Flapping); ok && faults.FlappingValid(fl) != valid {
		t.Fatalf("the cheap check says valid=%v, Validate says %v", !valid, m.Validate())
	}
	e := m.Apply(faults.Call{At: dur(d3)}, rand.New(rand.NewPCG(uint64(d1), uint64(d2))))
	if e.Latency < 0 {
		t.Fatalf("negative latency %s", e.Latency)
	}
	in, err := faults.NewInjector(1, []faults.Fault{{Name: "f", Target: faults.Target{Kind: m.Targets()[0]}, Model: m}})
	if (err == nil) != valid {
		t.Fatalf("NewInjector error %v, Validate valid=%v", err, valid)
	}
	if !valid {
		return
	}
	e = in.Call(faults.Target{Kind: m.Targets()[0]}, faults.Call{At: dur(d3)})
	if e.Err != nil && e.Class == 0 {
		t.Fatalf("an error without a class: %v", e.Err)
	}
	if e.Latency < 0 || e.Latency%time.Millisecond != 0 {
		t.Fatalf("latency %s is not whole non-negative milliseconds", e.Latency)
	}
}
