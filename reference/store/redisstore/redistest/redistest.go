// Package redistest gives the Redis store's tests their two Redis lanes:
//
//   - Mini: a miniredis per spec, seeded, closed when the spec ends. It never
//     reads the wall clock on faultline's behalf: the store passes every time
//     as a script argument and sets no TTL.
//   - Real: one real redis-server per test process, started on first use on
//     a free port in a temporary directory (no persistence), stopped by
//     StopShared (call it from TestMain). Each parallel Ginkgo process uses its
//     own database, flushed before each spec.
//
// When redis-server is not on PATH the real lane is skipped with a message,
// unless FAULTLINE_REQUIRE_REDIS=1, in which case it fails: CI sets it, so CI
// cannot pass with the lane silently skipped.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads best dot-imported.

	"github.com/faultline/faultline/reference/store/redisstore"
)

// RequireEnv is the environment variable that turns a missing redis-server
// from a skip into a failure.
const RequireEnv = "FAULTLINE_REQUIRE_REDIS"

// startTimeout bounds how long redis-server may take to say it is ready.
const startTimeout = 15 * time.Second

// Mini starts a miniredis for the running spec, seeded with seed (the
// randomness of SRANDMEMBER and the like), and closes it when the spec ends.
func Mini(seed int64) *miniredis.Miniredis {
	GinkgoHelper()
	m := miniredis.RunT(GinkgoT())
	m.Seed(int(seed))
	return m
}

// Server is a redis-server child process.
type Server struct {
	// Addr is "127.0.0.1:PORT".
	Addr string
	cmd  *exec.Cmd
	dir  string
	done chan error
}

// Required reports whether FAULTLINE_REQUIRE_REDIS=1.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// ErrNoServer says redis-server is not on PATH.
var ErrNoServer = errors.New("redis-server is not on PATH")

// StartServer starts redis-server on a free port of 127.0.0.1 with its
// working directory in a new temporary directory, without persistence, and
// waits until it accepts connections. It returns ErrNoServer when the binary
// is missing.
func StartServer() (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoServer
	}
	var last error
	for range 3 { // a free port can be taken between the probe and the start
		s, err := start(bin)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

// start starts one redis-server with extra arguments after faultline's own.
func start(bin string, extra ...string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "faultline-redis-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no", "--loglevel", "notice", "--logfile", "")
	cmd.Args = append(cmd.Args, extra...)
	setParentDeath(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, dir: dir, done: make(chan error, 1)}
	ready := make(chan struct{})
	var log strings.Builder
	var logMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			if log.Len() < 8192 {
				log.WriteString(line + "\n")
			}
			logMu.Unlock()
			if strings.Contains(line, "Ready to accept connections") {
				close(ready)
				break
			}
		}
		_, _ = io.Copy(io.Discard, out) // keep the pipe drained
		s.done <- cmd.Wait()
	}()
	select {
	case <-ready:
		return s, nil
	case err := <-s.done:
		os.RemoveAll(dir)
		logMu.Lock()
		defer logMu.Unlock()
		return nil, fmt.Errorf("redis-server exited before it was ready (%v):\n%s", err, log.String())
	case <-time.After(startTimeout):
		_ = cmd.Process.Kill()
		<-s.done
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redis-server was not ready after %v", startTimeout)
	}
}

// Stop kills the server and removes its directory.
func (s *Server) Stop() error {
	_ = s.cmd.Process.Kill()
	<-s.done
	return os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var (
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
	// skipNote prints the skip once per process, where go test shows it
	// without -v.
	skipNote sync.Once
)

// Shared returns the test process's redis-server, starting it on first use.
// It returns ErrNoServer when the binary is missing; call StopShared at the
// end of the process (TestMain).
func Shared() (*Server, error) {
	sharedOnce.Do(func() { shared, sharedErr = StartServer() })
	return shared, sharedErr
}

// StopShared stops the process's redis-server if one was started.
func StopShared() {
	if shared != nil {
		_ = shared.Stop()
	}
}

// Real returns the URL of this Ginkgo process's database on the process's
// redis-server ("redis://127.0.0.1:PORT/N", N from GinkgoParallelProcess),
// flushed. Without redis-server it skips the spec with a message, or fails
// it when FAULTLINE_REQUIRE_REDIS=1.
func Real() string {
	GinkgoHelper()
	s, err := Shared()
	switch {
	case errors.Is(err, ErrNoServer) && !Required():
		msg := "redis-server is not on PATH: the real-Redis lane is skipped (install redis-server, or set " +
			RequireEnv + "=1 to make this a failure)"
		skipNote.Do(func() { fmt.Fprintln(os.Stderr, "redistest: "+msg) })
		Skip(msg)
	case errors.Is(err, ErrNoServer):
		Fail(RequireEnv + "=1 but redis-server is not on PATH: install it (apt-get install -y redis-server); " +
			"the real-Redis lane must run, not be skipped")
	case err != nil:
		Fail("start redis-server: " + err.Error())
	}
	url := fmt.Sprintf("redis://%s/%d", s.Addr, GinkgoParallelProcess()%16)
	c := redisstore.NewClient(url)
	defer c.Close()
	if err := c.FlushDB(context.Background()).Err(); err != nil {
		Fail("flush the real-Redis lane's database: " + err.Error())
	}
	return url
}
