package clock_test

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/reference/clock"
)

// A virtual clock runs due callbacks in (time, sequence) order when its
// driver advances it; nothing happens in between.
func ExampleVirtual() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := clock.NewVirtual(start)
	v.AfterFunc(2*time.Second, func() { fmt.Println("retry due at", v.Now().Sub(start)) })
	v.AfterFunc(time.Second, func() { fmt.Println("probe at", v.Now().Sub(start)) })
	fmt.Println("ran", v.Advance(5*time.Second), "callbacks; now", v.Now().Sub(start))
	// Output:
	// probe at 1s
	// retry due at 2s
	// ran 2 callbacks; now 5s
}
