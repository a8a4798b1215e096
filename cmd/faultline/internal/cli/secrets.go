package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/redact"
)

// Main runs the command tree with args and returns the process's exit
// code. An error is printed on stderr as one line per cause, every secret
// masked (a redis:// URL's password, a token in a scenario's text): main
// calls it, and so do the specs, which therefore see what a user sees.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := New(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "faultline:", masked(err.Error()))
	}
	return ExitCode(err)
}

// masked is s with every secret masked by the default redactor: the one
// pass every text the CLI prints goes through (reports mask themselves,
// reports.Redact).
func masked(s string) string { return redact.Default().String(s) }

// printErr prints an error on w, masked.
func printErr(w io.Writer, err error) { fmt.Fprintln(w, masked(err.Error())) }

// UnavailableError says a service faultline needs could not be reached:
// which one, at which address (never with its password), doing what. It
// maps to ExitUnavailable.
type UnavailableError struct {
	// Service is what faultline tried to reach: "Redis".
	Service string
	// Addr is its address as host:port, with no credentials.
	Addr string
	// Op is what faultline was doing: a Redis command, "connect".
	Op string
	// Err is the network error.
	Err error
}

// Error says, in one line, what could not be reached and why.
func (e *UnavailableError) Error() string {
	// A cause that already says it all (the same failure wrapped twice,
	// or a Redis that answered and refused the URL) is not repeated.
	var inner *UnavailableError
	if errors.As(e.Err, &inner) {
		return inner.Error()
	}
	var refused *RedisRefusedError
	if errors.As(e.Err, &refused) {
		return refused.Error()
	}
	cause := oneLine(masked(e.Err.Error()))
	if errors.Is(e.Err, io.EOF) || errors.Is(e.Err, io.ErrUnexpectedEOF) {
		cause = "the connection was closed (" + cause + ")"
	}
	return fmt.Sprintf("%s at %s could not be reached (%s): %s", e.Service, e.Addr, e.Op, cause)
}

// Unwrap returns the network error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// unreachable reports whether err means a service could not be reached: an
// *UnavailableError, or a network error anywhere in its chain (a refused
// or reset connection, a failed dial or DNS lookup, a network timeout).
func unreachable(err error) bool {
	var (
		ue  *UnavailableError
		op  *net.OpError
		dns *net.DNSError
	)
	return errors.As(err, &ue) || errors.As(err, &op) || errors.As(err, &dns) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// connectionLost reports whether a Redis client's error means the server
// went away: a network error, or a connection closed under the client
// (EOF), or a pool that cannot give a connection.
func connectionLost(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	var ne net.Error
	return unreachable(err) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, os.ErrDeadlineExceeded)
}

// unavailableHook turns a Redis client's network errors into
// *UnavailableError naming the command and the address, so that a Redis
// killed mid-run is exit 4 with one clear line, whatever the caller was
// doing.
// A Redis that answers and refuses the URL's password or database is a
// *RedisRefusedError instead: a configuration error.
type unavailableHook struct {
	addr string
	db   int
}

var _ redis.Hook = unavailableHook{}

func (h unavailableHook) wrap(op string, err error) error {
	var (
		ue      *UnavailableError
		refused *RedisRefusedError
	)
	if err == nil || errors.As(err, &ue) || errors.As(err, &refused) {
		return err
	}
	if redisRefusedUs(err) {
		return &RedisRefusedError{Addr: h.addr, DB: h.db, Err: err}
	}
	if !connectionLost(err) {
		return err
	}
	return &UnavailableError{Service: "Redis", Addr: h.addr, Op: op, Err: err}
}

// DialHook wraps a failed dial.
func (h unavailableHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, h.wrap("connect", err)
		}
		return c, nil
	}
}

// ProcessHook wraps a command's network error, in the command too (a
// command's caller reads cmd.Err()).
func (h unavailableHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if w := h.wrap(cmd.Name(), err); w != err {
			cmd.SetErr(w)
			return w
		}
		return err
	}
}

// ProcessPipelineHook wraps a pipeline's network errors, command by command.
func (h unavailableHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if w := h.wrap(c.Name(), c.Err()); w != c.Err() {
				c.SetErr(w)
			}
		}
		return h.wrap("pipeline", err)
	}
}

// logger is the CLI's log: on stderr, through the redactor, warnings and
// above.
var logger = slog.New(redact.NewHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}), nil))

// redisLogger takes go-redis's internal log lines ("redis: connection pool:
// failed to dial after 5 attempts: ..."), which it would otherwise print on
// stderr with a file name and a time: they go to the CLI's log, masked, at
// debug level, below what it shows. What a user needs to know reaches them
// as the command's error.
type redisLogger struct{}

// Printf logs one go-redis line at debug level.
func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	logger.DebugContext(ctx, fmt.Sprintf(format, v...), slog.String("source", "go-redis"))
}

var quietRedis sync.Once

// quietRedisLogs installs redisLogger as go-redis's logger, once.
func quietRedisLogs() { quietRedis.Do(func() { redis.SetLogger(redisLogger{}) }) }

// oneLine joins a multi-line text into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
