package seed_test

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout/seed"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// lanes are the Redis servers the specs run against: a miniredis per
// spec, and the process's redis-server (a flushed database).
var lanes = []struct {
	name    string
	connect func() *redis.Client
}{
	{"on miniredis", func() *redis.Client {
		GinkgoHelper()
		c := redisstore.NewClient(redistest.Mini(GinkgoRandomSeed()).Addr())
		DeferCleanup(c.Close)
		return c
	}},
	{"on redis-server", func() *redis.Client {
		GinkgoHelper()
		c := redisstore.NewClient(redistest.Real())
		DeferCleanup(c.Close)
		return c
	}},
}

// python is the interpreter with Debian's python3-redis.
const python = "/usr/bin/python3"

// writeFixture runs testdata/fixture.py against c's server and database.
func writeFixture(c *redis.Client, prefix string) {
	GinkgoHelper()
	o := c.Options()
	host, port, ok := strings.Cut(o.Addr, ":")
	Expect(ok).To(BeTrue(), o.Addr)
	Expect(host).To(Equal("127.0.0.1"), "loopback only")
	cmd := exec.Command(python, "testdata/fixture.py", host, port, strconv.Itoa(o.DB), prefix)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s", out)
	Expect(string(out)).To(ContainSubstring("dead_letter 6"))
}

// listAll pages through the whole DLQ.
func listAll(ctx context.Context, c redis.Cmdable, prefix string, f seed.Filter, limit int) []seed.Entry {
	GinkgoHelper()
	var out []seed.Entry
	cur := ""
	for range 100_000 {
		p, err := seed.List(ctx, c, prefix, f, cur, limit)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(p.Entries)).To(BeNumerically("<=", limit))
		out = append(out, p.Entries...)
		if p.Next == "" {
			return out
		}
		cur = p.Next
	}
	Fail("the listing never ended")
	return nil
}

// counter is a hook recording every command sent.
type counter struct {
	mu   sync.Mutex
	cmds [][]any
}

func (h *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd)
		return next(ctx, cmd)
	}
}

func (h *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.add(c)
		}
		return next(ctx, cmds)
	}
}

func (h *counter) add(c redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cmds = append(h.cmds, c.Args())
}

// lranges returns the number of elements each LRANGE asked for (-1 for a
// range reaching an end of the list unbounded, like 0 -1).
func (h *counter) lranges() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int64
	for _, a := range h.cmds {
		if len(a) == 4 && strings.EqualFold(a[0].(string), "lrange") {
			start, stop := a[2].(int64), a[3].(int64)
			if (start >= 0) != (stop >= 0) {
				out = append(out, -1)
				continue
			}
			out = append(out, stop-start+1)
		}
	}
	return out
}
