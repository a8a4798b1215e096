package retry_test

import (
	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"

	"github.com/faultline/faultline/reference/retry"
)

// actionReason is the pair a decision matcher checks.
type actionReason struct {
	Action retry.Action
	Reason retry.Reason
}

// BeDecision succeeds for a retry.Decision with the given action and reason,
// and reads as a sentence when it fails.
func BeDecision(action retry.Action, reason retry.Reason) types.GomegaMatcher {
	want := actionReason{action, reason}
	return gcustom.MakeMatcher(func(d retry.Decision) (bool, error) {
		return d.Action == action && d.Reason == reason, nil
	}).WithTemplate("Expected the decision {{.Actual.Action}}/{{.Actual.Reason}} (attempt {{.Actual.Attempts}}, class {{.Actual.Class}}) {{.To}} be {{.Data.Action}}/{{.Data.Reason}}", want)
}
