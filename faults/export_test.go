package faults

// ScheduleValid exposes the cheap validity check, so that tests can hold it
// to Validate.
func ScheduleValid(s Schedule) bool { return s.valid() }

// FlappingValid exposes Flapping's cheap validity check.
func FlappingValid(m Flapping) bool { _, ok := m.periodic(0, 0); return ok }
