//go:build linux

package cli_test

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// killingProxy forwards TCP connections to a Redis; after the client has
// sent killAt chunks in all, it kills that Redis (SIGKILL, the connections
// it had die with it), starts a fresh one and forwards new connections
// there: a Redis killed and restarted in the middle of a run.
type killingProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	srv    *redistest.Server
	conns  []net.Conn
	chunks int
	killAt int
	killed bool
}

func newKillingProxy(srv *redistest.Server, killAt int) *killingProxy {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p := &killingProxy{ln: ln, srv: srv, killAt: killAt}
	go p.serve()
	DeferCleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
		_ = p.srv.Stop()
	})
	return p
}

func (p *killingProxy) addr() string { return p.ln.Addr().String() }

func (p *killingProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *killingProxy) handle(c net.Conn) {
	p.mu.Lock()
	s, err := net.Dial("tcp", p.srv.Addr)
	if err != nil {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.conns = append(p.conns, c, s)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(c, s); c.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.chunks++
			if p.chunks == p.killAt && !p.killed {
				p.killed = true
				_ = p.srv.Stop() // SIGKILL
				for _, x := range p.conns {
					x.Close()
				}
				p.conns = nil
				if fresh, err := redistest.StartServer(); err == nil {
					p.srv = fresh
				}
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			if _, err := s.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			s.Close()
			return
		}
	}
}

func (p *killingProxy) sent() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.chunks
}

// captureFD2 runs f with the process's file descriptor 2 going to a file,
// and returns what was written there: what a library writing straight to
// os.Stderr would have put on the terminal.
func captureFD2(f func()) string {
	GinkgoHelper()
	tmp, err := os.CreateTemp(GinkgoT().TempDir(), "fd2")
	Expect(err).NotTo(HaveOccurred())
	defer tmp.Close()
	saved, err := syscall.Dup(2)
	Expect(err).NotTo(HaveOccurred())
	Expect(syscall.Dup3(int(tmp.Fd()), 2, 0)).To(Succeed())
	func() {
		defer func() { _ = syscall.Dup3(saved, 2, 0); _ = syscall.Close(saved) }()
		f()
	}()
	b, err := os.ReadFile(tmp.Name())
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// expectOneCleanLine checks an error output is one line, with no stack
// trace or panic.
func expectOneCleanLine(errOut string) {
	GinkgoHelper()
	Expect(strings.Count(strings.TrimRight(errOut, "\n"), "\n")).To(BeZero(), "one line:\n%s", errOut)
	Expect(errOut).NotTo(ContainSubstring("goroutine"))
	Expect(errOut).NotTo(ContainSubstring("panic"))
	Expect(errOut).NotTo(ContainSubstring(".go:"))
}

var _ = Describe("a service faultline needs cannot be reached", func() {
	It("is exit 4 with one line naming the operation and the address when Redis is killed and restarted mid-run", func() {
		By("counting what a whole demo sends")
		whole := newKillingProxy(startRedis(), 0)
		_, errOut, code := run("demo", "--backend", "redis", "--redis-url", "redis://"+whole.addr()+"/0")
		Expect(code).To(Equal(cli.ExitOK), errOut)
		total := whole.sent()
		Expect(total).To(BeNumerically(">", 100))

		By("killing Redis halfway through")
		proxy := newKillingProxy(startRedis(), total/2)
		var out, stderr string
		raw := captureFD2(func() {
			out, stderr, code = run("demo", "--backend", "redis", "--redis-url", "redis://:pw-h6@"+proxy.addr()+"/0")
		})
		Expect(proxy.sent()).To(BeNumerically(">=", total/2), "Redis was killed mid-run")
		Expect(code).To(Equal(cli.ExitUnavailable), out+stderr)
		Expect(stderr).To(HavePrefix("faultline: "))
		Expect(stderr).To(ContainSubstring("Redis at " + proxy.addr() + " could not be reached ("))
		expectOneCleanLine(stderr)
		Expect(stderr + out).NotTo(ContainSubstring("pw-h6"))
		Expect(raw).To(BeEmpty(), "nothing written straight to the terminal (go-redis's own log lines)")
	})

	It("is exit 4 when Redis is not there at all, and go-redis's own log lines never reach the terminal", func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := l.Addr().String()
		l.Close() // a port nothing listens on
		var stderr string
		var code int
		raw := captureFD2(func() { _, stderr, code = run("demo", "--backend", "redis", "--redis-addr", addr) })
		Expect(code).To(Equal(cli.ExitUnavailable))
		Expect(stderr).To(ContainSubstring("Redis at " + addr + " could not be reached (connect)"))
		expectOneCleanLine(stderr)
		Expect(raw).NotTo(ContainSubstring("redis:"), "go-redis logged on the terminal")
		Expect(raw).To(BeEmpty())
	})

	It("maps errors to exit 4 with errors.As, whatever wraps them", func() {
		dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		Expect(cli.ExitCode(dial)).To(Equal(cli.ExitUnavailable))
		wrapped := &cli.UnavailableError{Service: "Redis", Addr: "127.0.0.1:6379", Op: "evalsha", Err: io.EOF}
		Expect(cli.ExitCode(errors.Join(errors.New("enqueue pay-1"), wrapped))).To(Equal(cli.ExitUnavailable))
		Expect(wrapped.Error()).To(Equal("Redis at 127.0.0.1:6379 could not be reached (evalsha): the connection was closed (EOF)"))
		Expect(cli.ExitCode(io.EOF)).To(Equal(cli.ExitInternal), "an EOF alone is not a network failure")
	})
})
