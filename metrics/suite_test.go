package metrics_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/faultline/faultline/metrics"
)

func TestMetrics(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "metrics")
}

// serve serves set on a free loopback port until the spec ends and
// returns the server.
func serve(set *metrics.Set) *metrics.Server {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := metrics.Serve(ctx, "127.0.0.1:0", set.Handler(), false)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		cancel()
		Expect(srv.Wait()).To(Succeed())
	})
	return srv
}

// scrape GETs url over loopback HTTP and parses the text exposition.
func scrape(url string) map[string]*dto.MetricFamily {
	GinkgoHelper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred(), "parse:\n%s", body)
	return fams
}

// value returns the value of name's series with exactly the given
// non-constant labels, and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if !sameLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func sameLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if lp.GetName() == "namespace" || lp.GetName() == "scenario" {
			continue
		}
		n++
		if v, ok := want[lp.GetName()]; !ok || v != lp.GetValue() {
			return false
		}
	}
	return n == len(want)
}

// series counts name's series.
func series(fams map[string]*dto.MetricFamily, name string) int {
	if f, ok := fams[name]; ok {
		return len(f.GetMetric())
	}
	return 0
}

// sample returns the value of name's series with exactly the given
// non-constant labels, failing the spec if there is none.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	GinkgoHelper()
	v, ok := value(fams, name, labels)
	Expect(ok).To(BeTrue(), "no series %s%v", name, labels)
	return v
}
