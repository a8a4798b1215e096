package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/failure"
)

var _ alert.Sink = (*Webhook)(nil)

// Limits of a webhook body, in characters. PagerDuty cuts a summary at 1024.
const (
	webhookMaxSummary   = 1024
	webhookMaxErrorText = 1024
)

// WebhookConfig configures a generic JSON webhook sink. Its URL, routing key
// and header values may be credentials: the config prints none of them, and
// Validate quotes none of them.
type WebhookConfig struct {
	// URL receives the POST. Required.
	URL string
	// Client sends the requests. Optional: nil means a new client. The sink
	// uses a copy with Timeout set, so the client given is never modified.
	Client *http.Client
	// Timeout bounds one delivery, connection to last body byte. Zero means
	// Client's own timeout if it has one, else DefaultTimeout.
	Timeout time.Duration
	// RoutingKey, when set, is sent as every event's "routing_key" (a
	// PagerDuty integration key). It is a secret.
	RoutingKey string
	// Headers are added to every request, e.g. an Authorization header.
	// They may override Content-Type.
	Headers map[string]string
}

// WithDefaults returns the config with its zero fields set to the defaults.
func (c WebhookConfig) WithDefaults() WebhookConfig {
	c.Timeout = defaultTimeout(c.Timeout, c.Client)
	return c
}

// Validate returns a *ConfigError naming the first bad field, or nil.
func (c WebhookConfig) Validate() error {
	if err := validateURL(c.URL); err != nil {
		return err
	}
	if err := validateTimeout(c.Timeout); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(c.Headers)) {
		if !validHeaderName(name) {
			return &ConfigError{Field: "Headers", Reason: fmt.Sprintf("name %q is not an HTTP token", name)}
		}
		if !validHeaderValue(c.Headers[name]) {
			return &ConfigError{Field: "Headers", Reason: fmt.Sprintf("value of %q holds a control character", name)}
		}
	}
	return nil
}

// String describes the config with its URL redacted and without its routing
// key or header values.
func (c WebhookConfig) String() string {
	return fmt.Sprintf("WebhookConfig{URL: %s, Timeout: %s, RoutingKey: %s, Headers: %q}",
		newRedactor(c.URL).url, c.Timeout, hidden(c.RoutingKey), slices.Sorted(maps.Keys(c.Headers)))
}

// Format prints String for every verb, so that no verb (%#v, %d, ...) can
// print a secret through the fields.
func (c WebhookConfig) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// hidden says whether a secret is set, without showing it.
func hidden(secret string) string {
	if secret == "" {
		return `""`
	}
	return "****"
}

// Webhook delivers notifications as a JSON POST shaped like PagerDuty Events
// v2 (see WebhookBody): any 2xx answer means accepted. It is safe for
// concurrent use.
type Webhook struct {
	url        string
	redact     redactor
	client     *http.Client
	routingKey string
	headers    http.Header
}

// NewWebhook returns a Webhook sink for cfg, with its defaults applied.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new webhook sink: %w", err)
	}
	headers := make(http.Header, len(cfg.Headers))
	for name, value := range cfg.Headers {
		headers.Set(name, value)
	}
	return &Webhook{
		url:        cfg.URL,
		redact:     newRedactor(cfg.URL),
		client:     newClient(cfg.Client, cfg.Timeout, nil),
		routingKey: cfg.RoutingKey,
		headers:    headers,
	}, nil
}

// Send posts n as a WebhookBody. It returns nil on a 2xx answer; a
// *failure.HTTPError (wrapped) with the status, headers and body excerpt on
// any other answer; the transport's error, URL redacted, when there was no
// answer.
func (w *Webhook) Send(ctx context.Context, n alert.Notification) error {
	body, err := json.Marshal(w.body(&n))
	if err != nil {
		return fmt.Errorf("webhook sink: encode notification %d: %w", n.ID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook sink: %w", w.redact.err(err))
	}
	req.Header.Set("Content-Type", "application/json")
	for name, values := range w.headers {
		req.Header[name] = slices.Clone(values)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook sink: %w", w.redact.err(err))
	}
	defer func() { _ = resp.Body.Close() }()
	// A body that fails half-way still has a status worth reporting: the
	// read errors are ignored.
	head, _ := io.ReadAll(io.LimitReader(resp.Body, MaxBodyExcerpt))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	return fmt.Errorf("webhook sink: post to %s: %w", w.redact.url, &failure.HTTPError{
		Code:   resp.StatusCode,
		Header: resp.Header,
		Body:   w.redact.text(excerpt(head)),
	})
}

// String returns "webhook sink " and the URL, redacted.
func (w Webhook) String() string { return "webhook sink " + w.redact.url }

// Format prints String for every verb, so that no verb can print a secret.
func (w Webhook) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, w.String()) }

// LogValue logs the sink as String, without its secrets.
func (w Webhook) LogValue() slog.Value { return slog.StringValue(w.String()) }

// WebhookBody is the JSON document a Webhook posts: one notification, with
// one PagerDuty-style event per alert. Receivers may decode it with this type.
type WebhookBody struct {
	Receiver       string `json:"receiver"`
	GroupKey       string `json:"group_key"`
	NotificationID uint64 `json:"notification_id"`
	// Status is "firing" if any alert fires, else "resolved".
	Status string `json:"status"`
	// StillFiring counts the group's other firing alerts, not in Events.
	StillFiring int            `json:"still_firing"`
	Events      []WebhookEvent `json:"events"`
}

