package cli

// SetAfterRelease sets the hook called after each run is let go of, for
// the memory benchmark; it returns what undoes it.
func SetAfterRelease(f func()) (undo func()) {
	afterRelease = f
	return func() { afterRelease = nil }
}
