package drill

import "github.com/redis/go-redis/v9"

// StrikeAsk exports strikeAsk to the specs.
var StrikeAsk = strikeAsk

// DeleteClaimed runs a drill's cleanup of what it wrote, for a drill whose
// claim of ns wrote val (claimed: its answer came; unsure: it was lost).
func DeleteClaimed(rdb *redis.Client, ns, val string, claimed, unsure bool) {
	d := &drill{rdb: rdb, ns: ns, claimVal: val, claimed: claimed, claimUnsure: unsure}
	d.deleteClaimed()
}
