// Package age prints how long ago something happened the way a person
// reads it, one way for every output of faultline: the web UI's pages and
// the CLI's tables ("338d", "3h12m", "12m5s", "45s").
package age

import (
	"fmt"
	"time"
)

// Format returns d, an age, for a person: whole days from two days on
// ("338d", rounded to the nearest day), hours and minutes from an hour on
// ("3h12m", rounded to the minute), else minutes and seconds ("12m5s",
// "45s", rounded to the second). A negative age (a clock behind the one
// that stamped the time) is "0s".
func Format(d time.Duration) string {
	const day = 24 * time.Hour
	if d <= 0 {
		return "0s"
	}
	if r := d.Round(time.Second); r < time.Hour {
		if r < time.Minute {
			return fmt.Sprintf("%ds", r/time.Second)
		}
		return fmt.Sprintf("%dm%ds", r/time.Minute, r%time.Minute/time.Second)
	}
	if r := d.Round(time.Minute); r < 2*day {
		return fmt.Sprintf("%dh%dm", r/time.Hour, r%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%dd", d.Round(day)/day)
}