// WebhookEvent is one alert, as a PagerDuty Events v2 event.
type WebhookEvent struct {
	// RoutingKey is the config's RoutingKey, omitted when empty.
	RoutingKey string `json:"routing_key,omitempty"`
	// DedupKey is the alert's fingerprint: a resolve closes the trigger with
	// the same key.
	DedupKey string `json:"dedup_key"`
	// EventAction is "trigger" for a firing alert, "resolve" for a resolved one.
	EventAction string         `json:"event_action"`
	Payload     WebhookPayload `json:"payload"`
}

// WebhookPayload describes an alert in PagerDuty's fields.
type WebhookPayload struct {
	// Summary is the alert's summary, else its name and status.
	Summary string `json:"summary"`
	// Severity is "critical", "warning" or "info" for High, Medium and Low;
	// an alert without a known severity is reported as Medium, the
	// classifier's fallback.
	Severity string `json:"severity"`
	// Source is the alert's source label, else "faultline".
	Source string `json:"source"`
	// Component is the dependency label.
	Component string `json:"component,omitempty"`
	// Group is the task label.
	Group string `json:"group,omitempty"`
	// Class is the class label.
	Class string `json:"class,omitempty"`
	// Timestamp is when the alert was last seen, RFC 3339 in UTC.
	Timestamp     string         `json:"timestamp,omitempty"`
	CustomDetails WebhookDetails `json:"custom_details"`
}

// WebhookDetails are an alert's fields that PagerDuty has no place for.
type WebhookDetails struct {
	AlertName  string            `json:"alertname,omitempty"`
	Count      int               `json:"count"`
	FirstSeen  string            `json:"first_seen,omitempty"`
	ResolvedAt string            `json:"resolved_at,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Jobs       []WebhookJob      `json:"jobs,omitempty"`
}

// WebhookJob is one of the jobs an alert is about.
type WebhookJob struct {
	ID       string `json:"id"`
	Task     string `json:"task,omitempty"`
	Attempts int    `json:"attempts"`
	Class    string `json:"class,omitempty"`
	// Error is the job's last error, cut to 1024 characters.
	Error string `json:"error,omitempty"`
	// Fields summarise the job's payload; a value that has no JSON form is
	// sent as its fmt %v text.
	Fields map[string]json.RawMessage `json:"fields,omitempty"`
	At     string                     `json:"at,omitempty"`
}

// body builds the document Send posts for n. encoding/json writes map keys
// sorted, so the same notification always gives the same bytes.
func (w *Webhook) body(n *alert.Notification) WebhookBody {
	b := WebhookBody{
		Receiver:       n.Receiver,
		GroupKey:       n.GroupKey,
		NotificationID: n.ID,
		Status:         n.Status().String(),
		StillFiring:    n.StillFiring,
		Events:         make([]WebhookEvent, 0, len(n.Alerts)),
	}
	for i := range n.Alerts {
		b.Events = append(b.Events, w.event(&n.Alerts[i]))
	}
	return b
}

// event builds one alert's event.
func (w *Webhook) event(a *alert.Alert) WebhookEvent {
	action, summary := "trigger", a.Summary
	if a.Status == alert.Resolved {
		action = "resolve"
	}
	if summary == "" {
		summary = a.Name + " " + a.Status.String()
	}
	source := a.Labels[alert.LabelSource]
	if source == "" {
		source = "faultline"
	}
	jobs := make([]WebhookJob, 0, len(a.Jobs))
	for _, j := range a.Jobs {
		wj := WebhookJob{
			ID:       j.ID,
			Task:     j.Task,
			Attempts: j.Attempts,
			Error:    truncateRunes(j.Error, webhookMaxErrorText),
			Fields:   jsonFields(j.Fields),
			At:       timestamp(j.At),
		}
		if j.Class != classify.None {
			wj.Class = j.Class.String()
		}
		jobs = append(jobs, wj)
	}
	return WebhookEvent{
		RoutingKey:  w.routingKey,
		DedupKey:    a.Fingerprint,
		EventAction: action,
		Payload: WebhookPayload{
			Summary:   truncateRunes(summary, webhookMaxSummary),
			Severity:  pagerDutySeverity(a.Severity),
			Source:    source,
			Component: a.Labels[alert.LabelDependency],
			Group:     a.Labels[alert.LabelTask],
			Class:     a.Labels[alert.LabelClass],
			Timestamp: timestamp(a.LastSeen),
			CustomDetails: WebhookDetails{
				AlertName:  a.Name,
				Count:      a.Count,
				FirstSeen:  timestamp(a.FirstSeen),
				ResolvedAt: timestamp(a.ResolvedAt),
				Labels:     a.Labels,
				Jobs:       jobs,
			},
		},
	}
}

// pagerDutySeverity maps a severity to PagerDuty's: High pages (critical),
// Medium warns, Low informs. Anything else is treated as Medium, the
// classifier's fallback, so an unclassified alert is neither lost nor a page.
func pagerDutySeverity(s classify.Severity) string {
	switch s {
	case classify.High:
		return "critical"
	case classify.Low:
		return "info"
	default:
		return "warning"
	}
}

// jsonFields encodes a job's fields one by one, so that one value without a
// JSON form (a channel, a NaN) costs its own rendering, not the delivery.
func jsonFields(fields map[string]any) map[string]json.RawMessage {
	if len(fields) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		raw, err := json.Marshal(v)
		if err != nil {
			raw, _ = json.Marshal(fmt.Sprintf("%v", v))
		}
		out[k] = raw
	}
	return out
}
