package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/job"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
	"github.com/faultline/faultline/ui"
)

// benchEntries is how many entries the list benchmarks' DLQs hold, and
// benchBudget the time a list page must be served in.
const (
	benchEntries = 100_000
	benchBudget  = 100 * time.Millisecond
)

// BenchmarkListPage serves the list page (50 entries, the default page
// size) of a 100,000-entry DLQ on a real redis-server, through the whole
// handler (routing, security, the store, the template): faultline's layout
// (the first page, a page filtered by severity, a page deep in the list)
// and the seed layout (the first page, a page filtered by severity). Each
// fails when a page takes more than 100 ms on average:
//
//	go test ./ui -run '^$' -bench ListPage -benchtime 50x
func BenchmarkListPage(b *testing.B) {
	s, err := redistest.Shared()
	if err != nil {
		b.Skip("redis-server: ", err)
	}
	ctx := context.Background()
	c := redisstore.NewClient(fmt.Sprintf("redis://%s/14", s.Addr))
	defer c.Close()
	if err := c.FlushDB(ctx).Err(); err != nil {
		b.Fatal(err)
	}

	// faultline's layout: AddBatch, 1,000 at a time.
	st, err := redisstore.New(c, store.Config{Namespace: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now().Add(-200 * time.Hour)
	sevs := []classify.Severity{classify.Low, classify.Medium, classify.High}
	for i := 0; i < benchEntries; i += 1000 {
		batch := make([]dlq.Entry, 0, 1000)
		for j := i; j < i+1000; j++ {
			at := t0.Add(time.Duration(j) * time.Second)
			v := classify.Classification{Class: classify.Transient, Severity: sevs[j%3], Rule: "bench"}
			batch = append(batch, dlq.Entry{
				Job:           job.Job{ID: fmt.Sprintf("job-%06d", j), Task: "charge", Queue: "charges", Payload: []byte(`{"amount":100}`), Attempts: 3, EnqueuedAt: at},
				History:       []dlq.Failure{{At: at, Attempt: 3, Error: "http 502 from gateway", ErrorType: "*failure.HTTPError", Verdict: v}},
				FirstFailedAt: at, LastFailedAt: at, Verdict: v, Reason: "transient",
			})
		}
		if _, err := st.AddBatch(ctx, batch, t0.Add(time.Duration(i)*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	fl, err := ui.New(ui.Config{Store: st, Namespace: "bench", Listen: "127.0.0.1:8080"})
	if err != nil {
		b.Fatal(err)
	}

	// The seed layout: the tutorial's lists, LPUSHed 1,000 at a time.
	for i := 0; i < benchEntries; i += 1000 {
		vals := make([]any, 1000)
		for j := range vals {
			sev := []string{"LOW", "MEDIUM", "HIGH"}[(i+j)%3]
			vals[j] = fmt.Sprintf(`{"job": {"task": "t%d", "amount": 100}, "error": "Gateway timeout", "type": "TimeoutError", "severity": %q, "retries": 3, "timestamp": "2026-01-02T03:04:05"}`, i+j, sev)
		}
		if err := c.LPush(ctx, "bench:dlq:low", vals...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	sd, err := ui.New(ui.Config{Seed: &ui.SeedConfig{Client: c, Prefix: "bench:"}, Listen: "127.0.0.1:8080"})
	if err != nil {
		b.Fatal(err)
	}

	// A cursor deep in faultline's list: the 1,000th page's.
	deep := ""
	for range 1000 {
		p, err := st.List(ctx, dlq.Filter{}, deep, 50)
		if err != nil || p.Next == "" {
			b.Fatal("a deep cursor: ", err)
		}
		deep = p.Next
	}

	for _, bc := range []struct {
		name string
		h    http.Handler
		path string
	}{
		{"faultline/first", fl, "/entries"},
		{"faultline/severity", fl, "/entries?severity=high"},
		{"faultline/deep", fl, "/entries?cursor=" + deep},
		{"seed/first", sd, "/"},
		{"seed/severity", sd, "/?severity=high"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, bc.path, nil)
				req.Host = "127.0.0.1:8080"
				rec := httptest.NewRecorder()
				bc.h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", bc.path, rec.Code, rec.Body.String())
				}
			}
			per := time.Since(start) / time.Duration(b.N)
			b.ReportMetric(float64(per.Microseconds())/1000, "ms/page")
			if per > benchBudget {
				b.Errorf("%s: %v a page, over the %v budget", bc.path, per, benchBudget)
			}
		})
	}
}
