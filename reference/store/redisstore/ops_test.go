package redisstore_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/dlq/dlqtest"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
)

var _ = Describe("redisstore operator extensions", func() {
	for _, ln := range lanes {
		Describe(ln.name, func() {
			// As the conformance suites do (suite_test.go): a miniredis per
			// harness, the process's redis-server shared per spec.
			var shared *redis.Client
			client := func() *redis.Client {
				if ln.name == "on miniredis" {
					return ln.connect()
				}
				if shared == nil {
					shared = ln.connect()
				}
				return shared
			}
			BeforeEach(func() { shared = nil })

			dlqtest.ExerciseOps(func(cfg store.Config) dlqtest.Harness {
				s := streamed(client(), cfg)
				return dlqtest.Harness{Queue: s, DLQ: s, Corrupt: func(id string, raw []byte) {
					GinkgoHelper()
					Expect(s.WriteRaw(context.Background(), id, raw)).To(Succeed())
				}}
			})

			Describe("the error-text copy beside the meta", func() {
				var (
					c   *redis.Client
					s   *redisstore.Store
					ctx context.Context
					ns  string
				)
				BeforeEach(func() {
					ctx = context.Background()
					c = client()
					ns = fmt.Sprintf("etx%d", namespaces.Add(1))
					s = newStore(c, store.Config{Namespace: ns})
				})
				meta := func(id string) string {
					GinkgoHelper()
					v, err := c.HGet(ctx, redisstore.Prefix(ns)+":dlq:etx", id).Result()
					Expect(err).NotTo(HaveOccurred())
					return v
				}
				add := func(id, text string) {
					GinkgoHelper()
					e := deadEntry(id, t0)
					e.History[0].Error = text
					_, err := s.Add(ctx, e, t0)
					Expect(err).NotTo(HaveOccurred())
				}
				list := func(text string) []string {
					GinkgoHelper()
					p, err := s.List(ctx, dlq.Filter{ErrorText: text}, "", 10)
					Expect(err).NotTo(HaveOccurred())
					var ids []string
					for _, e := range p.Entries {
						ids = append(ids, e.ID())
					}
					return ids
				}

				It("is folded by Go, so the script finds non-ASCII text without folding case itself", func() {
					add("fr", "ÉCHEC du Paiement")
					Expect(meta("fr")).To(Equal("=échec du paiement"))
					Expect(list("ÉCHEC")).To(Equal([]string{"fr"}))
				})

				It("is cut at a rune past ErrTextCap bytes, and a match past the cut is still found", func() {
					add("long", strings.Repeat("é", redisstore.ErrTextCap)+"needle")
					m := meta("long")
					Expect(m).To(HavePrefix("~"))
					Expect(len(m)).To(BeNumerically("<=", 1+redisstore.ErrTextCap))
					Expect(strings.ToValidUTF8(m, "?")).To(Equal(m), "cut at a rune boundary")
					Expect(list("NEEDLE")).To(Equal([]string{"long"}))
				})

				It("falls back to the decoded entry for an entry written without one", func() {
					add("old", "Gateway Timeout")
					add("other", "card declined")
					Expect(c.HDel(ctx, redisstore.Prefix(ns)+":dlq:etx", "old", "other").Err()).To(Succeed())
					Expect(list("timeout")).To(Equal([]string{"old"}))
					r, err := s.DeleteMatching(ctx, dlq.Filter{ErrorText: "TIMEOUT"}, "ops", t0.Add(1), false)
					Expect(err).NotTo(HaveOccurred())
					Expect(r.Requeued).To(Equal(1))
				})
			})
		})
	}
})
