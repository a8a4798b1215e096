package retry

// CalendarLen returns the number of runs of booked slots the policy keeps
// for dep's budget, for the specs that bound its memory.
func (p *Policy) CalendarLen(dep string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.calendars[dep]; c != nil {
		return len(c.runs)
	}
	return 0
}
