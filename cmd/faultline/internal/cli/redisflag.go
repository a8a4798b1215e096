package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faultline/faultline/reference/store/redisstore"
)

// defaultRedisURL is the Redis a command uses when --redis-url is not given.
const defaultRedisURL = "redis://localhost:6379"

// addRedisFlag adds --redis-url to c, the one name every command gives the
// Redis it uses: a redis:// (or rediss://) URL, or a bare host:port.
// --redis-addr, its name before, is accepted as an alias.
func addRedisFlag(c *cobra.Command, p *string, usage string) {
	addRedisFlagDefault(c, p, defaultRedisURL, usage)
}

// addRequiredRedisFlag adds --redis-url with no default, for a command
// that needs it given whenever it uses Redis (run --backend redis): its
// help shows no default that would never be used.
func addRequiredRedisFlag(c *cobra.Command, p *string, usage string) {
	addRedisFlagDefault(c, p, "", usage)
}

func addRedisFlagDefault(c *cobra.Command, p *string, def, usage string) {
	c.Flags().StringVar(p, "redis-url", def, usage+" (a redis:// URL, or host:port; alias --redis-addr)")
	c.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "redis-addr" {
			name = "redis-url"
		}
		return pflag.NormalizedName(name)
	})
}

// redisTarget is a parsed --redis-url.
type redisTarget struct {
	// url is what redisstore.NewClient takes.
	url string
	// addr is host:port, safe to print: never the password.
	addr string
}

// printable is the target as a command line may show it: its address and,
// when not 0, its database — never a password.
func (rt redisTarget) printable() string {
	if o, err := redis.ParseURL(rt.url); err == nil && o.DB != 0 {
		return fmt.Sprintf("redis://%s/%d", rt.addr, o.DB)
	}
	return rt.addr
}

// redisURLForm says what --redis-url takes (in words the redactor leaves
// alone).
const redisURLForm = "expected redis://HOST:PORT/DB, or a bare HOST:PORT; a password goes in the redis:// URL, before the host"

// redisPasswordForm says where a password goes (in words the redactor
// leaves alone).
const redisPasswordForm = "a password goes in the redis:// URL, before the host, as :PASSWORD@ (or USER:PASSWORD@)"

// hideUserinfo is a --redis-url value as it may be printed: whatever
// stands before its last '@' (a user and password, typed right or wrong)
// masked.
func hideUserinfo(s string) string {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return masked(s)
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 && i < at {
		start = i + 3
	}
	return masked(s[:start] + "…@" + s[at+1:])
}

// parseRedisURL reads a --redis-url value. A bad value is invalid input,
// and the error never repeats the value (it may hold a password).
func parseRedisURL(s string) (redisTarget, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return redisTarget{}, fmt.Errorf("--redis-url: empty; expected a redis:// URL or host:port")
	}
	if strings.Contains(s, "://") {
		o, err := redis.ParseURL(s)
		if err != nil {
			// Not go-redis's error: it may quote the URL, password and all.
			return redisTarget{}, fmt.Errorf("--redis-url %s: not a Redis URL: %s", hideUserinfo(s), redisURLForm)
		}
		if err := checkPort(o.Addr); err != nil {
			return redisTarget{}, err
		}
		return redisTarget{url: s, addr: o.Addr}, nil
	}
	if strings.Contains(s, "@") {
		return redisTarget{}, fmt.Errorf("--redis-url %s: a bare host:port carries no password; %s", hideUserinfo(s), redisURLForm)
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		return redisTarget{}, fmt.Errorf("--redis-url: expected a redis:// URL or host:port, got %q", masked(s))
	}
	if err := checkPort(s); err != nil {
		return redisTarget{}, err
	}
	return redisTarget{url: s, addr: s}, nil
}

// checkPort refuses an address whose port is not a number in 1..65535: a
// typo in the flag is invalid input, not a Redis that could not be reached.
func checkPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--redis-url: expected host:port, got %q", masked(addr))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("--redis-url: the port must be a number in 1..65535, got %q", masked(port))
	}
	return nil
}

// client returns a client of t whose network errors are
// *UnavailableError naming the address.
func (t redisTarget) client() *redis.Client {
	c := redisstore.NewClient(t.url)
	db := 0
	if o, err := redis.ParseURL(t.url); err == nil {
		db = o.DB
	}
	c.AddHook(unavailableHook{addr: t.addr, db: db})
	return c
}

// RedisRefusedError says Redis was reached and refused what --redis-url
// gave it: the password (WRONGPASS), no password where one is needed
// (NOAUTH), or a database number past the server's last (ERR DB index is
// out of range). It is a configuration error, not an unreachable Redis:
// it maps to ExitInvalid.
type RedisRefusedError struct {
	// Addr is the server's host:port, with no credentials.
	Addr string
	// DB is the database number of the URL.
	DB int
	// Err is Redis's reply.
	Err error
}

