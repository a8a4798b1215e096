package cli

// The example reports docs/examples/reports, which the README and
// docs/running.md show: made by the command they document, from the
// repository's root (it exits 1: one of the two runs fails, as meant, so
// the reports' summary is what says it ran). A spec
// (docs_commands_test.go) keeps them what the command produces.
//go:generate sh -c "cd ../../../.. && rm -f docs/examples/reports/* && { go run ./cmd/faultline run dlq-basics docs/examples/payment-challenge-retry-401.yaml --report json,junit,md,html --report-dir docs/examples/reports --no-shrink > /dev/null || test -s docs/examples/reports/summary.md; }"
