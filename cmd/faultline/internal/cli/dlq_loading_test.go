package cli_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/cmd/faultline/internal/cli"
	"github.com/faultline/faultline/reference/store/redisstore/redistest"
)

// loadingRedis is a Redis on 127.0.0.1 still loading its dataset after a
// restart: until done is set it answers every command LOADING (but the
// handshake's HELLO, refused as an older Redis does, and CLIENT, allowed
// while loading); after, each connection is handed to the Redis at backend,
// command and all.
type loadingRedis struct {
	ln      net.Listener
	backend string
	done    atomic.Bool
	// refused counts the commands answered LOADING.
	refused atomic.Int64
	wg      sync.WaitGroup
}

// startLoadingRedis starts one, stopped when the spec ends.
func startLoadingRedis(backend string) *loadingRedis {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	l := &loadingRedis{ln: ln, backend: backend}
	var conns sync.Map
	l.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			l.wg.Go(func() { l.serve(c) })
		}
	})
	DeferCleanup(func() {
		_ = ln.Close()
		conns.Range(func(k, _ any) bool { _ = k.(net.Conn).Close(); return true })
		l.wg.Wait()
	})
	return l
}

func (l *loadingRedis) addr() string { return l.ln.Addr().String() }

func (l *loadingRedis) serve(c net.Conn) {
	defer func() { _ = c.Close() }()
	br := bufio.NewReader(c)
	for {
		raw, name, err := readCommand(br)
		if err != nil {
			return
		}
		switch {
		case name == "HELLO":
			_, err = io.WriteString(c, "-ERR unknown command 'HELLO'\r\n")
		case name == "CLIENT":
			_, err = io.WriteString(c, "+OK\r\n")
		case !l.done.Load():
			l.refused.Add(1)
			_, err = io.WriteString(c, "-LOADING Redis is loading the dataset in memory\r\n")
		default:
			l.proxy(c, br, raw)
			return
		}
		if err != nil {
			return
		}
	}
}

// proxy hands the connection to the backend: first the command read, then
// whatever either side sends.
func (l *loadingRedis) proxy(c net.Conn, br *bufio.Reader, first []byte) {
	b, err := net.Dial("tcp", l.backend)
	if err != nil {
		return
	}
	defer func() { _ = b.Close() }()
	if _, err := b.Write(first); err != nil {
		return
	}
	go func() { _, _ = io.Copy(c, b); _ = c.Close() }()
	_, _ = io.Copy(b, br)
}

// readCommand reads one RESP command (an array of bulk strings) and returns
// its bytes and its name, upper-cased.
func readCommand(br *bufio.Reader) ([]byte, string, error) {
	var raw []byte
	line := func() (string, error) {
		s, err := br.ReadString('\n')
		raw = append(raw, s...)
		return strings.TrimRight(s, "\r\n"), err
	}
	head, err := line()
	if err != nil {
		return nil, "", err
	}
	if !strings.HasPrefix(head, "*") {
		return nil, "", errors.New("not an array: " + head)
	}
	n, err := strconv.Atoi(head[1:])
	if err != nil {
		return nil, "", err
	}
	var name string
	for i := range n {
		h, err := line()
		if err != nil {
			return nil, "", err
		}
		size, err := strconv.Atoi(strings.TrimPrefix(h, "$"))
		if err != nil {
			return nil, "", err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, "", err
		}
		raw = append(raw, buf...)
		if i == 0 {
			name = strings.ToUpper(string(buf[:size]))
		}
	}
	return raw, name, nil
}

var _ = Describe("faultline dlq and a Redis still loading its dataset", func() {
	It("retries with backoff for a bounded time, then exits 4 saying Redis is still loading", func() {
		l := startLoadingRedis("127.0.0.1:1")
		DeferCleanup(cli.SetLoadingWait(600 * time.Millisecond))
		start := time.Now()
		out, errOut, code := run("dlq", "stats", "--redis-url", "redis://"+l.addr()+"/0", "--namespace", dlqNamespace)
		took := time.Since(start)
		Expect(code).To(Equal(cli.ExitUnavailable), errOut)
		Expect(out).To(BeEmpty())
		Expect(errOut).To(ContainSubstring(fmt.Sprintf("Redis at %s is loading its dataset (LOADING): waiting up to 600ms", l.addr())))
		Expect(errOut).To(ContainSubstring(fmt.Sprintf("Redis at %s could not be reached (ping): still loading its dataset after 600ms of retries", l.addr())))
		Expect(errOut).NotTo(ContainSubstring("internal"))
		Expect(took).To(And(BeNumerically(">=", 500*time.Millisecond), BeNumerically("<", 5*time.Second)))
		Expect(l.refused.Load()).To(And(BeNumerically(">=", 3), BeNumerically("<=", 20)), "retried, with backoff")
	})

	It("goes on once Redis has loaded", func() {
		url := "redis://" + redistest.Mini(1).Addr() + "/0"
		seedDLQ(url)
		l := startLoadingRedis(strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0"))
		DeferCleanup(cli.SetLoadingWait(20 * time.Second))
		time.AfterFunc(300*time.Millisecond, func() { l.done.Store(true) })
		out, errOut, code := run("dlq", "stats", "--redis-url", "redis://"+l.addr()+"/0", "--namespace", dlqNamespace)
		Expect(code).To(Equal(cli.ExitOK), errOut)
		Expect(out).To(ContainSubstring(`DLQ of namespace "ops"`))
		Expect(out).To(ContainSubstring("entries     6 (corrupt: 1)"))
		Expect(errOut).To(ContainSubstring("is loading its dataset (LOADING): waiting up to 20s"))
		Expect(l.refused.Load()).To(BeNumerically(">=", 1))
	})
})
