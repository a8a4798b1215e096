// Package metrics is the project's one set of Prometheus metric names and
// labels: every `/metrics` faultline serves — a drill's `--metrics-listen`
// today, the DLQ web UI later — is a *Set of this package, so a dashboard
// built on one works on the other.
//
// # The label set
//
// Every series carries the same two constant labels, [Labels]:
//
//	namespace  the store namespace the metrics are about (`--namespace`)
//	scenario   the scenario being drilled; "" outside a drill (the UI).
//	           Prometheus treats an empty label as absent, so
//	           {scenario=""} selects the series of a UI.
//
// No metric has a label named "job" or "instance": Prometheus adds those
// to every scraped series itself.
//
// # The metrics
//
// This table is where the names are defined; a spec checks that a Set
// registers exactly these names.
//
//	name                                   type       labels                   meaning
//	faultline_job_moves_total              counter    to, reason               disposition events: a job moved to state `to` for `reason`
//	faultline_jobs                         gauge      state                    jobs in each state at the last snapshot
//	faultline_dlq_depth                    gauge      severity                 dead letters in the DLQ, by the severity of their last failure
//	faultline_dlq_oldest_age_seconds       gauge      -                        age of the oldest failed DLQ entry; 0 when there is none
//	faultline_pages_total                  counter    receiver                 pages (firing, high severity) sent to a receiver
//	faultline_notifications_total          counter    receiver, result         notifications tried on a receiver; result accepted or refused
//	faultline_breaker_state                gauge      breaker, worker, state   1 for the breaker's current state, 0 for its others
//	faultline_retry_budget_booked          gauge      dependency               retries booked in the current slot of the fleet's shared retry budget
//	faultline_fleet_leader                 gauge      worker                   1 for the process leading the standalone workers' fleet; no series while none does
//	faultline_fleet_leader_term            gauge      -                        the fleet leadership's term (grows each time the lease passes on)
//	faultline_fleet_relay_backlog          gauge      -                        failures and breaker transitions relayed to the leader, not read yet
//	faultline_fault_active                 gauge      fault, target, model     1 while the fault is active, 0 once it is undone
//	faultline_fault_hits_total             counter    fault                    calls, connections or processes a fault acted on
//	faultline_dlq_requeues_total           counter    -                        DLQ entries requeued (by an operator or the auto-retry)
//	faultline_dlq_deletes_total            counter    -                        DLQ entries deleted (or purged)
//	faultline_errors_total                 counter    op                       failed operations (a store call, a request), by operation
//	faultline_request_duration_seconds     histogram  op                       how long an operation took, by operation
//	faultline_label_values_bucketed_total  counter    label                    label values replaced by "other" (unknown or over the cap)
//
// A breaker the fleet shares (scope: fleet) has a series of its own in
// faultline_breaker_state, worker "fleet": the state the fleet holds in
// the store, beside each worker process's.
//
// # Bounded labels
//
// No label value comes from a job: a job ID never becomes a label, so a
// Set's series are bounded whatever the traffic. Two kinds of labels:
//
//   - Closed labels take the project's own names and nothing else: `to`
//     and `state` of faultline_jobs are disposition states ("queued",
//     "in-flight", "scheduled", "fallback", "dead-lettered", "succeeded",
//     "held"; reference/disposition); `reason` a disposition reason
//     ("leased", "retry", "lease-expired", …); `severity` a
//     classify severity ("none", "low", "medium", "high"); `state` of
//     faultline_breaker_state a breaker state ("closed", "open",
//     "half-open"; reference/degrade); `result` "accepted" or "refused".
//     An underscore is read as a hyphen ("in_flight" is "in-flight").
//   - Open labels (receiver, breaker, worker, fault, target, model, op,
//     dependency)
//     take the names a scenario or a deployment gives: each takes at most
//     [MaxLabelValues] distinct values of at most [MaxValueLen] bytes.
//
// Any other value — an unknown name, an empty one, one past the cap — is
// recorded as "other" and counted in
// faultline_label_values_bucketed_total{label}, so a mistake shows on the
// dashboard instead of growing it without bound.
//
// # Use
//
// Every hook is safe for concurrent use, cheap (a map look-up and an
// atomic add), and a no-op on a nil *Set, so a driver run without
// `--metrics-listen` keeps a nil Set and calls its hooks anyway. A Set has
// its own registry; nothing is registered on Prometheus's default one.
// [Serve] serves a handler on loopback (or elsewhere when allowed) until
// its context is done.
package metrics
