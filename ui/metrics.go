package ui

import (
	"context"
	"net/http"
	"time"

	"github.com/faultline/faultline/metrics"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/fleet"
)

// statsTimeout bounds the stats read a scrape of /metrics makes.
const statsTimeout = 5 * time.Second

// The op label of faultline_errors_total for reads (the actions use their
// own names: requeue, delete, restore, quarantine, edit).
const opRead = "read"

// serveMetrics serves /metrics: the project's metric names and labels
// (package metrics, as a drill's --metrics-listen serves them), the DLQ's
// depth by severity and oldest age read from the store at each scrape.
// With tokens it takes a bearer token (Prometheus's
// authorization.credentials); without, it is open, on loopback only.
func (s *server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if len(s.cfg.Tokens) > 0 {
		if _, ok := s.who(r, true); !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="faultline ui"`)
			http.Error(w, "missing or wrong bearer token (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
			return
		}
	}
	s.refreshGauges(r.Context())
	s.metrics.Handler().ServeHTTP(w, r)
}

// refreshGauges sets the DLQ gauges from the store's stats; a failed read
// leaves them as they were and counts an error (op "read").
func (s *server) refreshGauges(ctx context.Context) {
	if s.cfg.Store == nil {
		return // the seed layout: no stats to read
	}
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	st, err := s.cfg.Store.Stats(ctx)
	if err != nil {
		s.metrics.Error(opRead)
		return
	}
	for sev := classify.SeverityNone; sev <= classify.High; sev++ {
		s.metrics.DLQDepth(sev.String(), st.BySeverity[sev.String()])
	}
	var age time.Duration
	if !st.Oldest.IsZero() {
		age = max(s.cfg.Now().Sub(st.Oldest), 0)
	}
	s.metrics.DLQOldestAge(age)
	if sr, ok := s.cfg.Store.(fleet.StatusReader); ok {
		fs, err := sr.ControlStatus(ctx, fleet.DefaultRole)
		if err != nil {
			s.metrics.Error(opRead)
			return
		}
		s.metrics.FleetLeader(fs.Lease.Holder, fs.Lease.Held(s.cfg.Now()), fs.Lease.Term, fs.Backlog)
	}
}

// countErr counts a failed action (a store error, or a refusal: not found,
// changed, wrong status, bad input) under its name.
func (s *server) countErr(action string, err error) {
	if err != nil {
		s.metrics.Error(action)
	}
}

// observe records how long a request took, by its route pattern (never
// its path: an entry's ID is never a label).
func (s *server) observe(r *http.Request, start time.Time) {
	op := r.Pattern
	if op == "" {
		op = "refused"
	}
	s.metrics.Latency(op, time.Since(start))
}

// newMetrics returns cfg's metrics, or a new set labelled with the
// namespace.
func newMetrics(cfg Config) *metrics.Set {
	if cfg.Metrics != nil {
		return cfg.Metrics
	}
	return metrics.New(metrics.Labels{Namespace: cfg.Namespace})
}
