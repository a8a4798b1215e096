package adapter_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/alicebob/miniredis/v2"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/adapter"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// Inject two jobs into a seed-shaped system's queue, read them back, and
// read its DLQ.
func Example() {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redisstore.NewClient(m.Addr())
	defer rdb.Close()
	ctx := context.Background()
	env := adapter.Env{Redis: rdb, Expand: func(s string) string { return strings.ReplaceAll(s, "{namespace}", "drill1") }}

	in, err := adapter.NewInjector(layout.Inject{Preset: layout.PresetSeed, Prefix: "{namespace}:"}, env)
	if err != nil {
		panic(err)
	}
	defer in.Close()
	for i, id := range []string{"charge-1", "charge-2"} {
		if err := in.Inject(ctx, layout.Job{ID: id, Task: "charge", Payload: `{"amount": 100}`, N: i + 1}); err != nil {
			panic(err)
		}
	}
	queued, err := in.(adapter.QueueReader).Queued(ctx)
	fmt.Println("queued:", queued, err)

	// The system dead-letters charge-1 the seed's way.
	rdb.RPush(ctx, "drill1:dlq:high", `{"job": {"id": "charge-1"}, "error": "401", "type": "critical", "severity": "high", "retries": 0}`)
	r, err := adapter.NewReader(layout.DLQ{Preset: layout.PresetSeed, Prefix: "{namespace}:"}, env)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	entries, err := r.Read(ctx)
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		fmt.Println(e.Source, e.JobID, e.Severity, e.Class)
	}
	fmt.Println("keys:", adapter.Keys(layout.Inject{Preset: layout.PresetSeed, Prefix: "{namespace}:"},
		layout.DLQ{Preset: layout.PresetSeed, Prefix: "{namespace}:"}, env))
	// Output:
	// queued: [charge-1 charge-2] <nil>
	// drill1:dlq:high[0] charge-1 high critical
	// keys: [drill1:default drill1:dead_letter drill1:dlq:low drill1:dlq:medium drill1:dlq:high]
}
