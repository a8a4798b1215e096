package cli

import (
	"fmt"
	"net"
	"strconv"
	"strings"

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
	c.Flags().StringVar(p, "redis-url", defaultRedisURL, usage+" (a redis:// URL, or host:port; alias --redis-addr)")
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
	c.AddHook(unavailableHook{addr: t.addr})
	return c
}
