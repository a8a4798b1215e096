// Package fleettest holds the conformance specs of a store that keeps a
// fleet's leader and relay log (fleet.LeaderStore, fleet.Log): the memory
// types of package fleet and the Redis store run them in their suites, so
// both keep the same semantics.
package fleettest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/fleet"
)

// t0 is the claims' clock origin.
var t0 = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)

// Harness is a fresh, empty store: its leases, and its log fenced by them.
type Harness struct {
	Leader fleet.LeaderStore
	Log    fleet.Log
}

// Exercise declares the conformance specs. newHarness returns a fresh,
// empty store for each spec (and for each case of the property).
func Exercise(newHarness func() Harness) {
	Describe("fleet.LeaderStore and fleet.Log conformance", func() {
		ctx := context.Background()
		var h Harness
		BeforeEach(func() { h = newHarness() })
		claim := func(holder string, at time.Duration) fleet.Lease {
			GinkgoHelper()
			l, err := h.Leader.ClaimLeader(ctx, "control", holder, t0.Add(at), 10*time.Second)
			Expect(err).NotTo(HaveOccurred())
			return l
		}

		It("gives a free role to the first claimant, under term 1, until its TTL", func() {
			l, err := h.Leader.Leader(ctx, "control")
			Expect(err).NotTo(HaveOccurred())
			Expect(l).To(Equal(fleet.Lease{}), "never claimed")
			Expect(claim("w1", 0)).To(Equal(fleet.Lease{Holder: "w1", Term: 1, Until: t0.Add(10 * time.Second)}))
			l, err = h.Leader.Leader(ctx, "control")
			Expect(err).NotTo(HaveOccurred())
			Expect(l.Holder).To(Equal("w1"))
			Expect(l.Until.Equal(t0.Add(10 * time.Second))).To(BeTrue())
		})

		It("keeps a held lease from another claimant, and renews it for its holder under the same term", func() {
			claim("w1", 0)
			got := claim("w2", 9*time.Second)
			Expect(got.Holder).To(Equal("w1"), "held until +10s")
			Expect(got.Term).To(BeEquivalentTo(1))
			renewed := claim("w1", 9*time.Second)
			Expect(renewed.Term).To(BeEquivalentTo(1), "a renewal is not a new term")
			Expect(renewed.Until.Equal(t0.Add(19 * time.Second))).To(BeTrue())
			Expect(claim("w2", 18*time.Second).Holder).To(Equal("w1"))
		})

		It("passes a lease that ran out to the next claimant under a new term", func() {
			claim("w1", 0)
			got := claim("w2", 10*time.Second)
			Expect(got.Holder).To(Equal("w2"), "run out at +10s exactly")
			Expect(got.Term).To(BeEquivalentTo(2))
			Expect(claim("w1", 11*time.Second).Holder).To(Equal("w2"))
			back := claim("w1", 21*time.Second)
			Expect(back.Holder).To(Equal("w1"))
			Expect(back.Term).To(BeEquivalentTo(3))
		})

		It("frees a resigned lease at once, keeping its term, and ignores a resignation by another", func() {
			claim("w1", 0)
			Expect(h.Leader.ResignLeader(ctx, "control", "w2")).To(Succeed())
			Expect(claim("w2", time.Second).Holder).To(Equal("w1"), "w2 never held it")
			Expect(h.Leader.ResignLeader(ctx, "control", "w1")).To(Succeed())
			l, err := h.Leader.Leader(ctx, "control")
			Expect(err).NotTo(HaveOccurred())
			Expect(l.Holder).To(BeEmpty())
			Expect(l.Term).To(BeEquivalentTo(1))
			got := claim("w2", 2*time.Second)
			Expect(got.Holder).To(Equal("w2"))
			Expect(got.Term).To(BeEquivalentTo(2))
			Expect(h.Leader.ResignLeader(ctx, "control", "w2")).To(Succeed())
			Expect(claim("w2", 3*time.Second).Term).To(BeEquivalentTo(3), "after a resignation even the same holder leads under a new term")
		})

		It("keeps roles apart", func() {
			claim("w1", 0)
			l, err := h.Leader.ClaimLeader(ctx, "other", "w2", t0, time.Second)
			Expect(err).NotTo(HaveOccurred())
			Expect(l.Holder).To(Equal("w2"))
		})

		It("lets exactly one of eight claimants at once lead", func() {
			var wg sync.WaitGroup
			won := make(chan string, 8)
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					l, err := h.Leader.ClaimLeader(ctx, "control", fmt.Sprintf("w%d", i+1), t0, 10*time.Second)
					Expect(err).NotTo(HaveOccurred())
					won <- l.Holder
				}()
			}
			wg.Wait()
			close(won)
			seen := map[string]bool{}
			for h := range won {
				seen[h] = true
			}
			Expect(seen).To(HaveLen(1), "every claimant saw the one leader")
			l, err := h.Leader.Leader(ctx, "control")
			Expect(err).NotTo(HaveOccurred())
			Expect(l.Term).To(BeEquivalentTo(1))
		})

		It("claims and resigns as fleet.Claim says (property)", func() {
			rapid.Check(GinkgoT(), func(t *rapid.T) {
				hh := newHarness()
				var model fleet.Lease
				at := time.Duration(0)
				for i := range rapid.IntRange(1, 30).Draw(t, "steps") {
					holder := rapid.SampledFrom([]string{"w1", "w2", "w3"}).Draw(t, fmt.Sprintf("holder%d", i))
					at += time.Duration(rapid.IntRange(0, 8000).Draw(t, fmt.Sprintf("ms%d", i))) * time.Millisecond
					if rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("resign%d", i)) == 0 {
						if err := hh.Leader.ResignLeader(ctx, "control", holder); err != nil {
							t.Fatalf("resign: %v", err)
						}
						if model.Holder == holder {
							model = fleet.Lease{Term: model.Term}
						}
						continue
					}
					ttl := time.Duration(rapid.IntRange(1, 10).Draw(t, fmt.Sprintf("ttl%d", i))) * time.Second
					got, err := hh.Leader.ClaimLeader(ctx, "control", holder, t0.Add(at), ttl)
					if err != nil {
						t.Fatalf("claim: %v", err)
					}
					model = fleet.Claim(model, holder, t0.Add(at), ttl)
					if got.Holder != model.Holder || got.Term != model.Term || !got.Until.Equal(model.Until) {
						t.Fatalf("step %d: %s claimed at +%s: the store says %+v, fleet.Claim %+v", i, holder, at, got, model)
					}
				}
			})
		})

		Describe("the relay log", func() {
			records := func(rs ...string) [][]byte {
				out := make([][]byte, len(rs))
				for i, r := range rs {
					out[i] = []byte(r)
				}
				return out
			}
			read := func(n int) []string {
				GinkgoHelper()
				es, err := h.Log.ReadAlerts(ctx, "", n)
				Expect(err).NotTo(HaveOccurred())
				out := make([]string, len(es))
				for i, e := range es {
					out[i] = string(e.Data)
				}
				return out
			}

			It("reads the records in the order appended, and removes what its leader acknowledges", func() {
				Expect(read(10)).To(BeEmpty())
				Expect(h.Log.AppendAlerts(ctx, records("a", "b", "c"))).To(Succeed())
				Expect(h.Log.AppendAlerts(ctx, records("d"))).To(Succeed())
				Expect(read(10)).To(Equal([]string{"a", "b", "c", "d"}))
				es, err := h.Log.ReadAlerts(ctx, "", 2)
				Expect(err).NotTo(HaveOccurred())
				Expect(es).To(HaveLen(2))
				l := claim("w1", 0)
				Expect(h.Log.AckAlerts(ctx, "control", "w1", l.Term, es[1].ID)).To(Succeed())
				Expect(read(10)).To(Equal([]string{"c", "d"}), "a and b acknowledged")
				Expect(h.Log.AppendAlerts(ctx, records("e"))).To(Succeed())
				Expect(read(10)).To(Equal([]string{"c", "d", "e"}))
			})

			It("reads after a record: what was appended since, in order", func() {
				Expect(h.Log.AppendAlerts(ctx, records("a", "b", "c"))).To(Succeed())
				es, err := h.Log.ReadAlerts(ctx, "", 2)
				Expect(err).NotTo(HaveOccurred())
				Expect(es).To(HaveLen(2))
				rest, err := h.Log.ReadAlerts(ctx, es[1].ID, 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(rest).To(HaveLen(1))
				Expect(string(rest[0].Data)).To(Equal("c"))
				Expect(h.Log.AppendAlerts(ctx, records("d", "e"))).To(Succeed())
				rest, err = h.Log.ReadAlerts(ctx, rest[0].ID, 1)
				Expect(err).NotTo(HaveOccurred())
				Expect(rest).To(HaveLen(1))
				Expect(string(rest[0].Data)).To(Equal("d"), "at most n")
				claim("w1", 0)
				Expect(h.Log.AckAlerts(ctx, "control", "w1", 1, es[0].ID)).To(Succeed())
				rest, err = h.Log.ReadAlerts(ctx, es[0].ID, 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(rest).To(HaveLen(4), "after a record acknowledged: the rest")
			})

			It("refuses the acknowledgement of a process that does not lead under the term, removing nothing", func() {
				Expect(h.Log.AppendAlerts(ctx, records("a", "b"))).To(Succeed())
				es, err := h.Log.ReadAlerts(ctx, "", 10)
				Expect(err).NotTo(HaveOccurred())
				claim("w1", 0)
				err = h.Log.AckAlerts(ctx, "control", "w2", 1, es[1].ID)
				Expect(errors.Is(err, fleet.ErrNotLeader)).To(BeTrue(), "w2 never led: %v", err)
				claim("w2", 11*time.Second) // w1's lease ran out: w2 leads under term 2
				err = h.Log.AckAlerts(ctx, "control", "w1", 1, es[1].ID)
				Expect(errors.Is(err, fleet.ErrNotLeader)).To(BeTrue(), "w1's term is over: %v", err)
				Expect(read(10)).To(Equal([]string{"a", "b"}), "nothing removed")
				Expect(h.Log.AckAlerts(ctx, "control", "w2", 2, es[0].ID)).To(Succeed())
				Expect(read(10)).To(Equal([]string{"b"}))
			})

			It("keeps every record eight processes append at once", func() {
				var wg sync.WaitGroup
				for i := range 8 {
					wg.Add(1)
					go func() {
						defer GinkgoRecover()
						defer wg.Done()
						for j := range 20 {
							Expect(h.Log.AppendAlerts(ctx, records(fmt.Sprintf("w%d-%02d", i, j)))).To(Succeed())
						}
					}()
				}
				wg.Wait()
				got := read(1000)
				Expect(got).To(HaveLen(160))
				last := map[byte]string{}
				for _, r := range got {
					Expect(r > last[r[1]]).To(BeTrue(), "one process's records in its order: %s after %s", r, last[r[1]])
					last[r[1]] = r
				}
			})
		})
	})
}
