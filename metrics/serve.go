package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// ErrNotLoopback is matched by the error Serve and CheckListenAddr return
// for an address off loopback when remote listening was not allowed.
var ErrNotLoopback = errors.New("not a loopback address")

// ShutdownGrace is how long Serve lets scrapes in progress finish once its
// context is done, before it closes their connections.
const ShutdownGrace = 5 * time.Second

// CheckListenAddr refuses addr ("host:port") unless its host is on
// loopback ("127.0.0.1", "::1", "localhost") or allowRemote is true. An
// empty host (":9090") listens on every interface, so it is off loopback.
// Nothing is resolved or dialled.
func CheckListenAddr(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("metrics listen address %q: %w", addr, err)
	}
	if allowRemote || isLoopback(host) {
		return nil
	}
	if host == "" {
		host = "every interface"
	}
	return fmt.Errorf("metrics listen address %q: %s: %w; metrics name the namespace, scenario and faults of a drill, so they stay on this machine unless remote listening is allowed (--allow-remote)", addr, host, ErrNotLoopback)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Server is an HTTP server Serve started.
type Server struct {
	addr string
	done chan struct{}
	err  error
}

// Serve listens on addr (checked by CheckListenAddr; port 0 picks a free
// one) and serves h on every path, until ctx is done: then it stops
// accepting, lets scrapes in progress finish for up to ShutdownGrace, and
// closes. It returns once listening (an error if ctx is already done);
// Server.Addr says where.
func Serve(ctx context.Context, addr string, h http.Handler, allowRemote bool) (*Server, error) {
	if err := CheckListenAddr(addr, allowRemote); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("metrics listen on %s: %w", addr, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	s := &Server{addr: ln.Addr().String(), done: make(chan struct{})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	go func() {
		defer close(s.done)
		var err error
		select {
		case err = <-served:
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
			err = srv.Shutdown(sctx)
			cancel()
			if err != nil {
				err = errors.Join(err, srv.Close())
			}
			if e := <-served; !errors.Is(e, http.ErrServerClosed) {
				err = errors.Join(err, e)
			}
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.err = fmt.Errorf("metrics server on %s: %w", s.addr, err)
		}
	}()
	return s, nil
}

// Addr returns the address the server listens on ("127.0.0.1:39123").
func (s *Server) Addr() string { return s.addr }

// URL returns the address of its metrics, "http://ADDR/metrics".
func (s *Server) URL() string { return "http://" + s.addr + "/metrics" }

// Done is closed once the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// Wait blocks until the server has stopped (its context done, or serving
// failed) and returns why it failed, or nil after a clean shutdown.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}
