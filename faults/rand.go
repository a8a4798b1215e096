package faults

import "math/rand/v2"

// NameHash is the 64-bit FNV-1a hash of a fault's name. With the scenario
// seed it keys the fault's random stream and its periodic jitter, so that a
// fault's draws depend on its own name only: adding or removing another fault
// changes none of them.
func NameHash(name string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= prime
	}
	return h
}

// Stream returns the random stream of the fault named fault in a scenario
// with the given seed: PCG seeded with (seed, NameHash(fault)). The Injector
// draws a fault's probability and its model's draws from it, in call order.
func Stream(seed uint64, fault string) *rand.Rand {
	return rand.New(rand.NewPCG(seed, NameHash(fault)))
}

// mix64 is SplitMix64's finalizer: a fixed, well-spread 64-bit hash.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// jitterHash is the stateless draw for period k of the periodic pattern
// keyed by (seed, key): the same inputs give the same value in any order.
func jitterHash(seed, key uint64, k int64) uint64 {
	return mix64(seed ^ mix64(key^uint64(k)*0x9e3779b97f4a7c15))
}

// Salts keep a model's own periodic pattern apart from its schedule's, so a
// flapping fault with a periodic schedule does not flap in step with it.
const flappingSalt = 0x666c6170 // "flap"
