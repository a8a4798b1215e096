package memstore

// OrderLen is the length of the time index, gone dents included, so that a
// spec can check it stays bounded.
func (s *Store) OrderLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.order)
}
