package seed_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/faultline/faultline/layout/seed"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// BenchmarkListPage lists pages of 100 from a 100,000-entry dlq:low on a
// real redis-server, the first page and one deep in the list:
//
//	go test ./layout/seed -run '^$' -bench ListPage -benchmem
func BenchmarkListPage(b *testing.B) {
	s, err := redistest.Shared()
	if err != nil {
		b.Skip("redis-server: ", err)
	}
	ctx := context.Background()
	c := redisstore.NewClient(fmt.Sprintf("redis://%s/15", s.Addr))
	defer c.Close()
	if err := c.FlushDB(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100_000; i += 1000 {
		vals := make([]any, 1000)
		for j := range vals {
			vals[j] = fmt.Sprintf(`{"job": {"task": "t%d"}, "error": "e", "type": "ValueError", "severity": "LOW", "retries": 3}`, i+j)
		}
		if err := c.LPush(ctx, "dlq:low", vals...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct{ name, cursor string }{{"first", ""}, {"deep", "0:50000"}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				p, err := seed.List(ctx, c, "", seed.Filter{Lists: []string{"dlq:low"}}, bc.cursor, 100)
				if err != nil || len(p.Entries) != 100 {
					b.Fatal(err, len(p.Entries))
				}
			}
		})
	}
	b.Run("filtered-scan", func(b *testing.B) {
		for b.Loop() {
			if _, err := seed.List(ctx, c, "", seed.Filter{Text: "no such"}, "", 100); err != nil {
				b.Fatal(err)
			}
		}
	})
}
