package receiver

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reports"
)

// Outcome is what became of one delivery.
type Outcome string

// The outcomes.
const (
	// Pending is a delivery still being answered (held by a fault).
	Pending Outcome = "pending"
	// Accepted is a delivery answered 2xx: the notification was taken.
	Accepted Outcome = "accepted"
	// Refused is a delivery a fault answered with an error status (5xx,
	// 429, 401, ...).
	Refused Outcome = "refused"
	// Reset is a delivery whose connection a fault dropped without an
	// answer (a receiver that is down).
	Reset Outcome = "reset"
	// Hung is a delivery that never got an answer: a fault held it until
	// the client gave up or the Receiver closed.
	Hung Outcome = "hung"
	// TooLarge is a payload over MaxBody, answered 413.
	TooLarge Outcome = "too-large"
	// Invalid is a payload that is not the Receiver's Kind of message,
	// answered 400.
	Invalid Outcome = "invalid"
)

// Notification is one delivery as the Receiver saw it: when it came, what
// it was answered, and what could be decoded from it. Fields that the
// payload did not carry stay zero.
type Notification struct {
	// Seq numbers the Receiver's deliveries from 1, in arrival order.
	Seq int `json:"seq"`
	// AtMs is the scenario offset of the arrival, in milliseconds.
	AtMs int64 `json:"atMs"`
	// Receiver is the Receiver's name.
	Receiver string `json:"receiver"`
	// Kind is "slack" or "webhook".
	Kind string `json:"kind"`
	// Status is the HTTP status answered; 0 when there was no answer
	// (Reset, Hung, Pending).
	Status int `json:"status"`
	// Accepted says the notification was taken (Outcome Accepted).
	Accepted bool `json:"accepted"`
	// Outcome is what became of the delivery.
	Outcome Outcome `json:"outcome"`
	// Fault names the fault that decided the answer, "" for none.
	Fault string `json:"fault,omitempty"`
	// Attempt counts this Receiver's arrivals of the same notification ID,
	// from 1 (refused ones included); 0 when the payload carried no ID.
	Attempt int `json:"attempt,omitempty"`
	// Bytes is the payload's size; 0 when it was over MaxBody.
	Bytes int `json:"bytes"`

	// Title names what the notification is about (dependency, task, alert
	// name or group), as the sink titled it.
	Title string `json:"title,omitempty"`
	// Severity is the highest severity of its alerts, as classify names
	// it: "high", "medium", "low" (a webhook's PagerDuty severities
	// critical, warning and info map back to these).
	Severity string `json:"severity,omitempty"`
	// Text is the plain text: Slack's fallback text, or the webhook
	// events' summaries one per line.
	Text string `json:"text,omitempty"`
	// Firing says the notification fires (some alert fires); false for a
	// resolved one.
	Firing bool `json:"firing"`
	// GroupKey and NotificationID identify the alerter's group and
	// notification.
	GroupKey       string `json:"groupKey,omitempty"`
	NotificationID uint64 `json:"notificationId,omitempty"`
	// StillFiring counts the group's other firing alerts.
	StillFiring int `json:"stillFiring,omitempty"`
	// Fingerprints are the alerts' fingerprints (dedup keys), in order.
	Fingerprints []string `json:"fingerprints,omitempty"`
	// Jobs are the IDs of the jobs the alerts show, in order, each once.
	Jobs []string `json:"jobs,omitempty"`
	// Alerts are the alerts decoded one by one.
	Alerts []Alert `json:"alerts,omitempty"`
	// DecodeError says why the payload could not be decoded (the delivery
	// is then Invalid unless a fault answered first).
	DecodeError string `json:"decodeError,omitempty"`
	// Raw is the payload as received, when it is JSON and within MaxBody.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Alert is one alert of a notification, as decoded from the payload.
type Alert struct {
	// Fingerprint is the alert's fingerprint (Slack's "Dedup key", the
	// webhook's dedup_key).
	Fingerprint string `json:"fingerprint"`
	// Name is the alert's name, e.g. "job-failed".
	Name string `json:"name,omitempty"`
	// Severity is "high", "medium" or "low".
	Severity string `json:"severity,omitempty"`
	// Firing says the alert fires; false for a resolved one.
	Firing bool `json:"firing"`
	// Summary is the alert's summary (Slack cuts it to 1000 bytes).
	Summary string `json:"summary,omitempty"`
	// Count is how many times the condition was seen.
	Count int `json:"count,omitempty"`
	// Jobs are the IDs of the jobs shown with the alert (Slack shows at
	// most sink.SlackMaxJobs).
	Jobs []string `json:"jobs,omitempty"`
}

// clone returns a copy sharing nothing mutable with n.
func (n Notification) clone() Notification {
	n.Fingerprints = slices.Clone(n.Fingerprints)
	n.Jobs = slices.Clone(n.Jobs)
	n.Raw = slices.Clone(n.Raw)
	alerts := slices.Clone(n.Alerts)
	for i := range alerts {
		alerts[i].Jobs = slices.Clone(alerts[i].Jobs)
	}
	n.Alerts = alerts
	return n
}

// Deliveries returns the notification's alerts as the report's deliveries,
// the same records the simulator makes of a notification a sink accepted;
// nil when it was not accepted.
func (n Notification) Deliveries() []reports.Delivery {
	if !n.Accepted {
		return nil
	}
	out := make([]reports.Delivery, 0, len(n.Alerts))
	for _, a := range n.Alerts {
		status := "resolved"
		if a.Firing {
			status = "firing"
		}
		out = append(out, reports.Delivery{AtMs: n.AtMs, Receiver: n.Receiver, Fingerprint: a.Fingerprint,
			Name: a.Name, Severity: a.Severity, Status: status, Count: a.Count, Summary: a.Summary, Attempt: n.Attempt})
	}
	return out
}

// errNoMessage is a Slack payload with neither text, blocks nor
// attachments: Slack answers it "no_text".
var errNoMessage = errors.New("no_text: a message needs text, blocks or attachments")

// decode fills n's decoded fields from a payload of kind k.
func decode(k Kind, body []byte, n *Notification) error {
	if k == Slack {
		return decodeSlack(body, n)
	}
	return decodeWebhook(body, n)
}

// decodeSlack reads a slack-go WebhookMessage as sink.Slack writes it.
func decodeSlack(body []byte, n *Notification) error {
	var msg slack.WebhookMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		return fmt.Errorf("decode slack message: %w", err)
	}
	hasBlocks := msg.Blocks != nil && len(msg.Blocks.BlockSet) > 0
	if msg.Text == "" && !hasBlocks && len(msg.Attachments) == 0 {
		return fmt.Errorf("decode slack message: %w", errNoMessage)
	}
	n.Text = unescape(msg.Text)
	headed := false
	if hasBlocks {
		var cur *Alert
		for _, b := range msg.Blocks.BlockSet {
			switch b := b.(type) {
			case *slack.HeaderBlock:
				if b.Text != nil {
					headed = parseHeader(b.Text.Text, n) || headed
				}
			case *slack.SectionBlock:
				if a, ok := parseSection(b); ok {
					n.Alerts = append(n.Alerts, a)
					cur = &n.Alerts[len(n.Alerts)-1]
				}
			case *slack.ContextBlock:
				parseContext(b, cur, n)
			}
		}
	}
	if !headed {
		parseFallback(n.Text, n)
	} else if strings.HasSuffix(n.Title, "…") {
		// The header cuts a long title at 150 bytes; the fallback text
		// keeps it whole.
		var full Notification
		parseFallback(n.Text, &full)
		if strings.HasPrefix(full.Title, strings.TrimSuffix(n.Title, "…")) {
			n.Title = full.Title
		}
	}
	if n.Title == "" {
		for _, a := range msg.Attachments {
			if a.Title != "" {
				n.Title = unescape(a.Title)
				break
			}
		}
	}
	if n.Text == "" && len(msg.Attachments) > 0 {
		n.Text = unescape(msg.Attachments[0].Text)
	}
	collect(n)
	return nil
}

