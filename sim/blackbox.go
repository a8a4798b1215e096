package sim

import "github.com/faultline/faultline/oracle"

// The invariants only a black-box drill judges: see oracle's (the judge
// of a black-box history is oracle.JudgeBlackBox).
const (
	InvNotBoth         = oracle.InvNotBoth         // see oracle.InvNotBoth
	InvDLQNeverShrinks = oracle.InvDLQNeverShrinks // see oracle.InvDLQNeverShrinks
	InvDLQSeverity     = oracle.InvDLQSeverity     // see oracle.InvDLQSeverity
)