// Error says what is wrong with the URL and how to fix it.
func (e *RedisRefusedError) Error() string {
	reply := oneLine(masked(e.Err.Error()))
	switch {
	case strings.Contains(reply, "NOAUTH"):
		return fmt.Sprintf("--redis-url: Redis at %s needs a password, and the URL gives none (%s): %s", e.Addr, reply, redisPasswordForm)
	case strings.Contains(reply, "DB index"):
		return fmt.Sprintf("--redis-url: Redis at %s has no database %d: the database number is out of range (%s); a server has 16 (0..15) unless its `databases` setting says otherwise", e.Addr, e.DB, reply)
	default:
		return fmt.Sprintf("--redis-url: Redis at %s refused the password (%s): check the user and password the URL gives; %s", e.Addr, reply, redisPasswordForm)
	}
}

// Unwrap returns Redis's reply.
func (e *RedisRefusedError) Unwrap() error { return e.Err }

// defaultLoadingWait is how long faultline dlq waits for a Redis that
// answers LOADING (still loading its dataset after a restart), and
// loadingWait the wait in force (a spec shortens it).
const defaultLoadingWait = 30 * time.Second

var loadingWait = defaultLoadingWait

// loadingHook retries a command Redis refused with LOADING — still loading
// its dataset after a restart: it ran nothing, so running it again is safe —
// with backoff (50ms, doubling to 1s) for up to wait, saying once on warn
// that it waits. Past wait, the command's error is an *UnavailableError
// whose cause is a *StillLoadingError (exit 4). A pipeline is retried when
// every command of it was refused so.
type loadingHook struct {
	addr string
	wait time.Duration
	warn io.Writer
	once *sync.Once
}

var _ redis.Hook = loadingHook{}

func newLoadingHook(addr string, wait time.Duration, warn io.Writer) loadingHook {
	return loadingHook{addr: addr, wait: wait, warn: warn, once: &sync.Once{}}
}

// StillLoadingError says Redis still answered LOADING (loading its dataset
// after a restart) when faultline stopped waiting for it.
type StillLoadingError struct {
	// Waited is how long faultline retried.
	Waited time.Duration
	// Err is Redis's last reply.
	Err error
}

// Error says that Redis is still loading, for how long faultline waited,
// and what to do.
func (e *StillLoadingError) Error() string {
	return fmt.Sprintf("still loading its dataset after %s of retries (%s); try again once it has loaded",
		e.Waited.Round(time.Millisecond), oneLine(e.Err.Error()))
}

// Unwrap returns Redis's reply.
func (e *StillLoadingError) Unwrap() error { return e.Err }

// isLoading reports whether err is Redis's LOADING reply.
func isLoading(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "LOADING")
}

// retry runs again while the error is LOADING, with backoff, for up to
// h.wait (or until ctx is done).
func (h loadingHook) retry(ctx context.Context, op string, err error, again func() error) error {
	h.once.Do(func() {
		fmt.Fprintln(h.warn, masked(fmt.Sprintf("Redis at %s is loading its dataset (LOADING): waiting up to %s", h.addr, h.wait)))
	})
	start := time.Now()
	for delay := 50 * time.Millisecond; isLoading(err); delay = min(2*delay, time.Second) {
		left := h.wait - time.Since(start)
		if left <= 0 {
			return &UnavailableError{Service: "Redis", Addr: h.addr, Op: op, Err: &StillLoadingError{Waited: h.wait, Err: err}}
		}
		t := time.NewTimer(min(delay, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return &UnavailableError{Service: "Redis", Addr: h.addr, Op: op, Err: &StillLoadingError{Waited: time.Since(start), Err: err}}
		case <-t.C:
		}
		err = again()
	}
	return err
}

// DialHook leaves dials alone.
func (h loadingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook retries a command refused with LOADING.
func (h loadingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if !isLoading(err) {
			return err
		}
		err = h.retry(ctx, cmd.Name(), err, func() error {
			cmd.SetErr(nil)
			return next(ctx, cmd)
		})
		cmd.SetErr(err)
		return err
	}
}

// ProcessPipelineHook retries a pipeline every command of which was refused
// with LOADING (none ran).
func (h loadingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	allLoading := func(cmds []redis.Cmder) bool {
		for _, c := range cmds {
			if !isLoading(c.Err()) {
				return false
			}
		}
		return len(cmds) > 0
	}
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if !allLoading(cmds) {
			return err
		}
		op := "pipeline"
		err = h.retry(ctx, op, cmds[0].Err(), func() error {
			for _, c := range cmds {
				c.SetErr(nil)
			}
			err := next(ctx, cmds)
			if allLoading(cmds) {
				return cmds[0].Err()
			}
			return err
		})
		if isLoading(cmds[0].Err()) {
			for _, c := range cmds {
				c.SetErr(err)
			}
		}
		return err
	}
}
