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
})
