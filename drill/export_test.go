package drill

// StrikeAsk exports strikeAsk to the specs.
var StrikeAsk = strikeAsk
