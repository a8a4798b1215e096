package alert_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/clock"
)

func TestAlert(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Alert Suite")
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// delivery is one notification a recording sink accepted, at a time since t0.
type delivery struct {
	At time.Duration
	N  alert.Notification
}

// recordingSink records what it accepts; answer, if set, decides each Send.
type recordingSink struct {
	clk    clock.Clock
	mu     sync.Mutex
	got    []delivery
	calls  int
	answer func(n alert.Notification) error
}

func (s *recordingSink) Send(_ context.Context, n alert.Notification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.answer != nil {
		if err := s.answer(n); err != nil {
			return err
		}
	}
	s.got = append(s.got, delivery{At: s.clk.Now().Sub(t0), N: n})
	return nil
}

func (s *recordingSink) deliveries() []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery(nil), s.got...)
}

// fingerprints lists the fingerprints and statuses of a delivery, e.g.
// "alertname=job-failed,task=charge,class=critical,dependency=gw:firing".
func (d delivery) fingerprints() []string {
	var out []string
	for _, a := range d.N.Alerts {
		out = append(out, a.Fingerprint+":"+a.Status.String())
	}
	return out
}

// maskRedactor masks the word "secret", enough to see that redaction runs.
type maskRedactor struct{}

func (maskRedactor) String(s string) string { return strings.ReplaceAll(s, "secret", "[REDACTED]") }
func (maskRedactor) Fields(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			v = maskRedactor{}.String(s)
		}
		out[k] = v
	}
	return out
}

// harness is an alerter on a virtual clock with named recording sinks.
type harness struct {
	clk   *clock.Virtual
	a     *alert.Alerter
	sinks map[string]*recordingSink
}

func newHarness(cfg alert.Config, receivers ...string) *harness {
	GinkgoHelper()
	h := &harness{clk: clock.NewVirtual(t0), sinks: map[string]*recordingSink{}}
	if len(receivers) == 0 {
		receivers = []string{"pager"}
	}
	for _, name := range receivers {
		s := &recordingSink{clk: h.clk}
		h.sinks[name] = s
		found := false
		for i := range cfg.Receivers {
			if cfg.Receivers[i].Name == name {
				cfg.Receivers[i].Sink = s
				found = true
			}
		}
		if !found {
			cfg.Receivers = append(cfg.Receivers, alert.Receiver{Name: name, Sink: s})
		}
	}
	if cfg.DefaultReceiver == "" {
		cfg.DefaultReceiver = receivers[0]
	}
	if cfg.Redactor == nil {
		cfg.Redactor = maskRedactor{}
	}
	var err error
	h.a, err = alert.New(cfg, h.clk, rand.New(rand.NewPCG(1, 2)))
	Expect(err).NotTo(HaveOccurred())
	return h
}

// at runs the clock to t0+d.
func (h *harness) at(d time.Duration) { h.clk.RunUntil(t0.Add(d)) }
