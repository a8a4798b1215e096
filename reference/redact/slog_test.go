package redact_test

import (
	"bytes"
	"errors"
	"log/slog"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/redact"
)

var _ = Describe("Handler", func() {
	It("masks a log record's message, string and error attributes, groups and sensitive keys", func() {
		var buf bytes.Buffer
		log := slog.New(redact.NewHandler(slog.NewTextHandler(&buf, nil), nil))
		log.With("dsn", "redis://:h6RedisPw@cache:6379").WithGroup("job").Info("charge 4111 1111 1111 1111 failed",
			"error", errors.New("401: Bearer h6BearerTok3n0123456789"),
			"password", 12345,
			slog.Group("http", "url", "https://hooks.slack.com/services/T0/B0/h6SlackHookSecret99"),
			"attempt", 2)
		out := buf.String()
		for _, leak := range []string{"4111 1111", "h6RedisPw", "h6BearerTok3n0123456789", "12345", "h6SlackHookSecret99"} {
			Expect(out).NotTo(ContainSubstring(leak))
		}
		Expect(out).To(ContainSubstring(`msg="charge [CARD ****1111] failed"`))
		Expect(out).To(ContainSubstring("job.attempt=2"))
		Expect(out).To(ContainSubstring("job.password=[REDACTED]"))
		Expect(out).To(ContainSubstring(`dsn=[REDACTED]`))
	})
})
