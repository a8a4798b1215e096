package sink_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/alert/sink/sinktest"
)

// recorder is a receiver that answers 200 ok and hands every request body
// to the spec.
type recorder struct {
	url    string
	bodies chan []byte
	header chan http.Header
}

// newRecorder starts a recorder, stopped when the spec ends.
func newRecorder() *recorder {
	GinkgoHelper()
	r := &recorder{bodies: make(chan []byte, 16), header: make(chan http.Header, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		defer GinkgoRecover()
		b, err := io.ReadAll(req.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Valid(b)).To(BeTrue(), "not JSON: %s", b)
		r.bodies <- b
		r.header <- req.Header.Clone()
		_, _ = io.WriteString(w, "ok")
	}))
	DeferCleanup(srv.Close)
	r.url = srv.URL + sinktest.SecretPath
	return r
}

// body returns the next request body received.
func (r *recorder) body() []byte {
	GinkgoHelper()
	var b []byte
	Eventually(r.bodies).Should(Receive(&b))
	return b
}

// texts returns every "text" string in a JSON document, in document order,
// so specs can look for content without knowing the block layout.
func texts(doc []byte) []string {
	GinkgoHelper()
	var v any
	Expect(json.Unmarshal(doc, &v)).To(Succeed())
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if s, ok := v[k].(string); ok && k == "text" {
					out = append(out, s)
				} else {
					walk(v[k])
				}
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// allText joins texts(doc).
func allText(doc []byte) string {
	GinkgoHelper()
	return strings.Join(texts(doc), "\n")
}

// ctx is the context of a Send that no spec cancels.
func ctx() context.Context { return context.Background() }