// parseHeader reads a header such as ":rotating_light: FIRING:2 · high ·
// payment-gateway"; false when it is not one.
func parseHeader(text string, n *Notification) bool {
	if strings.HasPrefix(text, ":") {
		if i := strings.Index(text[1:], ": "); i >= 0 {
			text = text[i+3:]
		}
	}
	parts := strings.SplitN(text, " · ", 3)
	status, _, _ := strings.Cut(parts[0], ":")
	if status != "FIRING" && status != "RESOLVED" {
		return false
	}
	n.Firing = status == "FIRING"
	if len(parts) > 1 {
		n.Severity = parts[1]
	}
	if len(parts) > 2 {
		n.Title = parts[2]
	}
	return true
}

// fallbackRE matches the fallback text, e.g. "[FIRING:2] high —
// payment-gateway: 2 alerts (charge critical, auth transient)".
var fallbackRE = regexp.MustCompile(`^\[(FIRING|RESOLVED):\d+\] (\S+) — (.*): \d+ alerts?(?: \(.*\))?$`)

// parseFallback reads the status, severity and title from the fallback
// text, when no header gave them.
func parseFallback(text string, n *Notification) {
	m := fallbackRE.FindStringSubmatch(text)
	if m == nil {
		return
	}
	n.Firing = m[1] == "FIRING"
	n.Severity = m[2]
	n.Title = m[3]
}

// parseSection reads an alert's section: "*:red_circle: FIRING* `name`",
// the summary, and the fields ("*Dedup key*\n`fp`", ...); false when the
// section is not an alert's.
func parseSection(b *slack.SectionBlock) (Alert, bool) {
	if b.Text == nil {
		return Alert{}, false
	}
	lines := strings.Split(b.Text.Text, "\n")
	var a Alert
	switch {
	case strings.Contains(lines[0], " FIRING*"):
		a.Firing = true
	case strings.Contains(lines[0], " RESOLVED*"):
	default:
		return Alert{}, false
	}
	if _, name, ok := strings.Cut(lines[0], "* "); ok {
		a.Name = uncode(name)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "Labels: ") && a.Summary == "" {
			a.Summary = unescape(l)
		}
	}
	for _, f := range b.Fields {
		if f == nil {
			continue
		}
		name, value, _ := strings.Cut(f.Text, "\n")
		if value == "-" {
			value = ""
		}
		switch strings.Trim(name, "*") {
		case "Severity":
			a.Severity = unescape(value)
		case "Dedup key":
			a.Fingerprint = uncode(value)
		case "Count":
			a.Count, _ = strconv.Atoi(value)
		}
	}
	return a, true
}

