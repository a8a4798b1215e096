// Package simmatchers holds Gomega matchers for the result of a simulator
// run (a *reports.Result from sim.Run), for a team's own Ginkgo suite.
//
// A matcher's failure reads as a sentence naming the scenario and its seed,
// followed by the facts that decide it: the failed expectations with what
// was expected and what happened, the violated invariant with the job's
// trail, the deliveries, the DLQ entries or the breaker's transitions. So a
// failing spec says what went wrong without a second run.
//
// Example: a team plugs its own classifier into the payment challenge and
// checks the auth failure pages and is dead-lettered, not retried:
//
//	It("dead-letters the auth failure and pages once", func() {
//		res, err := sim.Run(ctx, paymentChallenge(), sim.WithClassifier(ourClassifier))
//		Expect(err).NotTo(HaveOccurred())
//		Expect(res).To(simmatchers.Pass())
//		Expect(res).To(simmatchers.LoseNoJob())
//		Expect(res).To(simmatchers.HaveDeadLettered("pay-auth", classify.High))
//		Expect(res).To(simmatchers.HavePages(1, ""))
//		Expect(res).NotTo(simmatchers.HaveViolated(oracle.InvNoRetryOfFinal))
//	})
//
// When the classifier calls the auth failure transient, the first
// assertion fails with:
//
//	Expected scenario "payment-challenge" (seed 1) to pass, but its verdict is failed:
//	  invariant no-retry-of-permanent-or-critical violated at +3m0.069s by job pay-auth: job pay-auth: a critical failure (fault revoked-key) was scheduled for a retry: the classifier said transient by rule "auth-status"
//	      +3m0s  none → queued (enqueued), attempts 0
//	      +3m0s  queued → in-flight (leased), attempts 0
//	      +3m0.069s  attempt failed: injected critical (fault revoked-key); classifier said transient by rule "auth-status" → retry
//
// A matcher given a nil result fails with an error that points at the error
// sim.Run returned.
//
// # Files
//
//   - doc.go: this map, and an example.
//   - matchers.go: the matchers (Pass, LoseNoJob, HaveDeadLettered,
//     HaveSucceeded, HavePages, HaveDrainedDLQ, HaveViolated,
//     HaveBreakerTransitionsAtMost) and the facts their failures print.
package simmatchers
