package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/slack-go/slack"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/failure"
)

var _ alert.Sink = (*Slack)(nil)

// SlackConfig configures a Slack sink. Its URL is a credential: the config
// prints it only redacted, and Validate never quotes it.
type SlackConfig struct {
	// URL is the incoming webhook's URL,
	// https://hooks.slack.com/services/T…/B…/…. Required.
	URL string
	// Client sends the requests. Optional: nil means a new client. The sink
	// uses a copy with Timeout set and its transport wrapped, so the client
	// given is never modified.
	Client *http.Client
	// Timeout bounds one delivery, connection to last body byte. Zero means
	// Client's own timeout if it has one, else DefaultTimeout.
	Timeout time.Duration
	// Channel overrides the webhook's channel, when the webhook allows it.
	Channel string
	// Username overrides the poster's name, when the webhook allows it.
	Username string
	// IconEmoji overrides the poster's icon, e.g. ":rotating_light:".
	IconEmoji string
}

// WithDefaults returns the config with its zero fields set to the defaults.
func (c SlackConfig) WithDefaults() SlackConfig {
	c.Timeout = defaultTimeout(c.Timeout, c.Client)
	return c
}

// Validate returns a *ConfigError naming the first bad field, or nil.
func (c SlackConfig) Validate() error {
	if err := validateURL(c.URL); err != nil {
		return err
	}
	return validateTimeout(c.Timeout)
}

// String describes the config with its URL redacted.
func (c SlackConfig) String() string {
	return fmt.Sprintf("SlackConfig{URL: %s, Timeout: %s, Channel: %q, Username: %q, IconEmoji: %q}",
		newRedactor(c.URL).url, c.Timeout, c.Channel, c.Username, c.IconEmoji)
}

// Format prints String for every verb, so that no verb (%#v, %d, ...) can
// print the URL through the fields.
func (c SlackConfig) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// Slack delivers notifications to a Slack incoming webhook as Block Kit
// blocks with a plain-text fallback, through slack-go. It is safe for
// concurrent use.
type Slack struct {
	url    string
	redact redactor
	// client has a timeout and a captureTransport.
	client    *http.Client
	channel   string
	username  string
	iconEmoji string
}

// NewSlack returns a Slack sink for cfg, with its defaults applied.
func NewSlack(cfg SlackConfig) (*Slack, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new slack sink: %w", err)
	}
	return &Slack{
		url:    cfg.URL,
		redact: newRedactor(cfg.URL),
		client: newClient(cfg.Client, cfg.Timeout, func(base http.RoundTripper) http.RoundTripper {
			return &captureTransport{base: base}
		}),
		channel:   cfg.Channel,
		username:  cfg.Username,
		iconEmoji: cfg.IconEmoji,
	}, nil
}

// Send posts n to the webhook. It returns nil when Slack answered 2xx; a
// *failure.HTTPError (wrapped) with the status, headers and body excerpt
// when it answered anything else; the transport's error, URL redacted,
// when there was no answer.
func (s *Slack) Send(ctx context.Context, n alert.Notification) error {
	msg := s.Message(n)
	c := &capture{}
	// PostWebhookCustomHTTPContext with our client, never slack.PostWebhook
	// or PostWebhookContext: those use http.DefaultClient, which has no
	// timeout, so a webhook that never answers would hang the delivery.
	err := slack.PostWebhookCustomHTTPContext(withCapture(ctx, c), s.url, s.client, msg)
	if err == nil {
		return nil
	}
	return s.sendError(err, c)
}

// sendError turns slack-go's error into the alert.Sink contract's, from the
// answer the capture recorded: slack-go keeps only the status line of an
// error answer, and a 429 with an HTTP-date Retry-After comes back as a bare
// *strconv.NumError.
func (s *Slack) sendError(err error, c *capture) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		// No answer (or no usable one): a timeout, a refused connection, too
		// many redirects. net/http quoted the URL in it.
		return fmt.Errorf("slack sink: %w", s.redact.err(err))
	}
	code, header, body, ok := c.answer()
	if !ok {
		return fmt.Errorf("slack sink: post to %s: %w", s.redact.url, s.redact.err(err))
	}
	if code >= 200 && code < 300 {
		// Accepted; slack-go takes only 200 as a success.
		return nil
	}
	return fmt.Errorf("slack sink: post to %s: %w", s.redact.url, &failure.HTTPError{
		Code:   code,
		Header: header,
		Body:   s.redact.text(excerpt(body)),
	})
}

// String returns "slack sink " and the webhook URL, redacted.
func (s Slack) String() string { return "slack sink " + s.redact.url }

// Format prints String for every verb, so that no verb can print the URL.
func (s Slack) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, s.String()) }

// LogValue logs the sink as String, without the URL.
func (s Slack) LogValue() slog.Value { return slog.StringValue(s.String()) }
