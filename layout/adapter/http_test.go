package adapter_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/adapter"
)

// recorder is an enqueue endpoint that keeps what it was sent.
type recorder struct {
	mu      sync.Mutex
	bodies  []string
	headers []http.Header
	status  int
	answer  string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, string(b))
	r.headers = append(r.headers, req.Header.Clone())
	status, answer := r.status, r.answer
	r.mu.Unlock()
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

// serve starts srv on a loopback port for the running spec.
func serve(h http.Handler) *httptest.Server {
	GinkgoHelper()
	srv := httptest.NewServer(h)
	DeferCleanup(srv.Close)
	Expect(srv.URL).To(HavePrefix("http://127.0.0.1:"))
	return srv
}

var _ = Describe("HTTP adapters", func() {
	ctx := context.Background()

	Describe("inject", func() {
		var (
			rec *recorder
			in  adapter.Injector
		)
		BeforeEach(func() {
			rec = &recorder{status: http.StatusAccepted}
			srv := serve(rec)
			var err error
			in, err = adapter.NewInjector(layout.Inject{HTTP: &layout.HTTPInject{URL: srv.URL + "/enqueue/{namespace}",
				Header: map[string]string{"Authorization": "Bearer {namespace}-token"}}}, adapter.Env{Expand: expandNS("d2")})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(in.Close)
		})

		It("POSTs each job's document as JSON with the expanded headers", func() {
			injectAll(ctx, in, seedJobs)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			Expect(rec.bodies).To(HaveLen(3), "two jobs with the same payload stay two jobs")
			Expect(rec.bodies[1]).To(MatchJSON(`{"id": "charge-2", "task": "charge", "payload": {"amount": 200}, "idempotency_key": ""}`))
			Expect(rec.bodies[2]).To(MatchJSON(`{"id": "charge-3", "task": "charge", "payload": {"amount": 200}, "idempotency_key": ""}`))
			Expect(rec.headers[0].Get("Content-Type")).To(Equal("application/json"))
			Expect(rec.headers[0].Get("Authorization")).To(Equal("Bearer d2-token"))
		})

		It("fails on an answer other than 2xx, naming the status and the start of the body", func() {
			rec.status, rec.answer = http.StatusServiceUnavailable, "queue full "+strings.Repeat("x", 1000)
			err := in.Inject(ctx, seedJobs[0])
			Expect(err).To(MatchError(adapter.ErrStatus))
			Expect(err).To(MatchError(ContainSubstring("503")))
			Expect(err).To(MatchError(ContainSubstring("/enqueue/d2")))
			Expect(err).To(MatchError(ContainSubstring("queue full")))
			var se *adapter.StatusError
			Expect(errors.As(err, &se)).To(BeTrue())
			Expect(se.Status).To(Equal(http.StatusServiceUnavailable))
			Expect(len(se.Body)).To(BeNumerically("<=", 200+len("…")), "an excerpt of the body")
		})

		It("fails when nothing listens, naming the job", func() {
			srv := httptest.NewServer(http.NotFoundHandler())
			srv.Close()
			in, err := adapter.NewInjector(layout.Inject{HTTP: &layout.HTTPInject{URL: srv.URL}}, adapter.Env{})
			Expect(err).NotTo(HaveOccurred())
			Expect(in.Inject(ctx, seedJobs[0])).To(MatchError(ContainSubstring("charge-1")))
		})
	})

	Describe("read", func() {
		fields := layout.Fields{ID: "job.id", Error: "error", Status: "status", Inactive: []string{"gone"}}
		reader := func(body string, status int) adapter.Reader {
			GinkgoHelper()
			srv := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				Expect(r.Method).To(Equal(http.MethodGet))
				Expect(r.Header.Get("X-Token")).To(Equal("t-d3"))
				w.WriteHeader(status)
				_, _ = io.WriteString(w, body)
			}))
			r, err := adapter.NewReader(layout.DLQ{HTTP: &layout.HTTPRead{URL: srv.URL + "/dlq", Header: map[string]string{"X-Token": "t-{namespace}"}},
				Fields: fields}, adapter.Env{Expand: expandNS("d3")})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(r.Close)
			return r
		}
		want := []layout.Entry{
			{Source: "GET[0]", JobID: "a", Error: "boom"},
			{Source: "GET[1]", JobID: "b", Status: "gone", Inactive: true},
		}

		It("reads a JSON array", func() {
			Expect(read(ctx, reader(`[{"job": {"id": "a"}, "error": "boom"},
				{"job": {"id": "b"}, "status": "gone"}]`, 200))).To(Equal(want))
		})

		It("reads an object's entries array", func() {
			Expect(read(ctx, reader(`{"total": 2, "entries": [{"job": {"id": "a"}, "error": "boom"}, {"job": {"id": "b"}, "status": "gone"}]}`, 200))).To(Equal(want))
		})

		It("reads JSON lines, keeping a line that is not JSON as corrupt", func() {
			es := read(ctx, reader("{\"job\": {\"id\": \"a\"}, \"error\": \"boom\"}\n\n{\"job\": {\"id\": \"b\"}, \"status\": \"gone\"}\nnot json\n", 200))
			Expect(es).To(Equal(append(want, layout.Entry{Source: "GET[2]", Corrupt: "not JSON"})))
		})

		It("reads one pretty-printed object as one entry, and an empty body as none", func() {
			Expect(read(ctx, reader("{\n  \"job\": {\"id\": \"a\"},\n  \"error\": \"boom\"\n}\n", 200))).To(Equal(want[:1]))
			Expect(read(ctx, reader("  \n", 200))).To(BeEmpty())
		})

		It("fails on an answer other than 2xx", func() {
			_, err := reader("nope", http.StatusNotFound).Read(ctx)
			Expect(err).To(MatchError(adapter.ErrStatus))
			Expect(err).To(MatchError(ContainSubstring("GET http://127.0.0.1:")))
			Expect(err).To(MatchError(ContainSubstring("404")))
		})
	})
})
