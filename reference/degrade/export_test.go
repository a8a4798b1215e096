package degrade

// OutstandingProbes returns the number of probe slots taken, for the
// invariant checks of the specs.
func (b *Breaker) OutstandingProbes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.probes)
}
