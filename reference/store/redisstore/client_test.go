package redisstore_test

import (
	"context"
	"net"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/store/redisstore"
)

var _ = Describe("NewClient", func() {
	It("fails a call at once when the dial is refused (no dial retries behind the caller's back)", func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := l.Addr().String()
		Expect(l.Close()).To(Succeed()) // nothing listens there now: a dial is refused
		c := redisstore.NewClient(addr)
		defer c.Close()
		start := time.Now()
		err = c.Ping(context.Background()).Err()
		Expect(err).To(HaveOccurred())
		// go-redis's default is five dials 100ms apart: half a second.
		Expect(time.Since(start)).To(BeNumerically("<", 90*time.Millisecond))
	})
})