// Context lines sink.Slack writes: a job, and the group's line.
var (
	jobRE   = regexp.MustCompile("^Job `([^`]*)` · ")
	groupRE = regexp.MustCompile(`^Group (.*) · notification (\d+) · (\d+) still firing$`)
)

// parseContext reads a context block: the jobs of alert cur, or the
// group's line.
func parseContext(b *slack.ContextBlock, cur *Alert, n *Notification) {
	for _, e := range b.ContextElements.Elements {
		t, ok := e.(*slack.TextBlockObject)
		if !ok {
			continue
		}
		if m := jobRE.FindStringSubmatch(t.Text); m != nil {
			if cur != nil {
				cur.Jobs = append(cur.Jobs, unescape(m[1]))
			}
			continue
		}
		if m := groupRE.FindStringSubmatch(t.Text); m != nil {
			n.GroupKey = uncode(m[1])
			n.NotificationID, _ = strconv.ParseUint(m[2], 10, 64)
			n.StillFiring, _ = strconv.Atoi(m[3])
		}
	}
}

// decodeWebhook reads a sink.WebhookBody.
func decodeWebhook(body []byte, n *Notification) error {
	var wb sink.WebhookBody
	if err := json.Unmarshal(body, &wb); err != nil {
		return fmt.Errorf("decode webhook body: %w", err)
	}
	if wb.Status == "" && len(wb.Events) == 0 {
		return errors.New("decode webhook body: neither status nor events")
	}
	n.GroupKey, n.NotificationID, n.StillFiring = wb.GroupKey, wb.NotificationID, wb.StillFiring
	n.Firing = wb.Status == "firing"
	var summaries []string
	rank := -1
	for _, e := range wb.Events {
		a := Alert{
			Fingerprint: e.DedupKey,
			Name:        e.Payload.CustomDetails.AlertName,
			Severity:    severityOf(e.Payload.Severity),
			Firing:      e.EventAction == "trigger",
			Summary:     e.Payload.Summary,
			Count:       e.Payload.CustomDetails.Count,
		}
		for _, j := range e.Payload.CustomDetails.Jobs {
			a.Jobs = append(a.Jobs, j.ID)
		}
		if wb.Status == "" && a.Firing {
			n.Firing = true
		}
		if r := slices.Index(severityRank, a.Severity); r > rank {
			rank, n.Severity = r, a.Severity
		}
		summaries = append(summaries, a.Summary)
		n.Alerts = append(n.Alerts, a)
	}
	n.Text = strings.Join(summaries, "\n")
	n.Title = webhookTitle(&wb)
	collect(n)
	return nil
}

// severityRank orders the severities, lowest first.
var severityRank = []string{"low", "medium", "high"}

// severityOf maps a PagerDuty severity back to the alert's: critical is
// high, info low, anything else (warning, error) medium.
func severityOf(pd string) string {
	switch pd {
	case "critical":
		return "high"
	case "info":
		return "low"
	}
	return "medium"
}

// webhookTitle titles a body as sink.Slack titles a notification: the
// dependency, task or alert name every event shares, else the group key,
// else the receiver.
func webhookTitle(wb *sink.WebhookBody) string {
	fields := []func(e *sink.WebhookEvent) string{
		func(e *sink.WebhookEvent) string { return e.Payload.Component },
		func(e *sink.WebhookEvent) string { return e.Payload.Group },
		func(e *sink.WebhookEvent) string { return e.Payload.CustomDetails.AlertName },
	}
	for _, f := range fields {
		if len(wb.Events) == 0 {
			break
		}
		v := f(&wb.Events[0])
		same := v != ""
		for i := range wb.Events[1:] {
			same = same && f(&wb.Events[i+1]) == v
		}
		if same {
			return v
		}
	}
	if wb.GroupKey != "" {
		return wb.GroupKey
	}
	return wb.Receiver
}

// collect fills the notification's fingerprints and jobs from its alerts.
func collect(n *Notification) {
	for _, a := range n.Alerts {
		if a.Fingerprint != "" {
			n.Fingerprints = append(n.Fingerprints, a.Fingerprint)
		}
		for _, j := range a.Jobs {
			if !slices.Contains(n.Jobs, j) {
				n.Jobs = append(n.Jobs, j)
			}
		}
	}
}

// unescaper undoes sink.Slack's mrkdwn escaping.
var unescaper = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")

// unescape returns s with Slack's three entities decoded.
func unescape(s string) string { return unescaper.Replace(s) }

// uncode returns the text of inline code "`x`", unescaped.
func uncode(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && strings.HasPrefix(s, "`") && strings.HasSuffix(s, "`") {
		s = s[1 : len(s)-1]
	}
	return unescape(s)
}
