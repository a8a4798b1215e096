package alert_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/clock"
	"github.com/faultline/faultline/reference/degrade"
	"github.com/faultline/faultline/reference/failure"
)

var _ = Describe("Alerter properties", func() {
	It("pages every critical fingerprint firing at least once, and a firing one at most once per repeat interval, whatever the failures, breaker transitions, sink errors and clock steps", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			timing := alert.Timing{GroupWait: 10 * s, GroupInterval: mn, RepeatInterval: 10 * mn}
			clk := clock.NewVirtual(t0)
			sink := &recordingSink{clk: clk}
			mode := 0 // 0 ok, 1 500, 2 429 with Retry-After, 3 403
			sink.answer = func(alert.Notification) error {
				switch mode {
				case 1:
					return &failure.HTTPError{Code: 500}
				case 2:
					return &failure.HTTPError{Code: 429, Header: http.Header{"Retry-After": {"20"}}}
				case 3:
					return &failure.HTTPError{Code: 403}
				}
				return nil
			}
			capacity := rapid.IntRange(1, 5).Draw(t, "capacity")
			a, err := alert.New(alert.Config{
				Receivers:       []alert.Receiver{{Name: "pager", Sink: sink}},
				DefaultReceiver: "pager",
				Timing:          timing,
				DedupWindow:     2 * mn,
				Outbox:          alert.OutboxConfig{Capacity: capacity, HeldRetry: mn, FailoverAfter: mn},
				Redactor:        maskRedactor{},
			}, clk, rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 7)))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			var trail []string
			logf := func(format string, args ...any) { trail = append(trail, fmt.Sprintf(format, args...)) }
			critical := map[string]bool{}
			breakerState := degrade.Closed
			steps := rapid.IntRange(1, 120).Draw(t, "steps")
			for i := range steps {
				switch rapid.IntRange(0, 4).Draw(t, fmt.Sprint("op", i)) {
				case 4:
					to := rapid.SampledFrom([]degrade.State{degrade.Open, degrade.HalfOpen, degrade.Closed}).Draw(t, fmt.Sprint("breaker", i))
					logf("%v: breaker gw -> %v", clk.Now().Sub(t0), to)
					a.BreakerChanged(degrade.Transition{Breaker: "gw", From: breakerState, To: to})
					breakerState = to
				case 0, 1:
					task := rapid.SampledFrom([]string{"charge", "refund", "email"}).Draw(t, fmt.Sprint("task", i))
					dep := rapid.SampledFrom([]string{"gw", "smtp"}).Draw(t, fmt.Sprint("dep", i))
					sev := rapid.SampledFrom([]classify.Severity{classify.Low, classify.Medium, classify.High}).Draw(t, fmt.Sprint("sev", i))
					class := classify.Transient
					if sev == classify.High {
						class = classify.Critical
						critical[fp(task, "critical", dep)] = true
					}
					logf("%v: %s/%s %v", clk.Now().Sub(t0), task, dep, sev)
					a.JobFailed(jobFailure(task, dep, class, sev, fmt.Sprint("j", i)))
				case 2:
					mode = rapid.IntRange(0, 3).Draw(t, fmt.Sprint("mode", i))
					logf("%v: sink mode %d", clk.Now().Sub(t0), mode)
				case 3:
					clk.Advance(time.Duration(rapid.Int64Range(0, int64(15*mn)).Draw(t, fmt.Sprint("step", i))))
				}
			}
			mode = 0
			clk.Advance(48 * time.Hour)

			delivered := map[string]bool{} // fingerprints paged firing
			lastFiring := map[string]time.Duration{}
			lastSeverity := map[string]classify.Severity{}
			for _, d := range sink.deliveries() {
				logf("delivered at %v: #%d attempt %d %v", d.At, d.N.ID, d.N.Attempt, d.fingerprints())
				for _, x := range d.N.Alerts {
					if x.Status == alert.Firing {
						delivered[x.Fingerprint] = true
					}
					if x.Status == alert.Resolved {
						delete(lastFiring, x.Fingerprint)
						delete(lastSeverity, x.Fingerprint)
						continue
					}
					escalated := x.Severity == classify.High && lastSeverity[x.Fingerprint] < classify.High
					lastSeverity[x.Fingerprint] = x.Severity
					if prev, ok := lastFiring[x.Fingerprint]; ok && d.At-prev < timing.RepeatInterval && !escalated {
						t.Fatalf("%s paged at %v and again at %v, within the repeat interval; trail:\n%s", x.Fingerprint, prev, d.At, strings.Join(trail, "\n"))
					}
					lastFiring[x.Fingerprint] = d.At
				}
			}
			for f := range critical {
				if !delivered[f] {
					t.Fatalf("critical %s was never paged firing; pending: %d; trail:\n%s", f, len(a.Pending()), strings.Join(trail, "\n"))
				}
			}
			if p := a.Pending(); len(p) > 0 {
				t.Fatalf("%d notifications still pending after 48h of a healthy sink", len(p))
			}
		})
	})

	It("pages each receiver at most once per fingerprint per repeat interval, whatever the routes (with Continue), secondaries, fallbacks and refusals, and pages every critical fingerprint somewhere", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			names := []string{"pager", "team", "log"}
			clk := clock.NewVirtual(t0)
			sinks := map[string]*recordingSink{}
			modes := map[string]int{} // 0 ok, 1 503, 2 403
			var receivers []alert.Receiver
			for _, name := range names {
				sink := &recordingSink{clk: clk}
				sink.answer = func(alert.Notification) error {
					switch modes[name] {
					case 1:
						return &failure.HTTPError{Code: 503}
					case 2:
						return &failure.HTTPError{Code: 403}
					}
					return nil
				}
				sinks[name] = sink
				others := []string{""}
				for _, o := range names {
					if o != name {
						others = append(others, o)
					}
				}
				receivers = append(receivers, alert.Receiver{Name: name, Sink: sink,
					Secondary: rapid.SampledFrom(others).Draw(t, name+".secondary"),
					Fallback:  rapid.SampledFrom(others).Draw(t, name+".fallback")})
			}
			timing := alert.Timing{GroupWait: 10 * s, GroupInterval: mn, RepeatInterval: 30 * mn}
			minRepeat := timing.RepeatInterval
			var routes []alert.Route
			for i := range rapid.IntRange(0, 5).Draw(t, "routes") {
				r := alert.Route{
					Receiver: rapid.SampledFrom(names).Draw(t, fmt.Sprint("route", i)),
					GroupBy:  rapid.SampledFrom([][]string{nil, {alert.LabelDependency}, {alert.LabelTask}, {alert.LabelAlertName, alert.LabelTask}}).Draw(t, fmt.Sprint("groupBy", i)),
					Timing: alert.Timing{
						GroupWait:      rapid.SampledFrom([]time.Duration{0, 5 * s, 30 * s}).Draw(t, fmt.Sprint("groupWait", i)),
						RepeatInterval: rapid.SampledFrom([]time.Duration{0, 10 * mn, 20 * mn}).Draw(t, fmt.Sprint("repeat", i)),
					},
					Continue: rapid.Bool().Draw(t, fmt.Sprint("continue", i)),
				}
				if rapid.Bool().Draw(t, fmt.Sprint("highOnly", i)) {
					r.Severities = []classify.Severity{classify.High}
				}
				if rapid.Bool().Draw(t, fmt.Sprint("gwOnly", i)) {
					r.Match = alert.Labels{alert.LabelDependency: "gw"}
				}
				if r.Timing.RepeatInterval > 0 {
					minRepeat = min(minRepeat, r.Timing.RepeatInterval)
				}
				routes = append(routes, r)
			}
			a, err := alert.New(alert.Config{
				Receivers:       receivers,
				Routes:          routes,
				DefaultReceiver: rapid.SampledFrom(names).Draw(t, "default"),
				Timing:          timing,
				DedupWindow:     2 * mn,
				Outbox:          alert.OutboxConfig{HeldRetry: mn, FailoverAfter: mn},
				Redactor:        maskRedactor{},
			}, clk, rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 7)))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			var trail []string
			logf := func(format string, args ...any) { trail = append(trail, fmt.Sprintf(format, args...)) }
			critical := map[string]bool{}
			for i := range rapid.IntRange(1, 80).Draw(t, "steps") {
				switch rapid.IntRange(0, 3).Draw(t, fmt.Sprint("op", i)) {
				case 0, 1:
					task := rapid.SampledFrom([]string{"charge", "refund"}).Draw(t, fmt.Sprint("task", i))
					dep := rapid.SampledFrom([]string{"gw", "smtp"}).Draw(t, fmt.Sprint("dep", i))
					sev := rapid.SampledFrom([]classify.Severity{classify.Medium, classify.High}).Draw(t, fmt.Sprint("sev", i))
					class := classify.Transient
					if sev == classify.High {
						class = classify.Critical
						critical[fp(task, "critical", dep)] = true
					}
					logf("%v: %s/%s %v", clk.Now().Sub(t0), task, dep, sev)
					a.JobFailed(jobFailure(task, dep, class, sev, fmt.Sprint("j", i)))
				case 2:
					name := rapid.SampledFrom(names).Draw(t, fmt.Sprint("sink", i))
					modes[name] = rapid.IntRange(0, 2).Draw(t, fmt.Sprint("mode", i))
					logf("%v: sink %s mode %d", clk.Now().Sub(t0), name, modes[name])
				case 3:
					clk.Advance(time.Duration(rapid.Int64Range(0, int64(10*mn)).Draw(t, fmt.Sprint("step", i))))
				}
			}
			clear(modes)
			clk.Advance(48 * time.Hour)

			paged := map[string]bool{}
			for _, name := range names {
				lastFiring := map[string]time.Duration{}
				lastSeverity := map[string]classify.Severity{}
				for _, d := range sinks[name].deliveries() {
					logf("%s took at %v: #%d %v", name, d.At, d.N.ID, d.fingerprints())
					for _, x := range d.N.Alerts {
						if x.Status == alert.Resolved {
							delete(lastFiring, x.Fingerprint)
							delete(lastSeverity, x.Fingerprint)
							continue
						}
						if x.Severity == classify.High {
							paged[x.Fingerprint] = true
						}
						escalated := x.Severity > lastSeverity[x.Fingerprint]
						lastSeverity[x.Fingerprint] = max(x.Severity, lastSeverity[x.Fingerprint])
						if prev, ok := lastFiring[x.Fingerprint]; ok && d.At-prev < minRepeat && !escalated {
							t.Fatalf("%s got %s firing at %v and again at %v, within the repeat interval %v; routes %+v; receivers %+v; trail:\n%s",
								name, x.Fingerprint, prev, d.At, minRepeat, routes, receivers, strings.Join(trail, "\n"))
						}
						lastFiring[x.Fingerprint] = d.At
					}
				}
			}
			for f := range critical {
				if !paged[f] {
					t.Fatalf("critical %s never paged anyone; trail:\n%s", f, strings.Join(trail, "\n"))
				}
			}
			if p := a.Pending(); len(p) > 0 {
				t.Fatalf("%d notifications still pending after 48h of healthy sinks", len(p))
			}
		})
	})
})
