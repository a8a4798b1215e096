package classify

// RuleFileKeys exposes every key a rule file may use, for the spec that
// checks docs/rules-format.md documents them all.
var RuleFileKeys = ruleFileKeys
